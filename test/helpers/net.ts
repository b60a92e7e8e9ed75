// Helpers of the network tests: a server harness over loopback (a World with a moving crowd and
// a UdpServer), clients, bare sockets speaking the protocol by hand, and the comparison of a
// client's world with the server's ghost table. Each test file runs in its own process: the
// cleanup list is that file's.
import dgram from 'node:dgram';
import { World, WorldConfig, type EntityId } from '../../lib/index.js';
import { UdpServer } from '../../lib/net/udp-server.js';
import { UdpClient } from '../../lib/net/udp-client.js';
import type { ClientWorld } from '../../lib/net/client-world.js';
import type { DisconnectReason } from '../../lib/net/transport.js';
import { MSG_CHALLENGE, MSG_REFUSE, MSG_WELCOME, decodeControl, encodeHello, type ChallengeMessage, type ControlMessage } from '../../lib/net/protocol.js';
import { rng } from './model.js';

export const config = WorldConfig.build();
export const HOST = '127.0.0.1';

/** What the running test opened; `runCleanups` (the test file's afterEach) closes it, newest first. */
export const cleanups: (() => Promise<void> | void)[] = [];

export async function runCleanups(): Promise<void> {
  while (cleanups.length > 0) await cleanups.pop()!();
}

export async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export interface Harness {
  world: World;
  server: UdpServer;
  port: number;
  events: string[];
  /** Moves the crowd, runs a tick, sends it. */
  tick(): Promise<void>;
}

/** A crowd of `n` entities around (2050, 2050) m; the returned function moves about half of them a little. */
export function movingCrowd(world: World, r: () => number, n = 300): () => void {
  const crowd: EntityId[] = [];
  for (let i = 0; i < n; i++) crowd.push(world.spawn({ x: 1900 + r() * 300, y: 1900 + r() * 300, z: 0 }));
  const { x, y } = world.positions;
  return () => {
    for (const id of crowd) {
      if (r() < 0.5) continue;
      const s = world.slotOf(id);
      x[s] += Math.round((r() - 0.5) * 400);
      y[s] += Math.round((r() - 0.5) * 400);
    }
  };
}

/** A game's listener: each client gets a new avatar (a viewer with acks); its end is logged in `events`. */
export function gameListener(world: World, r: () => number, events: string[]) {
  return {
    onConnect: () => {
      const id = world.spawn({ x: 2000 + r() * 100, y: 2000 + r() * 100, z: 0 });
      world.addViewer(id, { acks: true });
      return id;
    },
    onDisconnect: (viewer: EntityId, reason: DisconnectReason) => {
      events.push(`${viewer} ${reason}`);
      world.removeViewer(viewer);
      world.despawn(viewer);
    },
  };
}

export async function harness(options: Partial<ConstructorParameters<typeof UdpServer>[0]> = {}, threads = 1): Promise<Harness> {
  const r = rng(9);
  const world = new World(config, { capacity: 1024, threads, recordGhostPositions: true });
  const move = movingCrowd(world, r);
  const events: string[] = [];
  const server = new UdpServer({ config, world, address: HOST, port: 0, ...gameListener(world, r, events), ...options });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  const tick = async () => {
    move();
    server.sendTick(await world.tick());
  };
  return { world, server, port, events, tick };
}

export async function client(h: Harness, options: ConstructorParameters<typeof UdpClient>[0] = {}): Promise<{ c: UdpClient; avatar: EntityId }> {
  const c = new UdpClient(options);
  cleanups.push(() => c.close());
  const avatar = await c.connect(HOST, h.port, config.protocolHash);
  return { c, avatar };
}

/** A bare socket speaking the protocol by hand. */
export async function rawSocket(): Promise<{ s: dgram.Socket; inbox: ControlMessage[]; send(bytes: Uint8Array, port: number): Promise<void> }> {
  const s = dgram.createSocket('udp4');
  const inbox: ControlMessage[] = [];
  s.on('message', (m) => {
    try {
      inbox.push(decodeControl(m));
    } catch {
      // game packets are not collected here
    }
  });
  await new Promise<void>((res) => s.bind(0, HOST, () => res()));
  cleanups.push(() => new Promise<void>((res) => s.close(() => res())));
  return {
    s,
    inbox,
    send: (bytes, port) => new Promise<void>((res, rej) => s.send(bytes, port, HOST, (e) => (e ? rej(e) : res()))),
  };
}

/**
 * The handshake by hand from a bare socket: HELLO, then the HELLO again with the CHALLENGE's
 * cookie. Resolves with the WELCOME (or the REFUSE).
 */
export async function rawHandshake(
  raw: Awaited<ReturnType<typeof rawSocket>>,
  port: number,
  nonce: number,
  protocolHash = config.protocolHash,
): Promise<ControlMessage> {
  const from = raw.inbox.length;
  const answer = (type: number) => raw.inbox.slice(from).find((m) => m.type === type || m.type === MSG_REFUSE);
  await raw.send(encodeHello({ protocolHash, nonce }), port);
  await until('the CHALLENGE', () => answer(MSG_CHALLENGE) !== undefined);
  const c = answer(MSG_CHALLENGE)!;
  if (c.type === MSG_REFUSE) return c;
  await raw.send(encodeHello({ protocolHash, nonce, cookie: (c as ChallengeMessage).cookie }), port);
  await until('the WELCOME', () => answer(MSG_WELCOME) !== undefined);
  return answer(MSG_WELCOME)!;
}

/** Differences between a client's world and the ghost table of its viewer (despawns in flight left out). */
export function mismatches(world: World, viewer: EntityId, view: ClientWorld): string[] {
  const g = world.ghosts(viewer);
  const out: string[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < g.ids.length; i++) {
    if (g.state[i] === 2) continue;
    const id = g.ids[i];
    seen.add(id);
    const e = view.get(id);
    if (e === undefined) out.push(`missing ${id}`);
    else if (e.rawX !== g.x![i] || e.rawY !== g.y![i] || e.rawZ !== g.z![i]) out.push(`entity ${id} differs`);
  }
  for (const id of view.entities.keys()) if (!seen.has(id)) out.push(`extra ${id}`);
  return out;
}

/** Waits until a client has the newest packet sent to it. */
export async function caughtUp(h: Harness, c: UdpClient, avatar: EntityId): Promise<void> {
  const last = (h.world.ghosts(avatar).sequence + 65535) % 65536;
  await until(`client of ${avatar} to receive packet ${last}`, () => c.world.newestSequence === last);
}

