// UDP and WebSocket side by side in one run: how many game packets per second each server adapter
// sends, how many arrive, and what each packet costs the server process's CPU. Build first:
// npx tsc -p tsconfig.build.json
//
//   node bench/transports.mjs [--viewers 300] [--entities 20000] [--seconds 3] [--rounds 2] [--json]
//
// One World (a dense town: full 1,192-byte packets), one UdpServer and one WsServer on loopback,
// `viewers` clients of each kind in one child process (bare sockets that count packets and ack
// each one, speaking the protocol by hand: the handshake with its cookie, the token on every
// ACK), so on a 2-core machine each side has a core. Phases alternate UDP, WebSocket, UDP, ...
// (`rounds` of each), each sending one tick's packets again and again (sendTick on the same
// result: the transport alone) for `seconds`.
import dgram from 'node:dgram';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const here = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};

if (flag('sink')) await sink();
else await main();

async function main() {
  const { World, WorldConfig } = await import('../dist/lib/index.js');
  const { UdpServer, WsServer } = await import('../dist/lib/net/index.js');
  const viewers = opt('viewers', 300);
  const entities = opt('entities', 20_000);
  const seconds = opt('seconds', 3);
  const rounds = opt('rounds', 2);

  const config = WorldConfig.build();
  const world = new World(config, { capacity: entities + 2 * viewers + 16, threads: 0 });
  const side = 600;
  const base = 2048 - side / 2;
  let seed = 1;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296;
  for (let i = 0; i < entities; i++) world.spawn({ x: base + rand() * side, y: base + rand() * side, z: 0 });
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
  const common = { config, world, maxClients: viewers, timeoutMs: 120_000, ...listener };
  // node:dgram, the UDP path these figures have always been for (bench/udp.mjs compares it with the native one).
  const udp = new UdpServer({ ...common, dataPath: 'dgram', address: '127.0.0.1', sendBufferSize: 4 << 20, recvBufferSize: 4 << 20 });
  const ws = new WsServer({ ...common, host: '127.0.0.1' });
  const udpPort = (await udp.listen()).port;
  const wsPort = (await ws.listen()).port;

  const child = fork(here, ['--sink', '--udp', String(udpPort), '--ws', String(wsPort), '--viewers', String(viewers)]);
  const ask = (msg) =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send(msg);
    });
  const ready = await new Promise((resolve) => child.once('message', resolve));
  if (ready.udp !== viewers || ready.ws !== viewers) throw new Error(`connected ${ready.udp} UDP and ${ready.ws} WebSocket clients of ${viewers} each`);

  await world.tick();
  const result = await world.tick();
  let udpPackets = 0;
  let bytes = 0;
  for (let i = 0; i < result.count; i++) {
    if (udp.has(result.viewerAt(i))) udpPackets++;
    bytes += result.bytesAt(i).length;
  }

  const drain = async () => {
    let last = -1;
    for (;;) {
      const r = await ask({ cmd: 'report' });
      const total = r.udp.packets + r.ws.packets;
      if (total === last) return;
      last = total;
      await new Promise((r) => setTimeout(r, 150));
    }
  };

  const phase = async (name, server) => {
    await drain();
    await ask({ cmd: 'reset' });
    const c0 = { ...server.counters };
    const cpu0 = process.cpuUsage();
    let inSend = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < seconds * 1000) {
      const t = performance.now();
      server.sendTick(result);
      inSend += performance.now() - t;
      await new Promise((r) => setImmediate(r));
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    await drain();
    const got = (await ask({ cmd: 'report' }))[name];
    const c = server.counters;
    const sent = c.packetsSent - c0.packetsSent;
    return {
      transport: name,
      seconds: +wall.toFixed(2),
      packetsSent: sent,
      packetsDropped: c.packetsDropped - c0.packetsDropped,
      packetsBackedUp: c.packetsBackedUp === undefined ? null : c.packetsBackedUp - c0.packetsBackedUp,
      sentPerSecond: Math.round(sent / wall),
      receivedPerSecond: Math.round(got.packets / wall),
      receivedShare: +(got.packets / Math.max(1, sent)).toFixed(4),
      mbitPerSecond: +((got.bytes * 8) / wall / 1e6).toFixed(1),
      acksPerSecond: Math.round((c.acks - c0.acks) / wall),
      sendTickMicrosPerPacket: +((inSend * 1000) / Math.max(1, sent)).toFixed(3),
      serverCpuMicrosPerPacket: +((cpu.user + cpu.system) / Math.max(1, sent)).toFixed(3),
      serverUserMicrosPerPacket: +(cpu.user / Math.max(1, sent)).toFixed(3),
      serverSystemMicrosPerPacket: +(cpu.system / Math.max(1, sent)).toFixed(3),
    };
  };

  const out = {
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    viewers,
    entities,
    packetBytes: Math.round(bytes / result.count),
    udpPacketsPerTick: udpPackets,
    results: [],
  };
  for (let k = 0; k < rounds; k++) {
    out.results.push(await phase('udp', udp));
    out.results.push(await phase('ws', ws));
  }
  child.send({ cmd: 'exit' });
  await udp.close();
  await ws.close();
  if (flag('json')) {
    console.log(JSON.stringify(out, null, 2));
  } else {
    console.log(`node ${out.node}, ${out.cpus} CPUs, ${viewers} UDP + ${viewers} WebSocket clients, ${entities} entities, ${out.packetBytes}-byte packets`);
    for (const r of out.results) {
      console.log(
        `${r.transport.padEnd(3)}  sent ${r.sentPerSecond} pkt/s, received ${r.receivedPerSecond} pkt/s (${(r.receivedShare * 100).toFixed(2)}%, ${r.mbitPerSecond} Mbit/s), ` +
          `dropped ${r.packetsDropped}${r.packetsBackedUp === null ? '' : ` (backed up ${r.packetsBackedUp})`}, acks ${r.acksPerSecond}/s; ` +
          `sendTick ${r.sendTickMicrosPerPacket} µs/pkt, server CPU ${r.serverCpuMicrosPerPacket} µs/pkt (user ${r.serverUserMicrosPerPacket}, system ${r.serverSystemMicrosPerPacket})`,
      );
    }
  }
  process.exit(0);
}

