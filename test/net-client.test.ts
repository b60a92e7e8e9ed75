// Over 500 lines as one file: ClientWorld's rules, case by case on hand-made packets, then end to end over LossyLink against the server's ghost table.
import { describe, it, expect } from 'vitest';
import { PROTOCOL_VERSION, World, WorldConfig, type EntityId } from '../lib/index.js';
import { ClientWorld, type ClientEntity } from '../lib/net/client-world.js';
import { LossyLink, mulberry32 } from '../lib/net/lossy-link.js';
import { decodeControl, MSG_ACK } from '../lib/net/protocol.js';
import { SightlineError } from '../lib/errors.js';
import { decodePacketRaw } from '../lib/decode.js';
import { rng, withSeed } from './helpers/model.js';

const config = WorldConfig.build();
const hasAcknowledge = typeof (World.prototype as { acknowledge?: unknown }).acknowledge === 'function';

// ---------------------------------------------------------------------------------------------
// Hand-made packets at the default layout (q = 0: x | y << 22 | (z + 2^19) << 44).

interface Rec {
  id: number;
  x: number;
  y: number;
  z?: number;
}

function packet(sequence: number, despawns: number[], updates: Rec[], tick = sequence, events?: { first: number; payloads: number[][] }): Uint8Array {
  const eventBytes = events ? 3 + events.payloads.reduce((n, e) => n + 2 + e.length, 0) : 0;
  const b = new Uint8Array(16 + eventBytes + 4 * despawns.length + 12 * updates.length);
  const v = new DataView(b.buffer);
  b[0] = PROTOCOL_VERSION;
  v.setUint16(2, sequence & 0xffff, true);
  v.setUint32(4, tick >>> 0, true);
  v.setUint16(12, despawns.length, true);
  v.setUint16(14, updates.length, true);
  let p = 16;
  if (events) {
    b[1] = 1;
    v.setUint16(p, events.first, true);
    b[p + 2] = events.payloads.length;
    p += 3;
    for (const e of events.payloads) {
      v.setUint16(p, e.length, true);
      b.set(e, p + 2);
      p += 2 + e.length;
    }
  }
  for (const id of despawns) {
    v.setUint32(p, id, true);
    p += 4;
  }
  for (const u of updates) {
    v.setUint32(p, u.id, true);
    const packed = BigInt(u.x) | (BigInt(u.y) << 22n) | (BigInt((u.z ?? 0) + (1 << 19)) << 44n);
    v.setBigUint64(p + 4, packed, true);
    p += 12;
  }
  return b;
}

function rawOf(e: ClientEntity | undefined): [number, number, number] | undefined {
  return e === undefined ? undefined : [e.rawX, e.rawY, e.rawZ];
}

