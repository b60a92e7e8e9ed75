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

/** The code of the error f throws ('no error' when it returns). */
export function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return (e as { code: string }).code;
  }
  return 'no error';
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

/**
 * What one client holds, rebuilt from nothing but the packets it received: positions (`held`),
 * and beside them the raw fields of each held entity's last record, its kind (0 until a kind
 * record came) and its newest attributes. Throws on what a correct server never sends: a sequence
 * gap, a despawn of an entity the client does not hold, a kind record without an update (the
 * decoder refuses those), attributes of an entity the client does not hold, or attributes older
 * than those it holds.
 */
export class ModelClient {
  readonly held = new Map<number, { x: number; y: number; z: number }>();
  readonly fields = new Map<number, number[]>();
  readonly kinds = new Map<number, number>();
  readonly attributes = new Map<number, { version: number; bytes: Uint8Array }>();
  lastSequence = -1;
  despawnsReceived = 0;
  updatesReceived = 0;
  kindRecordsReceived = 0;
  /** Attribute entries received, and those that carried a version the client held already. */
  attributeEntriesReceived = 0;
  attributeRepeats = 0;
  /** Per entity, the attribute versions applied, in order (each applied once). */
  readonly attributeHistory = new Map<number, number[]>();
  /** Per entity, the sequence of the packet that first showed it since it was last despawned. */
  readonly sightedAt = new Map<number, number>();
  readonly #scratch: RawPacket;

  constructor(readonly config: WorldConfig, payloadBytes = config.payloadBytes) {
    this.#scratch = createRawPacket(payloadBytes);
  }

  /** Applies one packet; throws if the server sent something a correct server never sends (above). */
  apply(bytes: Uint8Array): RawPacket {
    const p = decodePacketRaw(bytes, this.config, this.#scratch);
    if (this.lastSequence >= 0 && p.sequence !== ((this.lastSequence + 1) & 0xffff)) {
      throw new Error(`sequence jumped from ${this.lastSequence} to ${p.sequence}`);
    }
    this.lastSequence = p.sequence;
    for (let i = 0; i < p.despawnCount; i++) {
      const id = p.despawns[i];
      if (!this.held.delete(id)) throw new Error(`despawn for entity ${id}, which the client does not hold`);
      this.fields.delete(id);
      this.kinds.delete(id);
      this.attributes.delete(id);
      this.sightedAt.delete(id);
    }
    const fc = p.fieldCount;
    for (let i = 0; i < p.updateCount; i++) {
      const id = p.ids[i];
      if (!this.held.has(id)) {
        this.kinds.set(id, 0);
        this.sightedAt.set(id, p.sequence);
      }
      this.held.set(id, { x: p.x[i], y: p.y[i], z: p.z[i] });
      if (fc > 0) this.fields.set(id, Array.from(p.fields.subarray(i * fc, i * fc + fc)));
    }
    for (let i = 0; i < p.kindCount; i++) this.kinds.set(p.kindIds[i], p.kinds[i]);
    for (let i = 0; i < p.attributeCount; i++) {
      const id = p.attributeIds[i];
      const version = p.attributeVersions[i];
      if (!this.held.has(id)) throw new Error(`attributes (version ${version}) for entity ${id}, which the client does not hold`);
      const had = this.attributes.get(id);
      this.attributeEntriesReceived++;
      if (had !== undefined && ((version - had.version) | 0) < 0)
        throw new Error(`attributes of entity ${id}: version ${version} after the newer ${had.version}`);
      if (had !== undefined && had.version === version) {
        this.attributeRepeats++;
        if (!bytesEqual(had.bytes, p.attributes[i])) throw new Error(`attributes of entity ${id}: version ${version} with other bytes`);
        continue;
      }
      this.attributes.set(id, { version, bytes: new Uint8Array(p.attributes[i]) });
      const h = this.attributeHistory.get(id) ?? [];
      h.push(version);
      this.attributeHistory.set(id, h);
    }
    this.despawnsReceived += p.despawnCount;
    this.updatesReceived += p.updateCount;
    this.kindRecordsReceived += p.kindCount;
    return p;
  }
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
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
