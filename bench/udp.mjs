// UDP adapter throughput on loopback: how many game packets per second UdpServer sustains, and
// what each costs the server's JavaScript thread. Build first: npx tsc -p tsconfig.build.json
//
//   node bench/udp.mjs [--viewers 500] [--entities 20000] [--seconds 4] [--no-ack] [--json]
//
// The server runs here; the clients (bare sockets that count packets and ack each one) run in a
// child process, so on a 2-core machine each side has a core.
//
// Phases:
//   resend  one tick's packets sent again and again (sendTick on the same result): the transport alone
//   ticks   World.tick() + sendTick back to back: the engine and the transport together
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
  const { UdpServer } = await import('../dist/lib/net/index.js');
  const viewers = opt('viewers', 500);
  const entities = opt('entities', 20_000);
  const seconds = opt('seconds', 4);
  const ack = !flag('no-ack');

  const config = WorldConfig.build();
  const world = new World(config, { capacity: entities + viewers + 16, threads: 0 });
  // A dense town: every viewer sees more entities than fit one packet, so packets are full.
  const side = 600;
  const base = 2048 - side / 2;
  let seed = 1;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
  const ids = [];
  for (let i = 0; i < entities; i++) ids.push(world.spawn({ x: base + rand() * side, y: base + rand() * side, z: 0 }));

  const server = new UdpServer({
    config,
    world,
    address: '127.0.0.1',
    port: 0,
    maxClients: viewers,
    timeoutMs: 60_000,
    sendBufferSize: 4 * 1024 * 1024,
    recvBufferSize: 4 * 1024 * 1024,
    onConnect: () => {
      const id = world.spawn({ x: base + rand() * side, y: base + rand() * side, z: 0 });
      world.addViewer(id, { acks: true });
      return id;
    },
    onDisconnect: (id) => {
      world.removeViewer(id);
      world.despawn(id);
    },
  });
  const { port } = await server.listen();

  const child = fork(here, ['--sink', '--port', String(port), '--viewers', String(viewers), ...(ack ? [] : ['--no-ack'])]);
  const ask = (msg) =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send(msg);
    });
  const ready = await new Promise((resolve) => child.once('message', resolve));
  if (ready.connected !== viewers) throw new Error(`only ${ready.connected} of ${viewers} clients connected`);

  const { x, y } = world.positions;
  const move = () => {
    for (let i = 0; i < ids.length; i += 3) {
      const s = world.slotOf(ids[i]);
      x[s] += ((i * 7919) % 401) - 200;
      y[s] += ((i * 104729) % 401) - 200;
    }
  };
  move();
  await world.tick();
  move();
  const result = await world.tick();
  let bytesPerTick = 0;
  for (const p of result.packets) bytesPerTick += p.bytes.length;

  // Waits until the clients stop receiving (what was in flight has landed or been dropped).
  const drain = async () => {
    let last = -1;
    for (;;) {
      const { packets } = await ask({ cmd: 'report' });
      if (packets === last) return;
      last = packets;
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const phase = async (name, round) => {
    await drain();
    await ask({ cmd: 'reset' });
    const c0 = { ...server.counters };
    const cpu0 = process.cpuUsage();
    let inSend = 0;
    let rounds = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < seconds * 1000) {
      inSend += await round();
      rounds++;
      await new Promise((r) => setImmediate(r));
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    await drain();
    const got = await ask({ cmd: 'report' });
    const sent = server.counters.packetsSent - c0.packetsSent;
    return {
      phase: name,
      rounds,
      seconds: +wall.toFixed(2),
      packetsSent: sent,
      packetsDropped: server.counters.packetsDropped - c0.packetsDropped,
      sendErrors: server.counters.sendErrors - c0.sendErrors,
      sentPerSecond: Math.round(sent / wall),
      receivedPerSecond: Math.round(got.packets / wall),
      receivedShare: +(got.packets / Math.max(1, sent)).toFixed(4),
      mbitPerSecond: +((got.bytes * 8) / wall / 1e6).toFixed(1),
      acksPerSecond: Math.round((server.counters.acks - c0.acks) / wall),
      sendTickMicrosPerPacket: +((inSend * 1000) / Math.max(1, sent)).toFixed(3),
      serverCpuMicrosPerPacket: +(((cpu.user + cpu.system) / Math.max(1, sent))).toFixed(3),
    };
  };

  const out = {
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    viewers,
    entities,
    packetBytes: Math.round(bytesPerTick / result.count),
    acks: ack,
    results: [],
  };

  out.results.push(
    await phase('resend', async () => {
      const t = performance.now();
      server.sendTick(result);
      return performance.now() - t;
    }),
  );
  out.results.push(
    await phase('ticks', async () => {
      move();
      const r = await world.tick();
      const t = performance.now();
      server.sendTick(r);
      return performance.now() - t;
    }),
  );

  child.send({ cmd: 'exit' });
  await server.close();
  if (flag('json')) {
    console.log(JSON.stringify(out, null, 2));
  } else {
    console.log(`node ${out.node}, ${out.cpus} CPUs, ${viewers} viewers, ${entities} entities, ${out.packetBytes}-byte packets, acks ${ack ? 'on' : 'off'}`);
    for (const r of out.results) {
      console.log(
        `${r.phase.padEnd(6)}  sent ${r.sentPerSecond} pkt/s, received ${r.receivedPerSecond} pkt/s (${(r.receivedShare * 100).toFixed(2)}%, ${r.mbitPerSecond} Mbit/s), ` +
          `dropped ${r.packetsDropped}, acks ${r.acksPerSecond}/s; sendTick ${r.sendTickMicrosPerPacket} µs/pkt, server CPU ${r.serverCpuMicrosPerPacket} µs/pkt`,
      );
    }
  }
  process.exit(0);
}

async function sink() {
  const port = opt('port', 0);
  const viewers = opt('viewers', 1);
  const ack = !flag('no-ack');
  const { encodeHello, encodeAck, decodeControl } = await import('../dist/lib/net/index.js');
  const config = (await import('../dist/lib/index.js')).WorldConfig.build();
  let packets = 0;
  let bytes = 0;
  let connected = 0;
  const sockets = [];
  for (let i = 0; i < viewers; i++) {
    const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 1 << 20 });
    let newest = -1;
    let bits = 0;
    let token;
    await new Promise((r) => s.connect(port, '127.0.0.1', r));
    const welcomed = new Promise((resolve) => {
      s.on('message', (m) => {
        if (m[0] === 1) {
          packets++;
          bytes += m.length;
          if (!ack) return;
          const seq = m[2] | (m[3] << 8);
          if (newest < 0) newest = seq;
          const d = (seq - newest + 65536) % 65536;
          if (d > 0 && d < 32768) {
            bits = d > 32 ? 0 : ((bits << d) | (1 << (d - 1))) >>> 0;
            newest = seq;
          } else if (d !== 0) {
            const back = 65536 - d;
            if (back <= 32) bits = (bits | (1 << (back - 1))) >>> 0;
          }
          s.send(encodeAck(token, newest, bits));
          return;
        }
        try {
          const c = decodeControl(m);
          // The handshake: the CHALLENGE's cookie back, then the WELCOME's token.
          if (c.type === 0xa6) s.send(encodeHello({ protocolHash: config.protocolHash, nonce: i + 1, cookie: c.cookie }));
          if (c.type === 0xa1) {
            token = c.token;
            resolve();
          }
        } catch {
          // not for us
        }
      });
    });
    s.send(encodeHello({ protocolHash: config.protocolHash, nonce: i + 1 }));
    await welcomed;
    connected++;
    sockets.push(s);
  }
  process.on('message', (msg) => {
    if (msg.cmd === 'reset') {
      packets = 0;
      bytes = 0;
      process.send({ ok: true });
    } else if (msg.cmd === 'report') {
      process.send({ packets, bytes });
    } else if (msg.cmd === 'exit') {
      for (const s of sockets) s.close();
      process.exit(0);
    }
  });
  process.send({ connected });
}
