// UDP adapter throughput on loopback: how many game packets per second UdpServer sustains, and
// what each costs the server's CPU, on each data path in one run. Build first: npm run build
//
//   node bench/udp.mjs [--viewers 2000] [--entities 20000] [--seconds 4] [--paths dgram,native]
//                      [--sink native|dgram] [--threads 0] [--interval 20] [--json]
//
// For each data path a World is built the same way (same seed: the same packets) with a UdpServer
// on it; the clients run in a child process, so on a 2-core machine each side has a core: by
// default one UdpClientSwarm (light clients that take in and acknowledge every packet natively:
// the receivers drain natively, so what is measured is the server), with --sink dgram a node:dgram
// socket per client acknowledging from JavaScript.
//
// Phases, per path:
//   resend  one tick's packets sent again and again (sendTick on the same result), a round every
//           --interval ms at most (so that the receivers keep up): the transport alone; the native
//           path sends from the JavaScript thread then, with sendmmsg batches
//   ticks   World.tick() + sendTick back to back: the engine and the transport together; the
//           native path sends from the pool's threads inside the tick
// Server CPU per packet is the whole process's (every thread) over the phase / packets sent.
import dgram from 'node:dgram';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const here = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const str = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const opt = (name, fallback) => Number(str(name, fallback));

if (flag('child')) await (str('sink', 'native') === 'native' ? swarmSink() : dgramSink());
else await main();

async function main() {
  const { UdpServer } = await import('../dist/lib/net/index.js');
  const viewers = opt('viewers', 2000);
  const entities = opt('entities', 20_000);
  const seconds = opt('seconds', 4);
  const sink = str('sink', 'native');
  const paths = str('paths', UdpServer.nativeDataPath ? 'dgram,native' : 'dgram').split(',');
  const out = {
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    viewers,
    entities,
    sink,
    paths: [],
  };
  for (const dataPath of paths) out.paths.push(await measurePath(dataPath, { viewers, entities, seconds, sink }));
  const byName = Object.fromEntries(out.paths.map((p) => [p.dataPath, p]));
  if (byName.native && byName.dgram) {
    out.ratio = Object.fromEntries(
      byName.native.results.map((r, i) => [r.phase, +(byName.dgram.results[i].serverCpuMicrosPerPacket / r.serverCpuMicrosPerPacket).toFixed(2)]),
    );
  }
  if (flag('json')) {
    console.log(JSON.stringify(out, null, 2));
  } else {
    console.log(`node ${out.node}, ${out.cpus} CPUs, ${viewers} viewers, ${entities} entities, receivers: ${sink === 'native' ? 'a native client swarm' : 'node:dgram sockets'}`);
    for (const p of out.paths) {
      console.log(`${p.dataPath} data path, ${p.packetBytes}-byte packets${p.socketBuffers ? `, socket buffers granted ${p.socketBuffers.send} / ${p.socketBuffers.recv} B` : ''}`);
      for (const r of p.results) {
        console.log(
          `  ${r.phase.padEnd(6)}  sent ${r.sentPerSecond} pkt/s, received ${r.receivedPerSecond} pkt/s (${(r.receivedShare * 100).toFixed(2)}%, ${r.mbitPerSecond} Mbit/s), ` +
            `dropped ${r.packetsDropped}, acks ${r.acksPerSecond}/s; sendTick ${r.sendTickMicrosPerPacket} µs/pkt, server CPU ${r.serverCpuMicrosPerPacket} µs/pkt` +
            (r.poolSendMicrosPerPacket !== undefined ? `, pool send ${r.poolSendMicrosPerPacket} µs/pkt` : ''),
        );
      }
    }
    if (out.ratio) console.log(`server CPU per packet, dgram / native: ${Object.entries(out.ratio).map(([k, v]) => `${k} ${v}×`).join(', ')}`);
  }
  process.exit(0);
}

