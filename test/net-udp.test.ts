import { describe, it, expect, afterEach } from 'vitest';
import { World, WorldConfig } from '../lib/index.js';
import { UdpServer } from '../lib/net/udp-server.js';
import { UdpClient } from '../lib/net/udp-client.js';
import {
  ByeReason,
  HELLO_MIN_BYTES,
  MSG_BYE,
  MSG_CHALLENGE,
  MSG_HELLO,
  MSG_PING,
  MSG_REFUSE,
  MSG_WELCOME,
  encodeAck,
  encodeHello,
  type ChallengeMessage,
  type WelcomeMessage,
} from '../lib/net/protocol.js';
import { ConnectionRefusedError } from '../lib/net/transport.js';
import { nativePathAvailable } from '../lib/net/native-path.js';
import { rng } from './helpers/model.js';
import { HOST, caughtUp, client, config, harness, mismatches, rawHandshake, rawSocket, runCleanups, until, cleanups } from './helpers/net.js';

afterEach(runCleanups);

// Every test runs on both data paths where the platform has the native one.
const PATHS: ('native' | 'dgram')[] = nativePathAvailable() ? ['native', 'dgram'] : ['dgram'];

describe.each(PATHS)('UDP transport on loopback (%s data path)', (dataPath) => {
  it('two clients connect, receive every tick, and hold what the server believes they hold', async () => {
    const h = await harness({ dataPath });
    const spawned: number[] = [];
    const a = await client(h, { onSpawn: (id) => spawned.push(id) });
    const b = await client(h);
    expect(a.avatar).not.toBe(b.avatar);
    expect(h.server.clientCount).toBe(2);
    expect(h.server.has(a.avatar) && h.server.has(b.avatar)).toBe(true);
    expect(a.c.welcome).toMatchObject({ avatar: a.avatar, protocolHash: config.protocolHash, regionRaw: config.regionRaw, tickMicros: 50_000 });

    for (let t = 0; t < 40; t++) {
      await h.tick();
      await caughtUp(h, a.c, a.avatar);
      await caughtUp(h, b.c, b.avatar);
      await until('the acks of this tick', () => h.server.counters.acks >= 2 * (t + 1));
    }
    for (const { c, avatar } of [a, b]) {
      expect(c.world.size).toBeGreaterThan(50);
      expect(mismatches(h.world, avatar, c.world)).toEqual([]);
      expect(c.counters.gamePackets).toBe(40);
      expect(c.counters.acksSent).toBe(40);
      expect(h.world.ackStats(avatar)!.lost).toBe(0);
    }
    expect(spawned.length).toBeGreaterThan(50);
    expect(h.server.counters).toMatchObject({ packetsSent: 80, packetsDropped: 0, malformed: 0, refused: 0, connects: 2, acks: 80, acksUnused: 0 });
    expect(h.server.counters.bytesSent).toBeGreaterThan(80 * 16);

    await a.c.close();
    await until('the BYE', () => h.events.length === 1);
    expect(h.events).toEqual([`${a.avatar} bye`]);
    expect(h.server.clientCount).toBe(1);
  });

  it('a client with another protocol hash is refused with both hashes named; full servers and games refuse too', async () => {
    let connects = 0;
    const errors: unknown[] = [];
    const h = await harness({
      dataPath,
      maxClients: 1,
      onError: (e) => errors.push(e),
      onConnect: () => {
        connects++;
        if (connects === 2) throw new ConnectionRefusedError('banned for griefing');
        if (connects === 3) throw new Error('db down: password=hunter2');
        const id = h.world.spawn({ x: 10, y: 10, z: 0 });
        h.world.addViewer(id, { acks: true });
        return id;
      },
    });

    const wrong = new UdpClient();
    cleanups.push(() => wrong.close());
    const hash = (config.protocolHash ^ 0x5a5a5a5a) >>> 0;
    const err = await wrong.connect(HOST, h.port, hash).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_SIGHTLINE_NET_REFUSED_PROTOCOL_HASH' });
    expect((err as Error).message).toContain(config.protocolHash.toString(16));
    expect((err as Error).message).toContain(hash.toString(16));
    expect(wrong.state).toBe('closed');
    expect(connects).toBe(0);

    const first = await client(h);
    expect(first.avatar).toBeGreaterThanOrEqual(0);
    const full = await new UdpClient().connect(HOST, h.port, config.protocolHash).catch((e: unknown) => e);
    expect(full).toMatchObject({ code: 'ERR_SIGHTLINE_NET_REFUSED_SERVER_FULL' });

    await first.c.close();
    await until('the BYE', () => h.server.clientCount === 0);
    const banned = await new UdpClient().connect(HOST, h.port, config.protocolHash).catch((e: unknown) => e);
    expect(banned).toMatchObject({ code: 'ERR_SIGHTLINE_NET_REFUSED_REJECTED' });
    expect((banned as Error).message).toContain('banned for griefing');
    expect(errors).toEqual([]);
    // Any other exception refuses with a generic text: its message is the server's, not the peer's.
    const failed = await new UdpClient().connect(HOST, h.port, config.protocolHash).catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: 'ERR_SIGHTLINE_NET_REFUSED_REJECTED' });
    expect((failed as Error).message).not.toContain('password');
    expect((failed as Error).message).toContain('the server refused the connection');
    expect(errors.map((e) => (e as Error).message)).toEqual(['db down: password=hunter2']);
    expect(h.server.counters.listenerErrors).toBe(1);
    expect(h.server.counters.refused).toBe(4);
    expect(h.server.counters.connects).toBe(1);
  });

  it('garbage, truncated and oversized datagrams are counted and dropped; a good client keeps receiving', async () => {
    const h = await harness({ dataPath });
    const good = await client(h);
    const raw = await rawSocket();
    const r = rng(5);
    const bad: Uint8Array[] = [];
    for (let i = 0; i < 40; i++) {
      const b = new Uint8Array(1 + Math.floor(r() * 120));
      for (let k = 0; k < b.length; k++) b[k] = Math.floor(r() * 256);
      if ((b[0] >= 0xa0 && b[0] <= 0xa5) || b[0] === 2) b[0] = 0x37; // garbage, not a control type nor a game packet
      bad.push(b);
    }
    const hello = encodeHello({ protocolHash: config.protocolHash, nonce: 1 });
    for (let n = 1; n < HELLO_MIN_BYTES; n++) bad.push(hello.slice(0, n)); // truncated at every length
    const badMagic = hello.slice();
    badMagic[2] = 0;
    bad.push(badMagic);
    bad.push(new Uint8Array(1500).fill(0xa0)); // oversized
    bad.push(new Uint8Array(60_000).fill(0xa3)); // oversized
    bad.push(Uint8Array.of(2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)); // a game packet (version 2), wrong direction
    bad.push(Uint8Array.of(0xa3, 1, 2)); // truncated ACK
    bad.push(Uint8Array.of(0xa4, 0)); // a BYE of the revision without tokens
    bad.push(Uint8Array.of(0xa5)); // a PING of the revision without tokens

    const received0 = good.c.counters.gamePackets;
    const before = h.server.counters.datagramsReceived;
    let sent = 0;
    for (let t = 0; t < 20; t++) {
      for (let k = 0; k < 10 && sent < bad.length; k++) await raw.send(bad[sent++], h.port);
      await h.tick();
      await caughtUp(h, good.c, good.avatar);
    }
    while (sent < bad.length) await raw.send(bad[sent++], h.port);
    // An ACK from an address without a session is well-formed: a stray, not malformed.
    await raw.send(encodeAck(new Uint8Array(8), 0, 0), h.port);
    await until('every bad datagram', () => h.server.counters.datagramsReceived - before >= bad.length + 1 + 20);
    expect(h.server.counters.malformed).toBe(bad.length);
    expect(h.server.counters.strays).toBe(1);
    expect(h.server.counters.listenerErrors).toBe(0);
    expect(h.server.counters.connects).toBe(1);
    expect(raw.inbox).toEqual([]); // nothing answered
    // Each drop has its decoder's code.
    const codes = h.server.malformedCodes;
    expect(Object.values(codes).reduce((a, b) => a + b, 0)).toBe(bad.length);
    expect(codes.ERR_SIGHTLINE_NET_TRUNCATED).toBeGreaterThanOrEqual(HELLO_MIN_BYTES - 1);
    expect(codes.ERR_SIGHTLINE_NET_BAD_MAGIC).toBe(2); // the HELLO with a bad magic, and 1,500 bytes of 0xA0
    expect(codes.ERR_SIGHTLINE_NET_WRONG_DIRECTION).toBe(1);
    expect(codes.ERR_SIGHTLINE_NET_UNKNOWN_TYPE).toBeGreaterThan(0);
    expect(good.c.counters.gamePackets - received0).toBe(20);
    expect(mismatches(h.world, good.avatar, good.c.world)).toEqual([]);
  });

  it('a silent client times out; a client that keeps alive does not', async () => {
    const h = await harness({ dataPath, timeoutMs: 300, keepaliveMs: 100 });
    const alive = await client(h, { keepaliveMs: 50 });
    const raw = await rawSocket();
    const welcome = (await rawHandshake(raw, h.port, 77)) as WelcomeMessage;
    expect(welcome).toMatchObject({ type: MSG_WELCOME, nonce: 77 });
    const silent = welcome.avatar;
    // A repeated HELLO with the cookie (the WELCOME was lost) is answered again, without a second session.
    const challenge = raw.inbox.find((m) => m.type === MSG_CHALLENGE) as ChallengeMessage;
    await raw.send(encodeHello({ protocolHash: config.protocolHash, nonce: 77, cookie: challenge.cookie }), h.port);
    await until('the second WELCOME', () => raw.inbox.filter((m) => m.type === MSG_WELCOME).length === 2);
    expect(h.server.counters.connects).toBe(2);

    await until('the timeout', () => h.events.length > 0, 3000);
    expect(h.events).toEqual([`${silent} timeout`]);
    expect(h.server.counters.timeouts).toBe(1);
    expect(h.server.has(silent)).toBe(false);
    expect(h.server.has(alive.avatar)).toBe(true);
    expect(alive.c.state).toBe('connected');
    await until('the BYE', () => raw.inbox.some((m) => m.type === MSG_BYE));
    expect(raw.inbox.some((m) => m.type === MSG_PING)).toBe(true);
    expect(raw.inbox.find((m) => m.type === MSG_BYE)).toEqual({ type: MSG_BYE, token: welcome.token, reason: ByeReason.TIMEOUT });
    expect(raw.inbox.find((m) => m.type === MSG_PING)).toEqual({ type: MSG_PING, token: welcome.token });
  });

  // The in-flight cap is the dgram path's (the native path drops what the kernel refuses: the C++
  // checks count those, build/sanitize's "native send" lines).
  it.runIf(dataPath === 'dgram')('sends beyond the in-flight cap are dropped and counted, never queued', async () => {
    const h = await harness({ dataPath, maxInFlightSends: 1 });
    await client(h);
    await client(h);
    await h.tick();
    expect(h.server.counters.packetsSent).toBe(1);
    expect(h.server.counters.packetsDropped).toBe(1);
    await until('the send to complete', () => h.server.inFlightSends === 0);
  });

  it('sendTick of something that is not a TickResult, or of an expired one, is a coded error and sends nothing', async () => {
    const h = await harness({ dataPath });
    const { c, avatar } = await client(h);
    const before = { ...h.server.counters };
    for (const bad of [null, undefined, 'x', {}, { count: 1 }, { count: 1.5, viewerAt: () => avatar, bytesAt: () => new Uint8Array(16) }]) {
      expect(() => h.server.sendTick(bad as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    if (dataPath === 'dgram') {
      const old = await h.world.tick();
      await h.world.tick();
      const fresh = h.world.tick();
      expect(() => h.server.sendTick(old)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_RESULT_EXPIRED' }));
      expect(h.server.counters).toEqual(before);
      expect(h.server.sendTick(await fresh)).toBe(1);
      expect(h.server.counters.packetsSent).toBe(before.packetsSent + 1);
    } else {
      // The world's ticks send their own packets on this path; sendTick says how many went.
      const old = await h.world.tick();
      await h.world.tick();
      const fresh = await h.world.tick();
      const sent = { ...h.server.counters };
      expect(sent.packetsSent).toBe(before.packetsSent + 3);
      expect(() => h.server.sendTick(old)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_RESULT_EXPIRED' }));
      expect(h.server.sendTick(fresh)).toBe(1);
      expect(h.server.counters.packetsSent).toBe(sent.packetsSent);
      // A second sendTick of the same result sends it again, as on the dgram path.
      expect(h.server.sendTick(fresh)).toBe(1);
      expect(h.server.counters.packetsSent).toBe(sent.packetsSent + 1);
    }
    await caughtUp(h, c, avatar);
  });

  it('send() of something that is not a packet is a coded error and sends nothing; a world that is not one, or of another config, is refused', async () => {
    const h = await harness({ dataPath });
    const { avatar } = await client(h);
    const before = { ...h.server.counters };
    const packet = new Uint8Array(16);
    packet[0] = 2;
    for (const bad of [null, 'abc', [1, 2], new Uint8Array(0), new Uint8Array(15).fill(1), new Uint16Array(16), new Uint8Array(16), new Uint8Array(70_000).fill(1)]) {
      expect(() => h.server.send(avatar, bad as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(h.server.counters).toEqual(before);
    expect(h.server.send(avatar, packet)).toBe(true);
    expect(h.server.counters.packetsSent).toBe(before.packetsSent + 1);
    const onConnect = () => 0;
    const other = new World(WorldConfig.build({ regionSize: 1024 }), { capacity: 4, threads: 1 });
    cleanups.push(() => other.close());
    for (const world of [5, {}, { acknowledge: 1 }, other]) {
      expect(() => new UdpServer({ config, world, onConnect } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(() => new UdpServer({ config, world: { acknowledge: () => undefined }, onConnect }).close()).not.toThrow();
  });

  it('UdpClient.close() while connecting sends no BYE (it has no token yet) and rejects the connect', async () => {
    const silent = await rawSocket(); // a server that never answers
    const port = (silent.s.address() as { port: number }).port;
    const c = new UdpClient({ helloIntervalMs: 20 });
    const connecting = c.connect(HOST, port, config.protocolHash);
    await until('a HELLO', () => c.counters.helloSent > 0 && silent.inbox.some((m) => m.type === MSG_HELLO));
    await c.close();
    await expect(connecting).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_NET_CLOSED' });
    await new Promise((r) => setTimeout(r, 50));
    expect(silent.inbox.every((m) => m.type === MSG_HELLO)).toBe(true);
  });

  it('UdpClient: null options mean defaults; another non-object is ERR_SIGHTLINE_INVALID_ARGUMENT', async () => {
    const c = new UdpClient(null);
    cleanups.push(() => c.close());
    expect(c.state).toBe('idle');
    for (const options of [5, 'x', true]) {
      expect(() => new UdpClient(options as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    const h = await harness({ dataPath });
    const avatar = await c.connect(HOST, h.port, config.protocolHash);
    expect(h.server.has(avatar)).toBe(true);
  });

  it('options: a misspelt key in an object literal is ERR_SIGHTLINE_UNKNOWN_OPTION, a listener that is not a function is refused; listener classes keep their own fields', () => {
    const world = new World(config, { capacity: 8, threads: 1 });
    const onConnect = () => 0;
    const code = (f: () => unknown) => {
      try {
        f();
        return 'no error';
      } catch (e) {
        return (e as { code?: string }).code;
      }
    };
    expect(code(() => new UdpClient({ timeoutMs: 100 } as never))).toBe('ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(code(() => new UdpClient({ onSpawn: 5 } as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => new UdpServer({ config, world, onConnect, timeOutMs: 100 } as never))).toBe('ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(code(() => new UdpServer({ config, world, onConnect, onAck: 'yes' } as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    class Game {
      readonly config = config;
      readonly world = world;
      readonly players = new Map<string, number>(); // a field of the listener's own, not an option
      onConnect(): number {
        return 0;
      }
    }
    expect(code(() => new UdpServer(new Game()))).toBe('no error');
    class Bot {
      readonly seen: number[] = [];
      onSpawn(id: number): void {
        this.seen.push(id);
      }
    }
    expect(code(() => new UdpClient(new Bot()))).toBe('no error');
  });

  it('close() while listen() binds: listen() rejects with ERR_SIGHTLINE_NET_CLOSED and the server stays closed', async () => {
    const world = new World(config, { capacity: 8, threads: 1 });
    // A host name: the bind waits for a lookup (an IP literal binds at once, before close() could run).
    const server = new UdpServer({ config, world, address: 'localhost', dataPath, onConnect: () => 0 });
    const listening = server.listen();
    await server.close();
    await expect(listening).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_NET_CLOSED' });
    await new Promise((r) => setTimeout(r, 50));
    expect(server.port).toBe(0);
    await expect(server.listen()).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_NET_STATE' });
  });

  it('a new HELLO from the same address replaces the session; closing the server says BYE to clients', async () => {
    const h = await harness({ dataPath });
    const raw = await rawSocket();
    const w1 = (await rawHandshake(raw, h.port, 1)) as WelcomeMessage;
    const w2 = (await rawHandshake(raw, h.port, 2)) as WelcomeMessage;
    expect([w1.type, w2.type]).toEqual([MSG_WELCOME, MSG_WELCOME]);
    expect(h.events).toEqual([`${w1.avatar} replaced`]);
    expect(h.server.has(w2.avatar)).toBe(true);
    // A HELLO with another nonce that is refused (wrong hash) changes nothing: the session stays.
    const refused = await rawHandshake(raw, h.port, 3, (config.protocolHash + 1) >>> 0);
    expect(refused).toMatchObject({ type: MSG_REFUSE, nonce: 3 });
    expect(h.events).toEqual([`${w1.avatar} replaced`]);
    expect(h.server.has(w2.avatar)).toBe(true);

    const byes: (number | undefined)[] = [];
    const c = new UdpClient({ onDisconnect: (reason, bye) => byes.push(reason === 'bye' ? bye : -1) });
    cleanups.push(() => c.close());
    const avatar = await c.connect(HOST, h.port, config.protocolHash);
    await h.server.close();
    await until('the BYE', () => byes.length === 1);
    expect(byes).toEqual([ByeReason.SHUTDOWN]);
    expect(c.state).toBe('closed');
    expect(h.events).toContain(`${avatar} closed`);
  });

  it('connect rejects with a timeout when nobody answers', async () => {
    const raw = await rawSocket(); // a bound port that never answers
    const port = (raw.s.address() as { port: number }).port;
    const c = new UdpClient({ connectTimeoutMs: 200, helloIntervalMs: 50 });
    const err = await c.connect(HOST, port, config.protocolHash).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_SIGHTLINE_NET_CONNECT_TIMEOUT' });
    expect(c.state).toBe('closed');
    expect(c.counters.helloSent).toBeGreaterThanOrEqual(3);
  });
});
