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
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Command, Option } from 'commander';
import { integerOption, positiveNumberOption } from '../dist/tools/cli/util.js';
import { clientProtocol, denseTown, forkClients, measurePhase, rates, resend } from './loopback.mjs';

const here = fileURLToPath(import.meta.url);
const opts = new Command('udp.mjs')
  .description('UdpServer throughput on loopback on each data path: packets per second sent and delivered, and the server CPU per packet')
  .addOption(new Option('--viewers <n>', 'clients').argParser(integerOption(1, 65_536)).default(2000))
  .addOption(new Option('--entities <n>', 'entities in the town').argParser(integerOption(0, 1 << 20)).default(20_000))
  .addOption(new Option('--seconds <s>', 'length of each phase').argParser(positiveNumberOption(3600)).default(4))
  .addOption(new Option('--paths <list>', 'data paths to measure, comma-separated (default: dgram,native where the native path is built, else dgram)'))
  .addOption(new Option('--sink <kind>', 'the receivers: a native client swarm, or a node:dgram socket per client').choices(['native', 'dgram']).default('native'))
  .addOption(new Option('--threads <n>', 'pass threads, 0 = one per CPU').argParser(integerOption(0, 256)).default(0))
  .addOption(new Option('--interval <ms>', 'the resend phase sends a round every this many ms at most').argParser(integerOption(0, 60_000)).default(20))
  .option('--json', 'print the results as JSON')
  // The child process that runs the clients.
  .addOption(new Option('--child').hideHelp())
  .addOption(new Option('--port <port>').argParser(integerOption(1, 65535)).hideHelp())
  .parse()
  .opts();

if (opts.child) await (opts.sink === 'native' ? swarmSink() : dgramSink());
else await main();

async function main() {
  const { UdpServer } = await import('../dist/lib/net/index.js');
  const { viewers, entities, seconds, sink } = opts;
  const paths = (opts.paths ?? (UdpServer.nativeDataPath ? 'dgram,native' : 'dgram')).split(',');
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
  if (opts.json) {
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
  const { UdpServer } = await import('../dist/lib/net/index.js');
  const { config, world, ids, listener } = await denseTown({ entities, clients: viewers, threads: opts.threads });

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
    ...listener,
  });
  const { port } = await server.listen();

  const { child, ask, ready } = await forkClients(here, ['--child', '--sink', sink, '--port', String(port), '--viewers', String(viewers)]);
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

  const phase = async (name, round, intervalMs = 0) => {
    const m = await measurePhase({ ask, server, seconds, intervalMs, round, received: (r) => r.packets, pauseMs: 100 });
    const { rounds, wall, cpu, c0, c, got, poolSend } = m;
    const sent = c.packetsSent - c0.packetsSent;
    return {
      phase: name,
      rounds,
      seconds: +wall.toFixed(2),
      packetsSent: sent,
      packetsDropped: c.packetsDropped - c0.packetsDropped,
      sendErrors: c.sendErrors - c0.sendErrors,
      ...rates(m, got),
      ...(poolSend > 0 ? { poolSendMicrosPerPacket: +(poolSend / Math.max(1, sent)).toFixed(3) } : {}),
      serverCpuMicrosPerPacket: +((cpu.user + cpu.system) / Math.max(1, sent)).toFixed(3),
    };
  };

  const results = [];
  results.push(await phase('resend', resend(server, result), opts.interval));
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
  const { port, viewers } = opts;
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
  const { port, viewers } = opts;
  const { client } = await clientProtocol();
  const tally = { packets: 0, bytes: 0 };
  let connected = 0;
  const sockets = [];
  for (let i = 0; i < viewers; i++) {
    const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 1 << 20 });
    await new Promise((r) => s.connect(port, '127.0.0.1', r));
    const c = client(i + 1, (b) => s.send(b), tally);
    s.on('message', c.onMessage);
    await c.done;
    connected++;
    sockets.push(s);
  }
  process.on('message', (msg) => {
    if (msg.cmd === 'reset') {
      tally.packets = tally.bytes = 0;
      process.send({ ok: true });
    } else if (msg.cmd === 'report') {
      process.send(tally);
    } else if (msg.cmd === 'exit') {
      process.send({ ok: true });
      for (const s of sockets) s.close();
      process.exit(0);
    }
  });
  process.send({ connected });
}
