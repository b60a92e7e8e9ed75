// Test oracles: a seeded PRNG, a model client built only from decoded packets, and brute-force
// twins of the engine's spatial structures.
import { decodePacketRaw, createRawPacket, type RawPacket } from '../../lib/decode.js';
import type { WorldConfig } from '../../lib/config.js';
import { SightlineError } from '../../lib/errors.js';
import { mulberry32 } from '../../lib/random.js';
import type { World, TickResult } from '../../lib/world.js';

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export const rng = mulberry32;

export function randInt(r: () => number, lo: number, hiExclusive: number): number {
  return lo + Math.floor(r() * (hiExclusive - lo));
}

/** The code of the SightlineError fn throws (a throw of anything else fails), or undefined if it returns. */
export function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof SightlineError)) throw e;
    return e.code;
  }
  return undefined;
}

/** Runs fn(seed) and rethrows any failure with the seed in the message. */
export async function withSeed(seed: number, fn: (seed: number) => void | Promise<void>): Promise<void> {
  try {
    await fn(seed);
  } catch (e) {
    const err = e as Error;
    err.message = `[seed ${seed}] ${err.message}`;
    throw err;
  }
}

/** What one client holds, rebuilt from nothing but the packets it received. */
export class ModelClient {
  readonly held = new Map<number, { x: number; y: number; z: number }>();
  lastSequence = -1;
  despawnsReceived = 0;
  updatesReceived = 0;
  readonly #scratch: RawPacket;

  constructor(readonly config: WorldConfig, payloadBytes = config.payloadBytes) {
    this.#scratch = createRawPacket(payloadBytes);
  }

  /** Applies one packet; throws if the server sent a despawn for something this client never held. */
  apply(bytes: Uint8Array): RawPacket {
    const p = decodePacketRaw(bytes, this.config, this.#scratch);
    if (this.lastSequence >= 0 && p.sequence !== ((this.lastSequence + 1) & 0xffff)) {
      throw new Error(`sequence jumped from ${this.lastSequence} to ${p.sequence}`);
    }
    this.lastSequence = p.sequence;
    for (let i = 0; i < p.despawnCount; i++) {
      const id = p.despawns[i];
      if (!this.held.delete(id)) throw new Error(`despawn for entity ${id}, which the client does not hold`);
    }
    for (let i = 0; i < p.updateCount; i++) {
      this.held.set(p.ids[i], { x: p.x[i], y: p.y[i], z: p.z[i] });
    }
    this.despawnsReceived += p.despawnCount;
    this.updatesReceived += p.updateCount;
    return p;
  }
}

/** Applies every packet of a tick to the model clients (creating them as viewers appear). */
export function deliver(result: TickResult, clients: Map<number, ModelClient>, config: WorldConfig): void {
  for (const p of result.packets) {
    let c = clients.get(p.viewer);
    if (!c) clients.set(p.viewer, (c = new ModelClient(config)));
    c.apply(p.bytes);
  }
}

/** The server's ghost table of a viewer, as a map id -> raw position. */
export function serverGhosts(world: World, viewer: number): Map<number, { x: number; y: number; z: number }> {
  const g = world.ghosts(viewer);
  if (!g.x || !g.y || !g.z) throw new Error('create the world with recordGhostPositions: true');
  const m = new Map<number, { x: number; y: number; z: number }>();
  for (let i = 0; i < g.ids.length; i++) m.set(g.ids[i], { x: g.x[i], y: g.y[i], z: g.z[i] });
  return m;
}

/** Brute force: every live entity within the view radius (2D, inclusive) of (x, y) raw. */
export function bruteRadius(world: World, ids: number[], x: number, y: number, exclude = -1): Set<number> {
  const { x: xs, y: ys } = world.positions;
  const r2 = world.config.viewRadiusRaw ** 2;
  const region = world.config.regionRaw;
  const out = new Set<number>();
  for (const id of ids) {
    if (id === exclude || !world.isLive(id)) continue;
    const s = world.slotOf(id);
    if (xs[s] < 0 || ys[s] < 0 || xs[s] >= region || ys[s] >= region) continue;
    const dx = xs[s] - x;
    const dy = ys[s] - y;
    if (dx * dx + dy * dy <= r2) out.add(id);
  }
  return out;
}

/** A client's acknowledgement: the newest sequence received and a bit per each of the 32 before it. */
export function ackOf(received: Set<number>, newest: number): [number, number] {
  let bits = 0;
  for (let i = 0; i < 32; i++) if (received.has((newest - 1 - i) & 0xffff)) bits |= 1 << i;
  return [newest, bits >>> 0];
}
