import { describe, it, expect, afterEach } from 'vitest';
import { createServer } from 'node:http';
import NodeWebSocket, { WebSocketServer } from 'ws';
import { World, WorldConfig, type EntityId } from '../lib/index.js';
import { WsServer, type WsServerOptions } from '../lib/net/ws-server.js';
import { WsClient, type WebSocketClass, type WsClientOptions } from '../lib/net/ws-client.js';
import { MSG_CHALLENGE, MSG_WELCOME, decodeControl, encodeAck, encodeBye, encodeHello, encodePing, type ControlMessage } from '../lib/net/protocol.js';
import { rng } from './helpers/model.js';
import { cleanups, gameListener, mismatches, movingCrowd, runCleanups, until } from './helpers/net.js';

afterEach(runCleanups);

const config = WorldConfig.build();
const WS = NodeWebSocket as unknown as WebSocketClass;

interface WsHarness {
  world: World;
  server: WsServer;
  url: string;
  events: string[];
  inputs: string[];
  tick(): Promise<void>;
}

async function wsHarness(options: Partial<WsServerOptions> = {}, worldConfig = config, crowdSize = 300): Promise<WsHarness> {
  const r = rng(9);
  const world = new World(worldConfig, { capacity: crowdSize + 64, threads: 1, recordGhostPositions: true });
  cleanups.push(() => world.close());
  const move = movingCrowd(world, r, crowdSize);
  const events: string[] = [];
  const inputs: string[] = [];
  const server = new WsServer({
    config: worldConfig,
    world,
    host: '127.0.0.1',
    ...gameListener(world, r, events),
    onInput: (viewer, bytes, kind, sequence) => inputs.push(`${viewer}:${kind}:${sequence}:${bytes[0]}`),
    ...options,
  });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  const tick = async () => {
    move();
    server.sendTick(await world.tick());
  };
  return { world, server, url: `ws://127.0.0.1:${port}/`, events, inputs, tick };
}

async function wsClient(h: WsHarness, options: WsClientOptions = {}): Promise<{ c: WsClient; avatar: EntityId; socket: () => NodeWebSocket }> {
  let socket: NodeWebSocket | undefined;
  // The ws package's WebSocket, kept so a test can stop reading from it.
  class Kept extends NodeWebSocket {
    constructor(url: string) {
      super(url);
      socket = this;
    }
  }
  const c = new WsClient({ WebSocket: Kept as unknown as WebSocketClass, ...options });
  cleanups.push(() => c.close());
  const avatar = await c.connect(h.url, config.protocolHash);
  return { c, avatar, socket: () => socket! };
}

async function caughtUp(h: WsHarness, c: WsClient, avatar: EntityId, ms = 5000): Promise<void> {
  const last = (h.world.ghosts(avatar).sequence + 65535) % 65536;
  await until(`client of ${avatar} to receive packet ${last}`, () => c.world.newestSequence === last, ms);
}

/** A bare WebSocket speaking the protocol by hand. */
async function rawWs(url: string): Promise<{ ws: NodeWebSocket; inbox: ControlMessage[]; closed: () => boolean }> {
  const ws = new NodeWebSocket(url);
  const inbox: ControlMessage[] = [];
  let closed = false;
  ws.on('message', (m: Buffer) => {
    try {
      inbox.push(decodeControl(new Uint8Array(m)));
    } catch {
      // game packets are not collected here
    }
  });
  ws.on('close', () => (closed = true));
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
  });
  cleanups.push(() => ws.terminate());
  return { ws, inbox, closed: () => closed };
}