async function measurePath(dataPath, { viewers, entities, seconds, sink }) {
  const { World, WorldConfig } = await import('../dist/lib/index.js');
  const { UdpServer } = await import('../dist/lib/net/index.js');
  const config = WorldConfig.build();
  const world = new World(config, { capacity: entities + viewers + 16, threads: opt('threads', 0) });
  // A dense town: every viewer sees more entities than fit one packet, so packets are full.
  const side = 600;
  const base = 2048 - side / 2;
  let seed = 1;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296;
  const ids = [];
  for (let i = 0; i < entities; i++) ids.push(world.spawn({ x: base + rand() * side, y: base + rand() * side, z: 0 }));

  const server = new UdpServer({
    config,
    world,
    dataPath,
    address: '127.0.0.1',
    port: 0,
    maxClients: viewers,
    timeoutMs: 60_000,
    sendBufferSize: 4 * 1024 * 1024,
    recvBufferSize: 8 * 1024 * 1024,
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

  const child = fork(here, ['--child', '--sink', sink, '--port', String(port), '--viewers', String(viewers)]);
  const ask = (msg) =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send(msg);
    });
  const ready = await new Promise((resolve) => child.once('message', resolve));
  if (ready.connected !== viewers) throw new Error(`only ${ready.connected} of ${viewers} clients connected (${ready.errors ?? ''})`);

  const { x, y } = world.positions;
  const move = () => {
    for (let i = 0; i < ids.length; i += 3) {
      const s = world.slotOf(ids[i]);
      x[s] += ((i * 7919) % 401) - 200;
      y[s] += ((i * 104729) % 401) - 200;
    }
  };
  move();
  server.sendTick(await world.tick());
  move();
  const result = await world.tick();
  server.sendTick(result);
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

  const phase = async (name, round, intervalMs = 0) => {
    await drain();
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
    await drain();
    const got = await ask({ cmd: 'report' });
    const c = server.counters;
    const sent = c.packetsSent - c0.packetsSent;
    return {
      phase: name,
      rounds,
      seconds: +wall.toFixed(2),
      packetsSent: sent,
      packetsDropped: c.packetsDropped - c0.packetsDropped,
      sendErrors: c.sendErrors - c0.sendErrors,
      sentPerSecond: Math.round(sent / wall),
      receivedPerSecond: Math.round(got.packets / wall),
      receivedShare: +(got.packets / Math.max(1, sent)).toFixed(4),
      mbitPerSecond: +((got.bytes * 8) / wall / 1e6).toFixed(1),
      acksPerSecond: Math.round((c.acks - c0.acks) / wall),
      sendTickMicrosPerPacket: +((inSend * 1000) / Math.max(1, sent)).toFixed(3),
      ...(poolSend > 0 ? { poolSendMicrosPerPacket: +(poolSend / Math.max(1, sent)).toFixed(3) } : {}),
      serverCpuMicrosPerPacket: +((cpu.user + cpu.system) / Math.max(1, sent)).toFixed(3),
    };
  };

  const results = [];
  results.push(
    await phase('resend', async () => {
      const t = performance.now();
      server.sendTick(result);
      return { jsMs: performance.now() - t };
    }, opt('interval', 20)),
  );
  results.push(
    await phase('ticks', async () => {
      move();
      const r = await world.tick();
      const t = performance.now();
      server.sendTick(r);
      return { jsMs: performance.now() - t, poolMicros: server.lastTick?.sendMicros };
    }),
  );
  const socketBuffers = server.socketBuffers ?? null;
  await ask({ cmd: 'exit' }).catch(() => undefined);
  child.kill();
  await server.close();
  world.close();
  return { dataPath, packetBytes: Math.round(bytesPerTick / result.count), socketBuffers, results };
}

// The clients as one UdpClientSwarm: packets taken in and acknowledged natively.
async function swarmSink() {
  const port = opt('port', 0);
  const viewers = opt('viewers', 1);
  const { UdpClientSwarm } = await import('../dist/lib/net/index.js');
  const config = (await import('../dist/lib/index.js')).WorldConfig.build();
  const swarm = new UdpClientSwarm({ clients: viewers });
  const r = await swarm.connect('127.0.0.1', port, config.protocolHash);
  let at = { gamePackets: 0, bytesReceived: 0 };
  process.on('message', (msg) => {
    const t = swarm.totals();
    if (msg.cmd === 'reset') {
      at = t;
      process.send({ ok: true });
    } else if (msg.cmd === 'report') {
      process.send({ packets: t.gamePackets - at.gamePackets, bytes: t.bytesReceived - at.bytesReceived });
    } else if (msg.cmd === 'exit') {
      process.send({ ok: true });
      void swarm.close().then(() => process.exit(0));
    }
  });
  process.send({ connected: r.connected, errors: r.errors.join('; ') });
}

// The clients as node:dgram sockets, one each, acknowledging every packet from JavaScript.
async function dgramSink() {
  const port = opt('port', 0);
  const viewers = opt('viewers', 1);
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
      process.send({ ok: true });
      for (const s of sockets) s.close();
      process.exit(0);
    }
  });
  process.send({ connected });
}
