// What the loopback transport benches (bench/udp.mjs, bench/transports.mjs) share: the dense town
// their servers serve, their clients in a child process, one measured phase, and the clients'
// side of the protocol (the handshake, an ACK for every game packet). Build first: npm run build
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';

/**
 * A dense town: `entities` spread over a 600 m square round the region's centre (a seeded LCG:
 * every run places them alike), so every viewer sees more entities than fit one packet and
 * packets are full. `clients`: the avatars to make room for. Returns the world, the entity ids,
 * and a server's `onConnect` (an avatar in the town, a viewer with acks) and `onDisconnect`.
 */
export async function denseTown({ entities, clients, threads = 0 }) {
  const { World, WorldConfig } = await import('../dist/lib/index.js');
  const config = WorldConfig.build();
  const world = new World(config, { capacity: entities + clients + 16, threads });
  const side = 600;
  const base = 2048 - side / 2;
  let seed = 1;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296;
  const ids = [];
  for (let i = 0; i < entities; i++) ids.push(world.spawn({ x: base + rand() * side, y: base + rand() * side, z: 0 }));
  const listener = {
    onConnect: () => {
      const id = world.spawn({ x: base + rand() * side, y: base + rand() * side, z: 0 });
      world.addViewer(id, { acks: true });
      return id;
    },
    onDisconnect: (id) => {
      world.removeViewer(id);
      world.despawn(id);
    },
  };
  return { config, world, ids, listener };
}

/**
 * Starts the clients: `script` forked with `argv`. Resolves, once the child's first message (its
 * clients connected) arrives, to `{ child, ask, ready }`: `ask(msg)` sends a command and resolves
 * to the child's answer; `ready` is that first message.
 */
export async function forkClients(script, argv) {
  const child = fork(script, argv);
  const ask = (msg) =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send(msg);
    });
  const ready = await new Promise((resolve) => child.once('message', resolve));
  return { child, ask, ready };
}

/**
 * Waits until the clients stop receiving (what was in flight has landed or been dropped): asks for
 * their report every `pauseMs` until `received(report)` stays the same.
 */
export async function drain(ask, received, pauseMs) {
  let last = -1;
  for (;;) {
    const n = received(await ask({ cmd: 'report' }));
    if (n === last) return;
    last = n;
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

/**
 * One measured phase: drains, resets the clients' tallies, then runs `round()` again and again
 * for `seconds` (a round every `intervalMs` at most; 0: back to back, yielding to the event loop
 * between rounds), drains again. `round()` resolves to `{ jsMs, poolMicros? }`: its time in the
 * server's sendTick on this thread, and in the pool's sends. Returns the raw figures: rounds,
 * wall (s), cpu (process.cpuUsage over the phase), the server's counters before (c0) and after
 * (c), the clients' final report (`got`), inSend (ms) and poolSend (µs).
 */
export async function measurePhase({ ask, server, seconds, intervalMs = 0, round, received, pauseMs }) {
  await drain(ask, received, pauseMs);
  await ask({ cmd: 'reset' });
  const c0 = { ...server.counters };
  const cpu0 = process.cpuUsage();
  let inSend = 0;
  let poolSend = 0;
  let rounds = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) {
    const r = await round();
    inSend += r.jsMs;
    poolSend += r.poolMicros ?? 0;
    rounds++;
    const wait = t0 + rounds * intervalMs - performance.now();
    await new Promise((r) => (wait > 0 ? setTimeout(r, wait) : setImmediate(r)));
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await drain(ask, received, pauseMs);
  const got = await ask({ cmd: 'report' });
  return { rounds, wall, cpu, c0, c: server.counters, got, inSend, poolSend };
}

/**
 * The rates of a phase (`m` from measurePhase; `got`: the clients' tally for this server), in the
 * benches' JSON order: packets sent and received per second, the share received, Mbit/s received,
 * ACKs per second, and µs in sendTick per packet sent.
 */
export function rates(m, got) {
  const { wall, c0, c, inSend } = m;
  const sent = c.packetsSent - c0.packetsSent;
  return {
    sentPerSecond: Math.round(sent / wall),
    receivedPerSecond: Math.round(got.packets / wall),
    receivedShare: +(got.packets / Math.max(1, sent)).toFixed(4),
    mbitPerSecond: +((got.bytes * 8) / wall / 1e6).toFixed(1),
    acksPerSecond: Math.round((c.acks - c0.acks) / wall),
    sendTickMicrosPerPacket: +((inSend * 1000) / Math.max(1, sent)).toFixed(3),
  };
}

/** A round of a phase: one sendTick of the same result (the transport alone). */
export const resend = (server, result) => async () => {
  const t = performance.now();
  server.sendTick(result);
  return { jsMs: performance.now() - t };
};

/**
 * The clients' side of the protocol, by hand: resolves to `{ protocolHash, client }`.
 * `client(nonce, send, tally)` starts one client whose messages go out through `send` and returns
 * `{ onMessage, done }`: feed it every message it receives; `done` resolves once it is welcomed
 * (HELLO, the CHALLENGE's cookie back in a second HELLO, then the WELCOME's token). From then on
 * it counts each game packet in `tally` (packets, bytes) and acknowledges it (newest sequence and
 * the 32 before it).
 */
export async function clientProtocol() {
  const { encodeHello, encodeAck, decodeControl } = await import('../dist/lib/net/index.js');
  const { WorldConfig, PROTOCOL_VERSION } = await import('../dist/lib/index.js');
  const protocolHash = WorldConfig.build().protocolHash;
  const client = (nonce, send, tally) => {
    const ack = acker();
    let token;
    let welcomed;
    const done = new Promise((r) => (welcomed = r));
    const onMessage = (m) => {
      // A game packet's first byte is the wire format's version (docs/transport.md).
      if (m[0] === PROTOCOL_VERSION) {
        tally.packets++;
        tally.bytes += m.length;
        if (token !== undefined) {
          const [a, b] = ack(m[2] | (m[3] << 8));
          send(encodeAck(token, a, b));
        }
        return;
      }
      try {
        const c = decodeControl(m);
        if (c.type === 0xa6) send(encodeHello({ protocolHash, nonce, cookie: c.cookie }));
        if (c.type === 0xa1) {
          token = c.token;
          welcomed();
        }
      } catch {
        // not for us
      }
    };
    send(encodeHello({ protocolHash, nonce }));
    return { onMessage, done };
  };
  return { protocolHash, client };
}

// Ack state of one client: the newest sequence and the 32 bits before it.
function acker() {
  let newest = -1;
  let bits = 0;
  return (seq) => {
    if (newest < 0) newest = seq;
    const d = (seq - newest + 65536) % 65536;
    if (d > 0 && d < 32768) {
      bits = d > 32 ? 0 : ((bits << d) | (1 << (d - 1))) >>> 0;
      newest = seq;
    } else if (d !== 0) {
      const back = 65536 - d;
      if (back <= 32) bits = (bits | (1 << (back - 1))) >>> 0;
    }
    return [newest, bits];
  };
}
