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
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { integerOption, positiveNumberOption } from '../dist/tools/cli/util.js';
import { clientProtocol, denseTown, forkClients, measurePhase, rates, resend } from './loopback.mjs';

const here = fileURLToPath(import.meta.url);
const opts = new Command('transports.mjs')
  .description('UDP and WebSocket side by side on loopback: packets per second each server adapter sends and delivers, and the server CPU per packet')
  .addOption(new Option('--viewers <n>', 'clients of each kind').argParser(integerOption(1, 65_536)).default(300))
  .addOption(new Option('--entities <n>', 'entities in the town').argParser(integerOption(0, 1 << 20)).default(20_000))
  .addOption(new Option('--seconds <s>', 'length of each phase').argParser(positiveNumberOption(3600)).default(3))
  .addOption(new Option('--rounds <n>', 'phases of each transport, alternating').argParser(integerOption(1, 1000)).default(2))
  .option('--json', 'print the results as JSON')
  // The child process that runs the clients.
  .addOption(new Option('--sink').hideHelp())
  .addOption(new Option('--udp <port>').argParser(integerOption(1, 65535)).hideHelp())
  .addOption(new Option('--ws <port>').argParser(integerOption(1, 65535)).hideHelp())
  .parse()
  .opts();

if (opts.sink) await sink();
else await main();

async function main() {
  const { UdpServer, WsServer } = await import('../dist/lib/net/index.js');
  const { viewers, entities, seconds, rounds } = opts;
  // Room for both servers' avatars.
  const { config, world, listener } = await denseTown({ entities, clients: 2 * viewers });
  const common = { config, world, maxClients: viewers, timeoutMs: 120_000, ...listener };
  // node:dgram, the UDP path these figures have always been for (bench/udp.mjs compares it with the native one).
  const udp = new UdpServer({ ...common, dataPath: 'dgram', address: '127.0.0.1', sendBufferSize: 4 << 20, recvBufferSize: 4 << 20 });
  const ws = new WsServer({ ...common, host: '127.0.0.1' });
  const udpPort = (await udp.listen()).port;
  const wsPort = (await ws.listen()).port;

  const { child, ask, ready } = await forkClients(here, ['--sink', '--udp', String(udpPort), '--ws', String(wsPort), '--viewers', String(viewers)]);
  if (ready.udp !== viewers || ready.ws !== viewers) throw new Error(`connected ${ready.udp} UDP and ${ready.ws} WebSocket clients of ${viewers} each`);

  await world.tick();
  const result = await world.tick();
  let udpPackets = 0;
  let bytes = 0;
  for (let i = 0; i < result.count; i++) {
    if (udp.has(result.viewerAt(i))) udpPackets++;
    bytes += result.bytesAt(i).length;
  }

  const phase = async (name, server) => {
    const m = await measurePhase({ ask, server, seconds, round: resend(server, result), received: (r) => r.udp.packets + r.ws.packets, pauseMs: 150 });
    const { wall, cpu, c0, c } = m;
    const got = m.got[name];
    const sent = c.packetsSent - c0.packetsSent;
    return {
      transport: name,
      seconds: +wall.toFixed(2),
      packetsSent: sent,
      packetsDropped: c.packetsDropped - c0.packetsDropped,
      packetsBackedUp: c.packetsBackedUp === undefined ? null : c.packetsBackedUp - c0.packetsBackedUp,
      ...rates(m, got),
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
  if (opts.json) {
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
  const { udp: udpPort, ws: wsPort, viewers } = opts;
  const { WebSocket } = await import('ws');
  const { client } = await clientProtocol();
  const counts = { udp: { packets: 0, bytes: 0 }, ws: { packets: 0, bytes: 0 } };
  const closers = [];

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