describe('WebSocket transport', () => {
  it('clients converge to the ghost table like UDP ones, send input of both kinds, and say BYE', async () => {
    const h = await wsHarness();
    const a = await wsClient(h);
    const b = await wsClient(h);
    expect(a.avatar).not.toBe(b.avatar);
    expect(h.server.clientCount).toBe(2);
    expect(h.server.clientKeyOf(a.avatar)).toMatch(/^127\.0\.0\.1:\d+$/);
    for (let t = 0; t < 30; t++) {
      a.c.sendInput(Uint8Array.of(t), 'unreliable');
      if (t % 3 === 0) a.c.sendInput(Uint8Array.of(t), 'reliable');
      await h.tick();
      await caughtUp(h, a.c, a.avatar);
      await caughtUp(h, b.c, b.avatar);
    }
    await until('every ack', () => h.server.counters.acks >= 60);
    for (const { c, avatar } of [a, b]) {
      expect(c.world.size).toBeGreaterThan(50);
      expect(mismatches(h.world, avatar, c.world)).toEqual([]);
      expect(h.world.ackStats(avatar)!.lost).toBe(0);
    }
    await until('the reliable inputs acknowledged', () => a.c.pendingInputs === 0);
    expect(h.inputs.filter((s) => s.split(':')[1] === '1')).toEqual(Array.from({ length: 10 }, (_, i) => `${a.avatar}:1:${i}:${i * 3}`));
    expect(h.inputs.filter((s) => s.split(':')[1] === '0')).toEqual(Array.from({ length: 30 }, (_, i) => `${a.avatar}:0:${i}:${i}`));
    expect(h.server.counters).toMatchObject({ packetsDropped: 0, packetsBackedUp: 0, malformed: 0, connects: 2, challenges: 2 });
    await a.c.close();
    await until('the BYE', () => h.events.length === 1);
    expect(h.events).toEqual([`${a.avatar} bye`]);
    // A connection that closes without a BYE ends its session too.
    b.socket().terminate();
    await until('the close', () => h.events.length === 2);
    expect(h.events[1]).toBe(`${b.avatar} disconnected`);
  });

  it('a client that stops reading for 2 s is skipped while backed up, then gets the freshest state, never a backlog', async () => {
    // Large packets (a 64 KB payload, a crowd of 4,000 in view) fill the socket buffers within the pause.
    const big = WorldConfig.build({ payloadBytes: 60_000, ghostCap: 4096, walkCap: 8192 });
    const h = await wsHarness({ maxBufferedBytes: 65_536 }, big, 4000);
    const slow = await wsClient(h, { serverTimeoutMs: 0 });
    const steady = await wsClient(h);
    for (let t = 0; t < 5; t++) {
      await h.tick();
      await caughtUp(h, slow.c, slow.avatar);
      await caughtUp(h, steady.c, steady.avatar);
    }
    slow.socket().pause();
    // At least 2 s, and until the kernel's socket buffers are full and the server has skipped a
    // packet (on a loaded machine the ticks come slower and 2 s may not fill them).
    const pauseStart = performance.now();
    let most = 0;
    for (;;) {
      const elapsed = performance.now() - pauseStart;
      if (elapsed >= 2000 && (h.server.counters.packetsBackedUp > 0 || elapsed > 30_000)) break;
      await h.tick();
      most = Math.max(most, h.server.bufferedAmountOf(slow.avatar)!);
      await new Promise((r) => setTimeout(r, 5));
    }
    // Skipped while backed up: what waits in user space never passes the cap by more than the
    // packet that crossed it (the kernel's socket buffers hold the rest).
    expect(h.server.counters.packetsBackedUp).toBeGreaterThan(0);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(65_536 + 60_000);
    expect(h.server.counters.packetsBackedUp).toBe(h.server.counters.packetsDropped);
    slow.socket().resume();
    // It reads what was queued, is sent packets again as soon as its socket drains, and the
    // engine resends what the skipped ones carried (taken as lost through the acks): it converges.
    for (let t = 0; t < 30; t++) {
      await h.tick();
      await new Promise((r) => setTimeout(r, 5));
    }
    await caughtUp(h, slow.c, slow.avatar, 10_000);
    for (let t = 0; t < 60 && mismatches(h.world, slow.avatar, slow.c.world).length > 0; t++) {
      await h.tick();
      await caughtUp(h, slow.c, slow.avatar, 10_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(mismatches(h.world, slow.avatar, slow.c.world)).toEqual([]);
    expect(h.world.ackStats(slow.avatar)!.lost + h.world.ackStats(slow.avatar)!.expired).toBeGreaterThan(0);
    await caughtUp(h, steady.c, steady.avatar);
    expect(mismatches(h.world, steady.avatar, steady.c.world)).toEqual([]);
    expect(h.world.ackStats(steady.avatar)!.lost).toBe(0);
  }, 60_000);

  it('tokens bind a session to its connection: forged messages from another connection, text frames and silent connections are dropped', async () => {
    const h = await wsHarness({ timeoutMs: 400, keepaliveMs: 100 });
    const victim = await wsClient(h, { keepaliveMs: 50 });
    const token = victim.c.welcome!.token;
    const attacker = await rawWs(h.url);
    // Even with the victim's token, another connection has no session: strays.
    attacker.ws.send(encodeBye(token));
    attacker.ws.send(encodeAck(token, 0, 0));
    attacker.ws.send(encodePing(token));
    attacker.ws.send('hello'); // a text frame
    await until('the forgeries', () => h.server.counters.strays + h.server.counters.malformed >= 4);
    expect(h.server.malformedCodes).toEqual({ ERR_SIGHTLINE_NET_TEXT_FRAME: 1 });
    expect(h.server.counters.strays).toBe(3);
    expect(h.server.malformedCodes).toMatchObject({ ERR_SIGHTLINE_NET_TEXT_FRAME: 1 });
    expect(h.events).toEqual([]);
    // The handshake works the same as over UDP: CHALLENGE, then WELCOME.
    attacker.ws.send(encodeHello({ protocolHash: config.protocolHash, nonce: 5 }));
    await until('the CHALLENGE', () => attacker.inbox.some((m) => m.type === MSG_CHALLENGE));
    expect(attacker.inbox.some((m) => m.type === MSG_WELCOME)).toBe(false);
    // A connection that never finishes its handshake is closed after timeoutMs.
    await until('the silent connection closed', () => attacker.closed(), 3000);
    expect(h.server.counters.connectionsTimedOut).toBe(1);
    for (let t = 0; t < 5; t++) {
      await h.tick();
      await caughtUp(h, victim.c, victim.avatar);
    }
    expect(victim.c.state).toBe('connected');
    expect(mismatches(h.world, victim.avatar, victim.c.world)).toEqual([]);
  });

  it("what a peer can cause at will is counted, not reported: frames over the size limit or breaking the protocol, and requests that never finish", async () => {
    const reported: string[] = [];
    const h = await wsHarness({ timeoutMs: 600, keepaliveMs: 100, onError: (e) => reported.push((e as Error).message) });
    const victim = await wsClient(h, { keepaliveMs: 50 });
    // A binary frame over the largest client message: ws closes the connection with 1009.
    const big = await rawWs(h.url);
    big.ws.send(Buffer.alloc(2000, 0xa0));
    await until('the oversized frame', () => big.closed(), 3000);
    expect(h.server.malformedCodes).toEqual({ WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1 });
    expect(h.server.counters.malformed).toBe(1);
    // A request that never finishes its headers (a slow-loris socket) is closed after timeoutMs.
    const { connect } = await import('node:net');
    const port = Number(new URL(h.url).port);
    const slow = connect(port, '127.0.0.1');
    cleanups.push(() => void slow.destroy());
    slow.write('GET / HTTP/1.1\r\nHost: x\r\n');
    const opened = Date.now();
    const reply = await new Promise<string>((resolve) => {
      let got = '';
      slow.on('data', (d: Buffer) => (got += d.toString())).once('close', () => resolve(got)).once('error', () => undefined);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 408 /);
    expect(Date.now() - opened).toBeLessThan(5000); // Node's own default would be 60 s
    expect(reported).toEqual([]);
    for (let t = 0; t < 3; t++) {
      await h.tick();
      await caughtUp(h, victim.c, victim.avatar);
    }
    expect(victim.c.state).toBe('connected');
    expect(mismatches(h.world, victim.avatar, victim.c.world)).toEqual([]);
  });

  it('attaches to an HTTP server on a path of its own, leaving other requests and upgrades to it', async () => {
    const http = createServer((_req, res) => res.end('page'));
    const other = new WebSocketServer({ noServer: true });
    http.on('upgrade', (req, socket, head) => {
      if (req.url === '/other') other.handleUpgrade(req, socket, head, (ws) => ws.send('other'));
    });
    await new Promise<void>((res) => http.listen(0, '127.0.0.1', () => res()));
    cleanups.push(() => new Promise<void>((res) => http.close(() => res())));
    cleanups.push(() => other.close());
    const port = (http.address() as { port: number }).port;
    const world = new World(config, { capacity: 8, threads: 1 });
    cleanups.push(() => world.close());
    const server = new WsServer({
      config,
      world,
      server: http,
      path: '/sightline',
      onConnect: () => {
        const id = world.spawn({ x: 1, y: 1, z: 0 });
        world.addViewer(id, { acks: true });
        return id;
      },
    });
    expect((await server.listen()).port).toBe(port);
    cleanups.push(() => server.close());
    const c = new WsClient({ WebSocket: WS });
    cleanups.push(() => c.close());
    const avatar = await c.connect(`ws://127.0.0.1:${port}/sightline`, config.protocolHash);
    expect(server.has(avatar)).toBe(true);
    const text = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(text).toBe('page');
    const o = new NodeWebSocket(`ws://127.0.0.1:${port}/other`);
    const msg = await new Promise<string>((res) => o.once('message', (m) => res(String(m))));
    o.close();
    expect(msg).toBe('other');
    await server.close();
    expect(http.listening).toBe(true); // a given server is left listening
  });

  it('options are checked; a client without a WebSocket class, or with a URL that is not ws:, is refused', async () => {
    const onConnect = () => 0;
    const code = (f: () => unknown) => {
      try {
        f();
        return 'no error';
      } catch (e) {
        return (e as { code?: string }).code;
      }
    };
    expect(code(() => new WsServer({ config, onConnect, maxBuferedBytes: 1 } as never))).toBe('ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(code(() => new WsServer({ config, onConnect, path: 'x' }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => new WsServer({ config, onConnect, server: {} as never }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => new WsServer({ config, onConnect, host: '' }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => new WsServer({ config, onConnect, server: createServer(), port: 80 }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => new WsServer([] as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    if (typeof (globalThis as { WebSocket?: unknown }).WebSocket !== 'function') {
      expect(code(() => new WsClient())).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    }
    expect(code(() => new WsClient({ WebSocket: WS, onSpawn: 3 } as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => new WsClient({ WebSocket: WS, serverTimeOutMs: 3 } as never))).toBe('ERR_SIGHTLINE_UNKNOWN_OPTION');
    for (const url of ['http://127.0.0.1:1/', 'nonsense', 5]) {
      await expect(new WsClient({ WebSocket: WS }).connect(url as never, config.protocolHash)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' });
    }
    // Nobody listening: the WebSocket cannot open.
    await expect(new WsClient({ WebSocket: WS }).connect('ws://127.0.0.1:1/', config.protocolHash)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_NET_CONNECT' });
  });
});
