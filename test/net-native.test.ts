// The native UDP data path (Linux) against its obvious twins: the bytes a client receives are the
// bytes TickResult holds for it; ACKs applied natively have exactly world.acknowledge's effect.
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { World, WorldConfig, mulberry32, type TickResult } from 'sightline';
import { NativePath, nativePathAvailable } from '../lib/net/native-path.js';
import { encodeAck, encodeBye, encodeHello, encodeInput, encodePing, type WelcomeMessage } from '../lib/net/protocol.js';
import { HOST, harness, rawHandshake, rawSocket, runCleanups } from './helpers/net.js';

const linux = nativePathAvailable();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await runCleanups();
});

function ackDatagram(token: Uint8Array, ack: number, ackBits: number): Uint8Array {
  const b = new Uint8Array(15);
  b[0] = 0xa3;
  b.set(token, 1);
  new DataView(b.buffer).setUint16(9, ack, true);
  new DataView(b.buffer).setUint32(11, ackBits >>> 0, true);
  return b;
}

function tokenOf(i: number): Uint8Array {
  return Uint8Array.from({ length: 8 }, (_, k) => (i * 31 + k * 7 + 3) & 255);
}

async function socket(): Promise<dgram.Socket & { got: Buffer[] }> {
  const s = dgram.createSocket('udp4') as dgram.Socket & { got: Buffer[] };
  s.got = [];
  s.on('message', (m) => s.got.push(m));
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => s.close(() => r())));
  return s;
}

const settle = (ms = 30): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await settle(5);
}

// A town: entities moving about, viewers among them.
function town(seed: number, threads: number, viewers: number): { world: World; ids: number[]; move(): void } {
  const config = WorldConfig.build({ eventReserveBytes: 48 });
  const world = new World(config, { capacity: 2000, threads });
  cleanups.push(() => world.close());
  const rand = mulberry32(seed);
  const ids: number[] = [];
  for (let i = 0; i < 600; i++) ids.push(world.spawn({ x: 1900 + rand() * 300, y: 1900 + rand() * 300, z: 0 }));
  for (let i = 0; i < viewers; i++) world.addViewer(ids[i], { acks: true, sendPeriod: 1 + (i % 2) });
  const move = (): void => {
    const { x, y } = world.positions;
    for (const id of ids) {
      const s = world.slotOf(id);
      x[s] += Math.floor(rand() * 2001) - 1000;
      y[s] += Math.floor(rand() * 2001) - 1000;
    }
  };
  return { world, ids, move };
}

function openPath(maxSessions: number): NativePath {
  const path = new NativePath(
    { address: '127.0.0.1', port: 0, type: 'udp4', maxSessions, forwardAcks: false, recvBufferSize: 1 << 20, sendBufferSize: 1 << 20 },
    { onDatagram: () => undefined, onAck: () => undefined, onError: (e) => { throw e; } },
  );
  cleanups.push(() => path.close());
  path.start();
  return path;
}

