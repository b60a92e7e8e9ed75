// What the session checks cost the UDP server's JavaScript per packet, without the kernel: the
// UdpServer's socket is replaced by a stub (sends complete at once, datagrams are handed to the
// server's message handler directly), and the server sends one tick's packets to every client
// and takes one ACK from each, again and again. Loads the build in --dist, so the same script
// measures a build from before the session protocol and one after, in turn:
//
//   node bench/session-cost.mjs --dist dist [--clients 500] [--rounds 400] [--json]
//
// Per packet: one sendTick entry (route, copy, for sessions: the input-ack stamp) and one ACK
// handled (decode, session lookup, for sessions: the token compare, the ack checks, onAck). No
// World takes the acks (the engine's cost is not the transport's).
import dgram from 'node:dgram';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const dist = resolve(opt('dist', 'dist'));
const clients = Number(opt('clients', 500));
const rounds = Number(opt('rounds', 400));
const lib = (p) => import(pathToFileURL(resolve(dist, p)).href);
const { World, WorldConfig } = await lib('lib/index.js');
const net = await lib('lib/net/index.js');

// The stub socket: records what the server sends, completes every send at once.
let socket;
const outbox = [];
const realCreate = dgram.createSocket;
dgram.createSocket = (...a) => {
  socket = realCreate(...a);
  socket.bind = (_port, _address) => queueMicrotask(() => socket.emit('listening'));
  socket.address = () => ({ address: '127.0.0.1', port: 7777, family: 'IPv4' });
  socket.setRecvBufferSize = () => {};
  socket.setSendBufferSize = () => {};
  socket.getSendQueueCount = () => 0;
  socket.close = (cb) => cb?.();
  socket.send = (msg, port, address, cb) => {
    if (msg[0] !== 1) outbox.push({ msg: Uint8Array.from(msg), port });
    cb?.(null);
  };
  return socket;
};

const config = WorldConfig.build();
const world = new World(config, { capacity: 30_000, threads: 1 });
let seed = 1;
const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296;
for (let i = 0; i < 20_000; i++) world.spawn({ x: 1748 + rand() * 600, y: 1748 + rand() * 600, z: 0 });
let acksSeen = 0;
const server = new net.UdpServer({
  config,
  dataPath: 'dgram', // the stubbed socket is node:dgram's
  address: '127.0.0.1',
  timeoutMs: 3_600_000,
  keepaliveMs: 0,
  maxClients: clients,
  onConnect: () => {
    const id = world.spawn({ x: 1748 + rand() * 600, y: 1748 + rand() * 600, z: 0 });
    world.addViewer(id, { acks: true });
    return id;
  },
  onAck: () => acksSeen++,
});
await server.listen();
const deliver = (bytes, port) => socket.emit('message', Buffer.from(bytes), { address: '127.0.0.1', port, family: 'IPv4', size: bytes.length });

// The handshake of each client, by hand: whatever this build's protocol is (a CHALLENGE is
// answered with the cookie; the WELCOME's token, if any, goes into every ACK).
const sessions = new Map(); // port -> { token }
for (let k = 0; k < clients; k++) {
  const port = 20_000 + k;
  deliver(net.encodeHello({ protocolHash: config.protocolHash, nonce: k + 1 }), port);
  for (let guard = 0; guard < 4 && !sessions.has(port); guard++) {
    const m = outbox.splice(0).map((o) => net.decodeControl(o.msg));
    for (const c of m) {
      if (c.type === 0xa6) deliver(net.encodeHello({ protocolHash: config.protocolHash, nonce: k + 1, cookie: c.cookie }), port);
      if (c.type === 0xa1) sessions.set(port, { token: c.token });
    }
  }
}
if (sessions.size !== clients) throw new Error(`${sessions.size} of ${clients} clients connected`);
const sessioned = [...sessions.values()][0].token !== undefined;

await world.tick();
const result = await world.tick();
const ports = [];
for (let i = 0; i < result.count; i++) {
  const key = server.clientKeyOf(result.viewerAt(i));
  ports.push(Number(key.split(':')[1]));
}
// Each client acks the packet it was just sent; built once (the clients' cost is not measured).
const acks = ports.map((port, i) => {
  const seq = result.bytesAt(i)[2] | (result.bytesAt(i)[3] << 8);
  const t = sessions.get(port).token;
  return Buffer.from(sessioned ? net.encodeAck(t, seq, 0) : net.encodeAck(seq, 0));
});
const infos = ports.map((port) => ({ address: '127.0.0.1', port, family: 'IPv4', size: 0 }));

// --only send | ack: measure one half alone.
const only = opt('only', 'both');
const round = () => {
  if (only !== 'ack') server.sendTick(result);
  if (only !== 'send') for (let i = 0; i < acks.length; i++) socket.emit('message', acks[i], infos[i]);
};
for (let r = 0; r < 50; r++) round(); // warm-up
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let r = 0; r < rounds; r++) round();
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const packets = rounds * result.count;
const out = {
  dist,
  sessions: sessioned,
  only,
  clients,
  packets,
  acksPassedOn: acksSeen,
  microsPerPacket: +((wall * 1000) / packets).toFixed(4),
  cpuMicrosPerPacket: +((cpu.user + cpu.system) / packets).toFixed(4),
};
if (args.includes('--json')) console.log(JSON.stringify(out));
else console.log(`${sessioned ? 'sessions' : 'no sessions'}: ${out.microsPerPacket} µs per packet (send + its ACK), CPU ${out.cpuMicrosPerPacket} µs, ${packets} packets`);
await server.close();
world.close();
process.exit(0);