// The clients: bare sockets, one handshake each, then count and ack every game packet.
async function sink() {
  const udpPort = opt('udp', 0);
  const wsPort = opt('ws', 0);
  const viewers = opt('viewers', 1);
  const { encodeHello, encodeAck, decodeControl } = await import('../dist/lib/net/index.js');
  const { WorldConfig } = await import('../dist/lib/index.js');
  const { WebSocket } = await import('ws');
  const hash = WorldConfig.build().protocolHash;
  const counts = { udp: { packets: 0, bytes: 0 }, ws: { packets: 0, bytes: 0 } };
  const closers = [];

  // Ack state of one client: newest sequence and the 32 bits before it.
  const acker = () => {
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
  };

  // One client over either channel: `send` writes a message, `onMessage` is fed each one.
  const client = (nonce, send, tally) => {
    const ack = acker();
    let token;
    let welcomed;
    const done = new Promise((r) => (welcomed = r));
    const onMessage = (m) => {
      if (m[0] === 1) {
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
        if (c.type === 0xa6) send(encodeHello({ protocolHash: hash, nonce, cookie: c.cookie }));
        if (c.type === 0xa1) {
          token = c.token;
          welcomed();
        }
      } catch {
        // not for us
      }
    };
    send(encodeHello({ protocolHash: hash, nonce }));
    return { onMessage, done };
  };

  let udp = 0;
  let ws = 0;
  for (let i = 0; i < viewers; i++) {
    const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 1 << 20 });
    await new Promise((r) => s.connect(udpPort, '127.0.0.1', r));
    const c = client(i + 1, (b) => s.send(b), counts.udp);
    s.on('message', c.onMessage);
    await c.done;
    closers.push(() => s.close());
    udp++;
  }
  for (let i = 0; i < viewers; i++) {
    const sock = new WebSocket(`ws://127.0.0.1:${wsPort}/`);
    sock.binaryType = 'nodebuffer';
    await new Promise((r) => sock.once('open', r));
    const c = client(100_000 + i, (b) => sock.send(b), counts.ws);
    sock.on('message', (m) => c.onMessage(m));
    await c.done;
    closers.push(() => sock.terminate());
    ws++;
  }
  process.on('message', (msg) => {
    if (msg.cmd === 'reset') {
      // The clients keep their tallies by reference: reset in place.
      for (const t of [counts.udp, counts.ws]) t.packets = t.bytes = 0;
      process.send({ ok: true });
    } else if (msg.cmd === 'report') {
      process.send(counts);
    } else if (msg.cmd === 'exit') {
      for (const c of closers) c();
      process.exit(0);
    }
  });
  process.send({ udp, ws });
}