describe.skipIf(!linux)('native UDP data path', () => {
  it.each([1, 2, 8])('every client receives the bytes TickResult holds for it, with its input ack in bytes 8..11 (%i threads)', async (threads) => {
    const { world, ids, move } = town(7, threads, 24);
    const path = openPath(64);
    const peers = await Promise.all(ids.slice(0, 24).map(() => socket()));
    const inputAck = new Map<number, [number, number]>();
    for (let i = 0; i < 24; i++) {
      expect(path.addSession(ids[i], '127.0.0.1', peers[i].address().port, tokenOf(i))).toBe('added');
      const a: [number, number] = [(i * 977) & 0xffff, (i * 4099) & 0xffff];
      path.setInputAck(ids[i], a[0], a[1]);
      inputAck.set(ids[i], a);
    }
    path.attach(world);
    const expected = new Map<number, Uint8Array[]>();
    for (let t = 0; t < 15; t++) {
      move();
      const r: TickResult = await world.tick();
      const sent = path.lastTick();
      expect(sent.tick).toBe(r.tick);
      expect(sent.sent + sent.unrouted + sent.dropped + sent.failed).toBe(r.count);
      for (let i = 0; i < r.count; i++) {
        const b = r.bytesAt(i).slice();
        const [ack, bits] = inputAck.get(r.viewerAt(i))!;
        new DataView(b.buffer).setUint16(8, ack, true);
        new DataView(b.buffer).setUint16(10, bits, true);
        expected.set(r.viewerAt(i), [...(expected.get(r.viewerAt(i)) ?? []), b]);
      }
    }
    await until(() => peers.every((p, i) => p.got.length === (expected.get(ids[i])?.length ?? 0)));
    for (let i = 0; i < 24; i++) {
      const want = expected.get(ids[i]) ?? [];
      expect(want.length).toBeGreaterThan(5);
      expect(peers[i].got.map((b) => Buffer.from(b).toString('hex'))).toEqual(want.map((b) => Buffer.from(b).toString('hex')));
    }
  });

  it('acks applied natively have the effect of world.acknowledge: the same later packets, the same ack stats', async () => {
    const seed = 0x5eed;
    const rand = mulberry32(seed);
    const a = town(3, 2, 16);
    const b = town(3, 2, 16);
    const path = openPath(32);
    const clients = await Promise.all(a.ids.slice(0, 16).map(() => socket()));
    for (let i = 0; i < 16; i++) path.addSession(a.ids[i], '127.0.0.1', clients[i].address().port, tokenOf(i));
    path.attach(a.world);
    const port = path.info().port;
    let compared = 0;
    for (let t = 0; t < 40; t++) {
      a.move();
      b.move();
      const ra = await a.world.tick();
      const rb = await b.world.tick();
      expect(ra.count).toBe(rb.count);
      for (let i = 0; i < ra.count; i++) {
        // The engine's bytes (the transport stamps only its copies' bytes 8..11).
        expect(Buffer.from(ra.bytesAt(i)).equals(Buffer.from(rb.bytesAt(i))), `seed ${seed}, tick ${t}, packet ${i}`).toBe(true);
        compared++;
      }
      // Each client acknowledges at random: some packets lost, some acks repeated or stale; the
      // same acks go to world B by hand, in the same order, before its next tick.
      const before = path.counters().acks;
      let sent = 0;
      for (let i = 0; i < ra.count; i++) {
        const v = ra.viewerAt(i);
        const k = a.ids.indexOf(v);
        if (k < 0 || k >= 16 || rand() < 0.3) continue;
        const seq = ra.bytesAt(i)[2] | (ra.bytesAt(i)[3] << 8);
        const ack = rand() < 0.8 ? seq : (seq - 1 - Math.floor(rand() * 40) + 65536) % 65536;
        const bits = Math.floor(rand() * 2 ** 32) >>> 0;
        const copies = rand() < 0.1 ? 2 : 1;
        for (let c = 0; c < copies; c++) {
          clients[k].send(ackDatagram(tokenOf(k), ack, bits), port, '127.0.0.1');
          sent++;
          try {
            b.world.acknowledge(v, ack, bits);
          } catch (e) {
            expect((e as { code: string }).code).toBe('ERR_SIGHTLINE_INVALID_ACK');
          }
        }
      }
      await until(() => path.counters().acks + path.counters().acksThrottled - before >= sent);
      expect(path.counters().acks - before, `seed ${seed}, tick ${t}`).toBe(sent);
    }
    expect(compared).toBeGreaterThan(300);
    // World A applies the last ACKs as its next tick starts; B has applied them already.
    const ra = await a.world.tick();
    const rb = await b.world.tick();
    for (let i = 0; i < ra.count; i++) expect(Buffer.from(ra.bytesAt(i)).equals(Buffer.from(rb.bytesAt(i)))).toBe(true);
    for (let i = 0; i < 16; i++) expect(a.world.ackStats(a.ids[i])).toEqual(b.world.ackStats(b.ids[i]));
    const c = path.counters();
    expect(c.acksApplied + c.acksInvalid + c.acksUnused).toBe(c.acks);
    expect(c.acksInvalid).toBeGreaterThan(0);
  });

  it('hostile datagrams are counted and dropped without touching the session whose address they forge', async () => {
    const { world, ids } = town(5, 1, 2);
    const path = openPath(8);
    const victim = await socket();
    path.addSession(ids[0], '127.0.0.1', victim.address().port, tokenOf(0));
    path.attach(world);
    await world.tick();
    const v = victim.address().port;
    const c0 = path.counters();
    path.inject(ackDatagram(tokenOf(9), 0, 0), '127.0.0.1', v); // the victim's address, another token
    path.inject(ackDatagram(tokenOf(0), 0, 0), '127.0.0.1', v + 1); // the right token from elsewhere
    path.inject(ackDatagram(tokenOf(0), 7, 0), '127.0.0.1', v); // ahead of anything sent
    path.inject(new Uint8Array(2000), '127.0.0.1', v); // longer than any client message
    const c = path.counters();
    expect(c.badTokens - c0.badTokens).toBe(1);
    expect(c.strays - c0.strays).toBe(1);
    expect(c.badAcks - c0.badAcks).toBe(1);
    expect(c.longUnknownType - c0.longUnknownType).toBe(1);
    expect(c.acks - c0.acks).toBe(0);
    expect(world.ackStats(ids[0])).toEqual({ acked: 0, lost: 0, assumed: 0, probablyLost: 0, expired: 0, despawnsNotResent: 0 });
  });

  it('close() joins the receive thread; a world it was attached to ticks on without it', async () => {
    const { world, ids } = town(6, 2, 4);
    const path = openPath(8);
    const peer = await socket();
    path.addSession(ids[0], '127.0.0.1', peer.address().port, tokenOf(0));
    path.attach(world);
    await world.tick();
    await until(() => peer.got.length === 1);
    path.close();
    await world.tick();
    await settle(50);
    expect(peer.got.length).toBe(1);
  });

  it('the same hostile datagrams cost the native and the dgram path the same counts, by the same decoder codes', async () => {
    const seed = 77;
    const rand = mulberry32(seed);
    const servers = await Promise.all((['native', 'dgram'] as const).map(async (dataPath) => {
      const h = await harness({ dataPath });
      const raw = await rawSocket();
      const welcome = (await rawHandshake(raw, h.port, 5)) as WelcomeMessage;
      return { h, raw, welcome };
    }));
    // One list of datagrams; each goes to both servers, from the session's address (its token, or
    // another) or from a stranger's.
    const datagrams: { bytes: (token: Uint8Array) => Uint8Array; fromSession: boolean }[] = [];
    const junk = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
    const other = junk(8);
    for (let i = 0; i < 300; i++) {
      // Every random draw is made here, so both servers get the same bytes (but their own token).
      const k = Math.floor(rand() * 12);
      const fromSession = rand() < 0.7;
      const n = Math.floor(rand() * 1500);
      const seq = Math.floor(rand() * 65536);
      const own = rand() < 0.5;
      const tok = (t: Uint8Array): Uint8Array => (own ? t : other);
      const j1 = junk(n);
      const j2 = junk(1100 + n); // longer than any client message
      const j3 = junk(n % 300);
      const j4 = junk(n % 2000);
      const j5 = junk(20 + (n % 1500));
      datagrams.push({
        fromSession,
        bytes: [
          () => j1,
          () => j2,
          (t: Uint8Array) => encodeAck(tok(t), seq, seq),
          (t: Uint8Array) => encodeAck(t, seq, 0).subarray(0, 1 + (n % 14)),
          (t: Uint8Array) => encodePing(tok(t)),
          (t: Uint8Array) => Uint8Array.of(...encodePing(t), 0),
          (t: Uint8Array) => encodeInput({ token: tok(t), kind: n % 2, sequence: seq, payload: j3 }),
          (t: Uint8Array) => {
            const b = encodeInput({ token: t, kind: 0, sequence: seq, payload: j3.subarray(0, 3) });
            b[9] = 2 + (n % 200);
            return b;
          },
          () => encodeHello({ protocolHash: 1 + seq, nonce: seq }),
          () => {
            const b = encodeHello({ protocolHash: 1, nonce: seq });
            b[1 + (n % 4)] ^= 0xff;
            return b;
          },
          () => Uint8Array.of(0xa1 + (n % 15), ...j4),
          () => Uint8Array.of(1, ...j5),
        ][k],
      });
    }
    // A BYE with another token last: dropped on both.
    datagrams.push({ fromSession: true, bytes: () => encodeBye(other) });
    for (const { h, raw, welcome } of servers) {
      const port = (raw.s.address() as { port: number }).port;
      for (const d of datagrams) h.server.handleDatagram(d.bytes(welcome.token), HOST, d.fromSession ? port : port + 1);
    }
    const [a, b] = servers.map((x) => x.h.server);
    const fields = ['datagramsReceived', 'bytesReceived', 'malformed', 'strays', 'badTokens', 'badAcks', 'acks', 'acksThrottled', 'challenges', 'inputs', 'connects', 'disconnects'] as const;
    const pickCounts = (c: Record<string, number>) => Object.fromEntries(fields.map((f) => [f, c[f]]));
    expect(pickCounts(a.counters as never), `seed ${seed}`).toEqual(pickCounts(b.counters as never));
    expect(a.counters.malformed).toBeGreaterThan(50);
    expect(a.counters.badTokens).toBeGreaterThan(10);
    expect({ ...a.malformedCodes }).toEqual({ ...b.malformedCodes });
    expect(a.clientCount).toBe(1);
  });
});