describe('ClientWorld', () => {
  it('applies spawns, updates and despawns and reports them to listeners, in meters and raw', () => {
    const events: string[] = [];
    const w = new ClientWorld(config, {
      onSpawn: (id, e) => events.push(`spawn ${id} ${e.x},${e.y},${e.z}`),
      onUpdate: (id, e) => events.push(`update ${id} ${e.x},${e.y},${e.z}`),
      onDespawn: (id) => events.push(`despawn ${id}`),
    });
    expect(w.ack()).toBeNull();
    expect(w.receive(packet(0, [], [{ id: 1, x: 1024, y: 2048, z: -512 }, { id: 2, x: 5, y: 6 }]))).toBe('applied');
    expect(w.receive(packet(1, [2], [{ id: 1, x: 1536, y: 2048, z: -512 }]))).toBe('applied');
    expect(events).toEqual(['spawn 1 1,2,-0.5', 'spawn 2 0.0048828125,0.005859375,0', 'despawn 2', 'update 1 1.5,2,-0.5']);
    expect(rawOf(w.get(1))).toEqual([1536, 2048, -512]);
    expect(w.get(1)).toMatchObject({ id: 1, x: 1.5, y: 2, z: -0.5, sequence: 1, tick: 1 });
    expect(w.size).toBe(1);
    expect(w.counters).toMatchObject({ packets: 2, spawns: 2, updates: 1, despawns: 1 });
    expect(w.ack()).toEqual({ ack: 1, ackBits: 1 });
    expect(w.newestSequence).toBe(1);
    expect(w.newestTick).toBe(1);
  });

  it('a late packet never rolls back a newer position of the same entity', () => {
    const w = new ClientWorld(config);
    w.receive(packet(10, [], [{ id: 1, x: 100, y: 100 }]));
    w.receive(packet(12, [], [{ id: 1, x: 300, y: 300 }]));
    expect(w.receive(packet(11, [], [{ id: 1, x: 200, y: 200 }, { id: 2, x: 7, y: 7 }]))).toBe('applied');
    expect(rawOf(w.get(1))).toEqual([300, 300, 0]);
    expect(rawOf(w.get(2))).toEqual([7, 7, 0]);
    expect(w.counters.reordered).toBe(1);
    expect(w.counters.staleRecords).toBe(1);
    expect(w.ack()).toEqual({ ack: 12, ackBits: 0b11 });
  });

  it('a late update never resurrects a newer despawn; a late despawn never removes a newer spawn', () => {
    const w = new ClientWorld(config);
    w.receive(packet(0, [], [{ id: 1, x: 1, y: 1 }, { id: 2, x: 2, y: 2 }]));
    // 1 despawned at 3 (arrives first), updated at 2 (arrives late)
    w.receive(packet(3, [1], []));
    w.receive(packet(2, [], [{ id: 1, x: 9, y: 9 }]));
    expect(w.get(1)).toBeUndefined();
    // 2 despawned at 4 (arrives late), respawned at 5 (arrives first)
    w.receive(packet(5, [], [{ id: 2, x: 5, y: 5 }]));
    w.receive(packet(4, [2], []));
    expect(rawOf(w.get(2))).toEqual([5, 5, 0]);
    // a despawn for an id never held is a no-op, and still wins over an older update arriving later
    w.receive(packet(7, [3], []));
    w.receive(packet(6, [], [{ id: 3, x: 6, y: 6 }]));
    expect(w.get(3)).toBeUndefined();
    expect(w.counters.unknownDespawns).toBe(1);
    expect(w.counters.staleRecords).toBe(3);
    expect(w.ack()).toEqual({ ack: 7, ackBits: 0b1011111 });
  });

  it('by default a packet more than 32 sequences older than the newest is stale (the engine has written it off)', () => {
    const w = new ClientWorld(config);
    w.receive(packet(100, [], [{ id: 1, x: 1, y: 1 }]));
    expect(w.receive(packet(68, [], [{ id: 2, x: 1, y: 1 }]))).toBe('applied');
    expect(w.receive(packet(67, [], [{ id: 3, x: 1, y: 1 }]))).toBe('stale');
    expect(w.get(3)).toBeUndefined();
    expect(w.ack()).toEqual({ ack: 100, ackBits: 0x80000000 });
  });

  it('duplicates are ignored whole; packets more than maxLateness old are stale', () => {
    const w = new ClientWorld(config, { maxLateness: 39 });
    const p = packet(100, [], [{ id: 1, x: 1, y: 1 }]);
    expect(w.receive(p)).toBe('applied');
    expect(w.receive(p)).toBe('duplicate');
    w.receive(packet(101, [1], []));
    expect(w.receive(p)).toBe('duplicate');
    expect(w.get(1)).toBeUndefined();
    expect(w.receive(packet(61, [], [{ id: 5, x: 1, y: 1 }]))).toBe('stale');
    expect(w.receive(packet(62, [], [{ id: 5, x: 1, y: 1 }]))).toBe('applied');
    expect(w.counters).toMatchObject({ duplicates: 2, stale: 1 });
  });

  it('sequences wrap at 65536', () => {
    const w = new ClientWorld(config);
    w.receive(packet(65534, [], [{ id: 1, x: 1, y: 1 }]));
    w.receive(packet(1, [], [{ id: 1, x: 3, y: 3 }]));
    w.receive(packet(65535, [], [{ id: 1, x: 2, y: 2 }]));
    w.receive(packet(0, [1], []));
    // seq 0 (despawn) is older than seq 1 (update): the entity stays
    expect(rawOf(w.get(1))).toEqual([3, 3, 0]);
    expect(w.ack()).toEqual({ ack: 1, ackBits: 0b111 });
    expect(w.received(65534)).toBe(true);
    expect(w.received(65533)).toBe(false);
    expect(w.received(2)).toBe(false);
  });

  it('ack bits cover exactly the 32 sequences before the newest', () => {
    const w = new ClientWorld(config);
    const got = new Set<number>();
    const r = rng(3);
    for (let s = 0; s < 300; s++) {
      if (r() < 0.7) {
        w.receive(packet(s, [], []));
        got.add(s);
      }
    }
    const a = w.ack()!;
    for (let i = 0; i < 32; i++) {
      expect(((a.ackBits >>> i) & 1) === 1, `bit ${i}`).toBe(got.has(a.ack - 1 - i));
    }
    const token = Uint8Array.of(9, 8, 7, 6, 5, 4, 3, 2);
    const bytes = w.encodeAck(token)!;
    expect(decodeControl(bytes)).toEqual({ type: MSG_ACK, token, ack: a.ack, ackBits: a.ackBits });
  });

  it('malformed datagrams are counted and change nothing', () => {
    const w = new ClientWorld(config);
    w.receive(packet(0, [], [{ id: 1, x: 1, y: 1 }]));
    const good = packet(1, [], [{ id: 1, x: 2, y: 2 }]);
    for (let n = 0; n < good.length; n++) expect(w.receive(good.slice(0, n))).toBe('malformed');
    expect(w.receive(new Uint8Array(2000))).toBe('malformed');
    expect(w.lastError?.code).toMatch(/^ERR_SIGHTLINE_PACKET_/);
    expect(w.counters.malformed).toBe(good.length + 1);
    expect(rawOf(w.get(1))).toEqual([1, 1, 0]);
    expect(w.ack()).toEqual({ ack: 0, ackBits: 0 });
  });

  it('a throwing listener does not stop the packet: the first error is rethrown after it is applied', () => {
    const w = new ClientWorld(config, {
      onSpawn: (id) => {
        if (id === 1) throw new Error('boom');
      },
    });
    expect(() => w.receive(packet(0, [], [{ id: 1, x: 1, y: 1 }, { id: 2, x: 2, y: 2 }]))).toThrow('boom');
    expect(w.size).toBe(2);
    expect(w.ack()).toEqual({ ack: 0, ackBits: 0 });
  });

  it('delivers each reliable event once, in order, through repeats, reordering and wrap', () => {
    const got: string[] = [];
    const w = new ClientWorld(config, { onEvent: (seq, bytes) => got.push(`${seq}:${Array.from(bytes).join(',')}`) });
    w.receive(packet(1, [], [], 1, { first: 65534, payloads: [[1], [2, 2]] }));
    w.receive(packet(3, [], [], 3, { first: 65535, payloads: [[2, 2], [3], [4]] })); // 65535, 0, 1
    w.receive(packet(2, [], [], 2, { first: 65534, payloads: [[1], [2, 2], [3]] })); // late: all repeats
    w.receive(packet(3, [], [], 3, { first: 65535, payloads: [[2, 2], [3], [4]] })); // duplicate packet
    w.receive(packet(4, [], [], 4, { first: 1, payloads: [[4], [5]] }));
    expect(got).toEqual(['65534:1', '65535:2,2', '0:3', '1:4', '2:5']);
    expect(w.counters).toMatchObject({ events: 5, repeatedEvents: 5, skippedEvents: 0, duplicates: 1 });
    // The server stopped resending 3 and 4 (taken as delivered): counted, and delivery goes on.
    w.receive(packet(5, [], [], 5, { first: 5, payloads: [[6]] }));
    expect(got.at(-1)).toBe('5:6');
    expect(w.counters.skippedEvents).toBe(2);
  });

  it('checks its options', () => {
    expect(() => new ClientWorld(config, { maxLateness: -1 })).toThrow(SightlineError);
    expect(() => new ClientWorld(config, { payloadBytes: 70000 })).toThrow(SightlineError);
    expect(() => new ClientWorld(null as unknown as WorldConfig)).toThrow(SightlineError);
  });

  it('null options mean defaults; other non-objects and layouts without numeric fields are ERR_SIGHTLINE_INVALID_ARGUMENT', () => {
    const w = new ClientWorld(config, null);
    expect(w.maxLateness).toBe(32);
    w.receive(packet(0, [], [{ id: 7, x: 1024, y: 2048 }]));
    expect(w.get(7)).toMatchObject({ x: 1, y: 2, z: 0 });
    for (const options of [5, 'x', true, [], [1], new Date(0), new Map()]) {
      expect(() => new ClientWorld(config, options as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    // A misspelt key is an error, not a silently kept default; so is a listener that is not a function.
    expect(() => new ClientWorld(config, { maxLatenes: 100 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
    expect(() => new ClientWorld(config, { onSpawn: 5 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    for (const layout of [{}, { regionRaw: config.regionRaw }, { ...config, zBits: '20' }]) {
      expect(() => new ClientWorld(layout as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(() => new ClientWorld({} as never)).toThrow('layout.regionRaw must be an integer from 0 to 2^32 - 1');
  });
});

// ---------------------------------------------------------------------------------------------
// Over the lossy link, against the engine.

/** A ClientWorld that keeps a copy of every packet it applied. */
class RecordingClient extends ClientWorld {
  readonly log: Uint8Array[] = [];
  override receive(bytes: Uint8Array) {
    const copy = bytes.slice();
    const status = super.receive(bytes);
    if (status === 'applied') this.log.push(copy);
    return status;
  }
}

interface Game {
  world: World;
  link: LossyLink;
  clients: Map<EntityId, RecordingClient>;
  step(): Promise<void>;
}

function game(seed: number, conditions: { loss: number; duplicate: number; maxDelay: number }): Game {
  const r = mulberry32(seed);
  const world = new World(config, { capacity: 4096, threads: 1, recordGhostPositions: true });
  const center = 2048;
  const spread = 420;
  const entities: EntityId[] = [];
  const heading = new Map<EntityId, number>();
  const spawnOne = () => {
    const id = world.spawn({ x: center - spread / 2 + r() * spread, y: center - spread / 2 + r() * spread, z: 0 });
    entities.push(id);
    // Half the entities stand still: they are sent once and never again unless acks say it was lost.
    if (r() < 0.5) heading.set(id, r() * 2 * Math.PI);
  };
  for (let i = 0; i < 500; i++) spawnOne();

  const avatars: EntityId[] = [];
  const link = new LossyLink({
    ...conditions,
    seed,
    world,
    onConnect: () => {
      const id = world.spawn({ x: center - 150 + r() * 300, y: center - 150 + r() * 300, z: 0 });
      world.addViewer(id, { acks: true });
      avatars.push(id);
      heading.set(id, r() * 2 * Math.PI);
      return id;
    },
  });
  const clients = new Map<EntityId, RecordingClient>();
  for (let i = 0; i < 4; i++) {
    const c = new RecordingClient(config);
    clients.set(link.connect(`client-${i}`, c), c);
  }

  const { x, y } = world.positions;
  const step = async () => {
    // Movement: walkers at 3 m/s (0.15 m per tick), turning slowly; avatars at 8 m/s.
    for (const [id, h] of heading) {
      const s = world.slotOf(id);
      const speed = avatars.includes(id) ? 0.4 : 0.15;
      const nh = h + (r() - 0.5) * 0.3;
      heading.set(id, nh);
      const nx = x[s] + Math.round(Math.cos(nh) * speed * 1024);
      const ny = y[s] + Math.round(Math.sin(nh) * speed * 1024);
      x[s] = Math.min(Math.max(nx, (center - spread) * 1024), (center + spread) * 1024);
      y[s] = Math.min(Math.max(ny, (center - spread) * 1024), (center + spread) * 1024);
    }
    // Churn: two despawns and two spawns per tick.
    for (let k = 0; k < 2; k++) {
      const i = Math.floor(r() * entities.length);
      const id = entities[i];
      entities[i] = entities[entities.length - 1];
      entities.pop();
      heading.delete(id);
      world.despawn(id);
      spawnOne();
    }
    const result = await world.tick();
    link.sendTick(result);
    link.step();
  };
  return { world, link, clients, step };
}

// Ghost state 2: its despawn was sent and is not acknowledged yet; the client should not hold it.
const DESPAWN_SENT = 2;
const NOT_HELD = 3;

/**
 * Differences between a client's world and the server's ghost table of its viewer (empty:
 * converged): the client holds every ghost the server believes it holds, at the position last
 * sent, and nothing else.
 */
function mismatches(world: World, viewer: EntityId, client: ClientWorld): string[] {
  const g = world.ghosts(viewer);
  const gx = g.x!;
  const gy = g.y!;
  const gz = g.z!;
  const out: string[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < g.ids.length; i++) {
    const id = g.ids[i];
    if (g.state[i] === DESPAWN_SENT || g.state[i] === NOT_HELD) continue;
    seen.add(id);
    const e = client.get(id);
    if (e === undefined) out.push(`missing ${id}`);
    else if (e.rawX !== gx[i] || e.rawY !== gy[i] || e.rawZ !== gz[i])
      out.push(`entity ${id} at (${e.rawX}, ${e.rawY}, ${e.rawZ}), server sent (${gx[i]}, ${gy[i]}, ${gz[i]})`);
  }
  for (const id of client.entities.keys()) if (!seen.has(id)) out.push(`extra ${id}`);
  return out;
}

/** The world an in-order client would hold after the same packets, each sequence applied once. */
function replayInOrder(log: Uint8Array[]): Map<number, [number, number, number]> {
  const bySeq = new Map<number, Uint8Array>();
  for (const b of log) bySeq.set(b[2] | (b[3] << 8), b);
  const plain = new ClientWorld(config);
  for (const seq of [...bySeq.keys()].sort((a, b) => a - b)) plain.receive(bySeq.get(seq)!);
  const m = new Map<number, [number, number, number]>();
  for (const [id, e] of plain.entities) m.set(id, [e.rawX, e.rawY, e.rawZ]);
  return m;
}

function heldRaw(c: ClientWorld): Map<number, [number, number, number]> {
  const m = new Map<number, [number, number, number]>();
  for (const [id, e] of c.entities) m.set(id, [e.rawX, e.rawY, e.rawZ]);
  return m;
}

const LOSSY_TICKS = 80;
// After the link turns clean, every client matches its ghost table within this many ticks.
const CONVERGENCE_BOUND = 200;

async function convergence(seed: number, loss: number, maxDelay = 4): Promise<{ ticks: number; game: Game }> {
  const g = game(seed, { loss, duplicate: 0.05, maxDelay });
  for (let t = 0; t < LOSSY_TICKS; t++) await g.step();
  expect(g.link.counters.delivered).toBeGreaterThan(0);
  if (loss > 0) expect(g.link.counters.lost).toBeGreaterThan(0);
  expect(g.link.counters.duplicated).toBeGreaterThan(0);
  for (const c of g.clients.values()) expect(c.counters.reordered).toBeGreaterThan(0);

  // The loss stops: the link turns clean and what is still in flight arrives.
  g.link.setConditions({});
  g.link.flush();
  for (let t = 0; t <= CONVERGENCE_BOUND; t++) {
    if (t > 0) await g.step();
    let all = true;
    for (const [viewer, c] of g.clients) if (mismatches(g.world, viewer, c).length > 0) all = false;
    if (all) return { ticks: t, game: g };
  }
  const report: string[] = [];
  for (const [viewer, c] of g.clients) report.push(`viewer ${viewer}: ${mismatches(g.world, viewer, c).slice(0, 5).join('; ')}`);
  throw new Error(`no convergence within ${CONVERGENCE_BOUND} ticks of the loss stopping:\n${report.join('\n')}`);
}

describe('ClientWorld over the lossy link', () => {
  it('0% loss with reordering and duplication: every client matches the ghost table as soon as the link drains', async () => {
    for (const seed of [1, 2, 3]) {
      await withSeed(seed, async () => {
        const { ticks, game: g } = await convergence(seed, 0);
        expect(ticks).toBe(0);
        // And it stays converged tick after tick on a clean link.
        for (let t = 0; t < 10; t++) {
          await g.step();
          for (const [viewer, c] of g.clients) expect(mismatches(g.world, viewer, c)).toEqual([]);
        }
        for (const c of g.clients.values()) {
          expect(c.counters.duplicates).toBeGreaterThan(0);
          expect(c.counters.unknownDespawns).toBe(0);
        }
      });
    }
  });

  for (const loss of [0.05, 0.2]) {
    it(`${loss * 100}% loss: out-of-order delivery gives exactly the world in-order delivery of the same packets gives`, async () => {
      await withSeed(11, async (seed) => {
        const g = game(seed, { loss, duplicate: 0.05, maxDelay: 3 });
        for (let t = 0; t < LOSSY_TICKS; t++) {
          await g.step();
          if (t % 20 === 19) for (const c of g.clients.values()) expect(heldRaw(c)).toEqual(replayInOrder(c.log));
        }
        g.link.flush();
        for (const c of g.clients.values()) {
          expect(heldRaw(c)).toEqual(replayInOrder(c.log));
          // The ack names exactly the sequences delivered.
          const a = c.ack()!;
          const delivered = new Set(c.log.map((b) => b[2] | (b[3] << 8)));
          for (let i = 0; i < 32; i++) expect(((a.ackBits >>> i) & 1) === 1).toBe(delivered.has((a.ack - 1 - i) & 0xffff));
        }
        expect(g.link.counters.lost).toBeGreaterThan(0);
        expect(g.link.counters.acks).toBeGreaterThan(0);
      });
    });

    // Convergence after loss needs the engine to act on acks (a lost record regains priority).
    it.skipIf(!hasAcknowledge)(
      `${loss * 100}% loss with reordering: after the loss stops every client converges to the ghost table within ${CONVERGENCE_BOUND} ticks`,
      async () => {
        for (const seed of [1, 2, 3, 4]) {
          await withSeed(seed, async () => {
            const { ticks } = await convergence(seed, loss);
            expect(ticks).toBeLessThanOrEqual(CONVERGENCE_BOUND);
          });
        }
      },
    );
  }

  it.skipIf(!hasAcknowledge)(
    'a despawn lost, then the re-announcement lost: the client is still told to drop the entity',
    async () => {
      // The viewer stands at (1000, 1000); the entity steps across the view radius (256 m) and back.
      const world = new World(config, { capacity: 16, threads: 1, recordGhostPositions: true });
      const viewer = world.spawn({ x: 1000, y: 1000, z: 0 });
      const target = world.spawn({ x: 1000 + 255, y: 1000, z: 0 });
      let lostDespawn = false;
      let lostAnnounce = false;
      const link = new LossyLink({
        world,
        onConnect: () => {
          world.addViewer(viewer, { acks: true });
          return viewer;
        },
        drop: (_v, bytes) => {
          const p = decodePacketRaw(bytes, config);
          if (!lostDespawn && Array.from(p.despawns.subarray(0, p.despawnCount)).includes(target)) return (lostDespawn = true);
          if (lostDespawn && !lostAnnounce && Array.from(p.ids.subarray(0, p.updateCount)).includes(target)) return (lostAnnounce = true);
          return false;
        },
      });
      const client = new ClientWorld(config);
      link.connect('c', client);
      const tick = async () => {
        link.sendTick(await world.tick());
        link.step();
      };
      for (let t = 0; t < 3; t++) await tick();
      expect(client.get(target)).toBeDefined();
      world.setPosition(target, { x: 1000 + 257, y: 1000, z: 0 }); // out of view
      for (let t = 0; t < 30 && !lostDespawn; t++) await tick();
      expect(lostDespawn).toBe(true);
      world.setPosition(target, { x: 1000 + 255, y: 1000, z: 0 }); // back in view before the loss is known
      await tick();
      expect(lostAnnounce).toBe(true);
      world.setPosition(target, { x: 1000 + 257, y: 1000, z: 0 }); // and out for good
      for (let t = 0; t < 40; t++) await tick();
      expect(mismatches(world, viewer, client)).toEqual([]);
      expect(client.get(target)).toBeUndefined();
    },
  );

  it.skipIf(!hasAcknowledge)(
    'a ghost forgotten and re-announced: the certain loss of its first announcement does not forget the new one',
    async () => {
      // The viewer stands at (1000, 1000); the entity steps across the view radius (256 m).
      const world = new World(config, { capacity: 16, threads: 1, recordGhostPositions: true });
      const viewer = world.spawn({ x: 1000, y: 1000, z: 0 });
      const target = world.spawn({ x: 1000 + 255, y: 1000, z: 0 });
      let first = -1;
      const link = new LossyLink({
        world,
        onConnect: () => {
          world.addViewer(viewer, { acks: true });
          return viewer;
        },
        // The packet that first announces the entity is lost.
        drop: (_v, bytes) => {
          if (first >= 0) return false;
          const p = decodePacketRaw(bytes, config);
          if (!Array.from(p.ids.subarray(0, p.updateCount)).includes(target)) return false;
          first = p.sequence;
          return true;
        },
      });
      const client = new ClientWorld(config);
      link.connect('c', client);
      const tick = async () => {
        link.sendTick(await world.tick());
        link.step();
      };
      await tick();
      expect(first).toBe(0);
      world.setPosition(target, { x: 1000 + 257, y: 1000, z: 0 }); // out of view: evicted, despawned
      while (world.ghosts(viewer).sequence < first + 33) await tick();
      expect(Array.from(world.ghosts(viewer).ids)).not.toContain(target);
      world.setPosition(target, { x: 1000 + 255, y: 1000, z: 0 }); // back: announced again in packet first + 33
      await tick();
      expect(client.get(target)).toBeDefined();
      world.setPosition(target, { x: 1000 + 257, y: 1000, z: 0 }); // and out for good
      for (let t = 0; t < 40; t++) await tick();
      expect(mismatches(world, viewer, client)).toEqual([]);
      expect(client.get(target)).toBeUndefined();
    },
  );

  it.skipIf(!hasAcknowledge)('20% loss with reordering and duplication: every event reaches its client once, in order', async () => {
    const c = WorldConfig.build({ eventReserveBytes: 64 });
    const world = new World(c, { capacity: 256, threads: 1 });
    const r = mulberry32(21);
    for (let i = 0; i < 150; i++) world.spawn({ x: 900 + r() * 200, y: 900 + r() * 200, z: 0 });
    const link = new LossyLink({
      loss: 0.2,
      duplicate: 0.05,
      maxDelay: 4,
      seed: 21,
      world,
      onConnect: () => {
        const id = world.spawn({ x: 1000, y: 1000, z: 0 });
        world.addViewer(id, { acks: true });
        return id;
      },
    });
    const received = new Map<EntityId, number[]>();
    const views = new Map<EntityId, ClientWorld>();
    for (let i = 0; i < 3; i++) {
      const log: number[] = [];
      const view = new ClientWorld(c, { onEvent: (_seq, bytes) => log.push(new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true)) });
      const viewer = link.connect(`c${i}`, view);
      received.set(viewer, log);
      views.set(viewer, view);
    }
    const sent = new Map<EntityId, number[]>([...received.keys()].map((v) => [v, []]));
    let n = 0;
    for (let t = 0; t < 100; t++) {
      if (t < 80) {
        for (const [viewer, list] of sent) {
          if (r() < 0.6) {
            const payload = new Uint8Array(4);
            new DataView(payload.buffer).setUint32(0, ++n, true);
            world.emit(payload, { viewer });
            list.push(n);
          }
        }
      }
      if (t === 80) link.setConditions({});
      link.sendTick(await world.tick());
      link.step();
    }
    for (const [viewer, list] of sent) {
      expect(received.get(viewer)).toEqual(list);
      expect(views.get(viewer)!.counters.skippedEvents).toBe(0);
    }
    expect(link.counters.lost).toBeGreaterThan(0);
    expect([...views.values()].some((v) => v.counters.repeatedEvents > 0)).toBe(true);
  });

  it('the link reports sessions and counts what it does', async () => {
    const disconnects: string[] = [];
    const world = new World(config, { capacity: 64, threads: 1 });
    const link = new LossyLink({
      onConnect: () => {
        const id = world.spawn({ x: 100, y: 100, z: 0 });
        world.addViewer(id);
        return id;
      },
      onDisconnect: (viewer, reason) => disconnects.push(`${viewer} ${reason}`),
    });
    for (let i = 0; i < 5; i++) world.spawn({ x: 100 + i, y: 101, z: 0 });
    const a = link.connect('a', new ClientWorld(config));
    const b = link.connect('b', new ClientWorld(config));
    link.sendTick(await world.tick());
    link.step();
    expect(link.counters).toMatchObject({ packetsSent: 2, delivered: 2, acks: 2, connects: 2 });
    expect(link.disconnect(a)).toBe(true);
    expect(link.disconnect(a)).toBe(false);
    link.sendTick(await world.tick());
    expect(link.counters.packetsUnrouted).toBe(1);
    await link.close();
    expect(disconnects).toEqual([`${a} kicked`, `${b} closed`]);
  });

  it('a client that acknowledges nothing for its first packets, under loss and churn, keeps at most despawnsNotResent entities the server dropped', async () => {
    // No ACK reaches the server for `silent` ticks while 30% of packets are lost and one entity near
    // the viewer is replaced each tick; then the link turns clean and the world quiet.
    const run = async (silent: number) => {
      const config = WorldConfig.build({ regionSize: 256, viewRadius: 64, ghostCap: 16, graceTicks: 2 });
      const world = new World(config, { capacity: 2000, threads: 1 });
      const r = mulberry32(1);
      const live = new Set<EntityId>();
      const spawnNear = () => live.add(world.spawn({ x: 100 + r() * 56, y: 100 + r() * 56, z: 0 }));
      const avatar = world.spawn({ x: 128, y: 128, z: 0 });
      for (let i = 0; i < 20; i++) spawnNear();
      const client = new ClientWorld(config);
      const link = new LossyLink({ world, seed: 1, loss: 0.3, ackLoss: 1, onConnect: () => (world.addViewer(avatar, { acks: true }), avatar) });
      link.connect('c', client);
      for (let t = 0; t < silent; t++) {
        const gone = [...live][Math.floor(r() * live.size)];
        world.despawn(gone);
        live.delete(gone);
        spawnNear();
        link.sendTick(await world.tick());
        link.step();
      }
      link.setConditions({});
      for (let t = 0; t < 100; t++) {
        link.sendTick(await world.tick());
        link.step();
      }
      const ghosts = new Set(world.ghosts(avatar)!.ids);
      const held = [...client.entities.keys()];
      const extras = held.filter((id) => !ghosts.has(id));
      for (const id of extras) expect(world.isLive(id)).toBe(false);  // only entities the server despawned
      for (const id of ghosts) expect(client.get(id)).toBeDefined();  // and nothing missing
      const stats = world.ackStats(avatar)!;
      world.close();
      return { extras: extras.length, notResent: stats.despawnsNotResent };
    };
    // Within the log's 64 packets, the first ACK repairs everything.
    expect(await run(60)).toEqual({ extras: 0, notResent: 0 });
    // Beyond what the despawn queues keep, leftovers remain, and the counter bounds them.
    const long = await run(400);
    expect(long.extras).toBeGreaterThan(0);
    expect(long.extras).toBeLessThanOrEqual(long.notResent);
  });

  it('sendTick of something that is not a TickResult is ERR_SIGHTLINE_INVALID_ARGUMENT and sends nothing', async () => {
    const world = new World(config, { capacity: 8, threads: 1 });
    const link = new LossyLink({
      onConnect: () => {
        const id = world.spawn({ x: 100, y: 100, z: 0 });
        world.addViewer(id);
        return id;
      },
    });
    link.connect('a', new ClientWorld(config));
    const before = { ...link.counters };
    for (const bad of [null, undefined, 5, {}, { count: 1 }, { count: -1, viewerAt: () => 0, bytesAt: () => new Uint8Array(0) }]) {
      expect(() => link.sendTick(bad as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(link.counters).toEqual(before);
    expect(link.sendTick(await world.tick())).toBe(1);
    // Conditions are an object of probabilities and a delay; anything else is refused and changes nothing.
    for (const bad of [undefined, null, 5, { loss: 2 }, { maxDelay: -1 }, [], new Date(0)]) {
      expect(() => link.setConditions(bad as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(() => link.setConditions({ los: 0.5 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
  });

  it('LossyLink options: a misspelt key is ERR_SIGHTLINE_UNKNOWN_OPTION; arrays, Dates and listeners that are not functions are refused', () => {
    const onConnect = () => 0;
    expect(() => new LossyLink({ onConnect, los: 0.5 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
    for (const bad of [[], Object.assign([], { onConnect }), new Date(0), null, 5]) {
      expect(() => new LossyLink(bad as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(() => new LossyLink({ onConnect, onAck: 'x' } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => new LossyLink({ onConnect: 5 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    class Listener {
      readonly seen = 0; // a field of its own: not an option, allowed on a class instance
      onConnect(): number {
        return 0;
      }
    }
    expect(() => new LossyLink(new Listener())).not.toThrow();
  });
});
