// The entities of a World (world.ts) and the engine under them: spawn and despawn, positions (zero
// copy), fields, kinds, attributes, visibility groups and priorities. WorldViewers
// (world-viewers.ts) adds the viewers on top of it, World the tick.
import { markAsUntransferable } from 'node:worker_threads';
import { native, type NativeWorld } from './binding.js';
import { WorldConfig } from './config.js';
import { readCongestion, type CongestionOptions } from './congestion.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { toMeters } from './fixed.js';
import { groupsMask, priorityWeight } from './interest.js';
import { checkAttributes, checkKind, checkVec3, readBoolean, rethrow } from './validate.js';
import type { EntityId, Fields, PositionInput, Positions, SpawnOptions, Vec3, WorldOptions } from './world-types.js';

// Members the layers of a World share, keyed by symbols the package does not export (nor its
// type declarations: they are @internal).
/** @internal */
export const ENGINE = Symbol('engine');
/** @internal */
export const REQUIRE_OPEN = Symbol('requireOpen');
/** @internal */
export const CLOSE_ENGINE = Symbol('closeEngine');
/** @internal */
export const CAMERAS = Symbol('cameras');

const WORLD_OPTIONS = ['capacity', 'threads', 'externalBuffers', 'recordGhostPositions', 'congestion'] as const;
const SPAWN_OPTIONS = ['kind', 'attributes'] as const;

/** @internal A World's options, every one checked (congestion's too) before the engine is made. */
export interface WorldSetup {
  capacity: number;
  threads: number;
  externalBuffers: boolean;
  recordGhostPositions: boolean;
  congestion: Required<CongestionOptions> | null;
}

/**
 * @internal Checks a World's config and options (see the World constructor for the errors), in
 * the order the constructor documents, before anything is made.
 */
export function readWorldSetup(config: WorldConfig, options: WorldOptions | null | undefined): WorldSetup {
  if (!WorldConfig.isBuilt(config)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `config must be a WorldConfig (use WorldConfig.build()), received ${describe(config)}`);
  }
  const o = readOptions('World', options, WORLD_OPTIONS);
  const capacity = o.capacity === undefined ? 65_536 : o.capacity;
  const threads = o.threads === undefined ? 0 : o.threads;
  if (typeof capacity !== 'number' || !Number.isInteger(capacity) || capacity < 1 || capacity > 1 << 20) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_CAPACITY', `capacity must be an integer from 1 to 1048576, received ${describe(capacity)}`);
  }
  if (typeof threads !== 'number' || !Number.isInteger(threads) || threads < 0 || threads > 256) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_THREADS', `threads must be an integer from 0 (all cores) to 256, received ${describe(threads)}`);
  }
  const externalBuffers = readBoolean('externalBuffers', o.externalBuffers, true);
  const recordGhostPositions = readBoolean('recordGhostPositions', o.recordGhostPositions, false);
  const congestion = o.congestion === undefined ? null : readCongestion(o.congestion);
  return { capacity, threads, externalBuffers, recordGhostPositions, congestion };
}

/**
 * The entities of a {@link World} and the engine that holds them; not made on its own (make a
 * World). Its members are the World's.
 */
export class WorldEntities {
  readonly config: WorldConfig;
  /** Raw Int32 positions by slot; see {@link Positions}. */
  readonly positions: Positions;
  /**
   * Fast fields by name (the config's `fields`): Int32Array views by slot over the engine's memory,
   * zero copy like {@link positions}, holding raw values 0 to 2^bits − 1 (see {@link Fields}). An
   * empty object without fields.
   */
  readonly fields: Fields;
  /** Whether `positions` are external buffers over engine memory (false: V8-allocated fallback). */
  readonly externalBuffers: boolean;
  readonly #engine: NativeWorld;
  #closed = false;
  readonly #cameras = new Set<EntityId>();

  /** @internal `setup` from {@link readWorldSetup}. */
  protected constructor(config: WorldConfig, setup: WorldSetup) {
    this.config = config;
    try {
      this.#engine = new native.NativeWorld(config.input, setup.capacity, setup.threads, setup.externalBuffers, setup.recordGhostPositions);
    } catch (e) {
      rethrow(e);
    }
    const p = this[ENGINE].positions();
    this.positions = Object.freeze({ x: p.x, y: p.y, z: p.z });
    this.externalBuffers = p.external;
    // The buffers are the engine's memory (or, in the fallback, hold it): a transfer copies them
    // instead of moving it away.
    const f = this[ENGINE].fields();
    const fields = Object.create(null) as Record<string, Int32Array>;
    for (const spec of config.fields) {
      fields[spec.name] = f[spec.name];
      markAsUntransferable(f[spec.name].buffer);
    }
    this.fields = Object.freeze(fields);
    for (const a of [p.x, p.y, p.z]) markAsUntransferable(a.buffer);
  }

  /** Entity slots. */
  get capacity(): number {
    return this[ENGINE].info().capacity;
  }
  /** Live entities. */
  get liveCount(): number {
    return this[ENGINE].info().liveCount;
  }
  /** Threads the pass runs on. */
  get threads(): number {
    return this[ENGINE].info().threads;
  }
  /** @internal The engine; every call after close() goes through here and is refused. */
  protected get [ENGINE](): NativeWorld {
    this[REQUIRE_OPEN]();
    return this.#engine;
  }

  /** @internal The spectators' camera entities (addViewer({ at })): removeViewer despawns them. */
  protected get [CAMERAS](): Set<EntityId> {
    return this.#cameras;
  }

  /** @internal Called first, before any argument is checked: a closed world refuses every call alike. */
  protected [REQUIRE_OPEN](): void {
    if (this.#closed) throw new SightlineError('ERR_SIGHTLINE_WORLD_CLOSED', 'this world was closed: make a new one');
  }

  /** @internal Releases the engine (World.close, once no tick runs); idempotent. */
  protected [CLOSE_ENGINE](): void {
    if (this.#closed) return;
    try {
      this.#engine.close();
    } catch (e) {
      rethrow(e);
    }
    this.#closed = true;
  }

  /** Whether {@link World.close} has run. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Adds an entity at a position in meters (z left out: 0) and returns its id. `options.kind`: its
   * kind (an integer 0 to 65535, default 0), sent with its first sighting; `options.attributes`:
   * its first attributes (as {@link setAttributes}: version 1), sent with it too. Its fields start at 0.
   * @throws ERR_SIGHTLINE_INVALID_POSITION (non-finite or beyond Int32 raw), ERR_SIGHTLINE_INVALID_KIND,
   *   ERR_SIGHTLINE_INVALID_ARGUMENT, ERR_SIGHTLINE_UNKNOWN_OPTION, ERR_SIGHTLINE_ATTRIBUTES_DISABLED,
   *   ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE, ERR_SIGHTLINE_WORLD_FULL; all before anything changes.
   */
  spawn(position: PositionInput, options?: SpawnOptions | null): EntityId {
    this[REQUIRE_OPEN]();
    const [x, y, z] = checkVec3(position);
    const o = readOptions('spawn', options, SPAWN_OPTIONS);
    const kind = o.kind === undefined ? 0 : checkKind(o.kind);
    const attributes = o.attributes === undefined ? undefined : checkAttributes(o.attributes, this.config.attributeBytes);
    try {
      const id = this[ENGINE].spawn(x, y, z, kind);
      if (attributes !== undefined) this[ENGINE].setAttributes(id, attributes);
      return id;
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets an entity's kind (u16). Its viewers get it with the entity's next update, which a change
   * makes due as a first sighting would (it adds newDrift to the entity's drift). Safe during a tick.
   * @throws ERR_SIGHTLINE_INVALID_KIND, ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY.
   */
  setKind(id: EntityId, kind: number): void {
    this[REQUIRE_OPEN]();
    checkKind(kind);
    try {
      this[ENGINE].setKind(id, kind);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's kind (u16). @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  kind(id: EntityId): number {
    try {
      return this[ENGINE].kindOf(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets an entity's attributes: opaque bytes (a name, a level), at most `config.attributeBytes`,
   * copied. Returns their version (1 for the first, +1 per call; past 2^32 − 1 it goes on from 1).
   * Every viewer holding the entity gets the newest version once (resent until acknowledged with
   * acks, repeated every `attributeRepeatPasses` passes without); a burst of calls between two
   * packets sends only the last. Safe during a tick: the packets of a running tick carry the
   * attributes as that tick found them.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (bytes not a Uint8Array), ERR_SIGHTLINE_ATTRIBUTES_DISABLED
   *   (attributeBytes 0), ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE, ERR_SIGHTLINE_STALE_ENTITY,
   *   ERR_SIGHTLINE_INVALID_ENTITY; the entity keeps its attributes then.
   */
  setAttributes(id: EntityId, bytes: Uint8Array): number {
    this[REQUIRE_OPEN]();
    checkAttributes(bytes, this.config.attributeBytes);
    try {
      return this[ENGINE].setAttributes(id, bytes);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's latest attributes (a copy) and their version, or null before the first. @throws like {@link kind}. */
  attributes(id: EntityId): { version: number; bytes: Uint8Array } | null {
    try {
      return this[ENGINE].attributes(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Removes an entity. Clients that hold it get a despawn record once their ghost of it expires
   * (the grace window). A viewer whose avatar this was is skipped until removed.
   * @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY.
   */
  despawn(id: EntityId): void {
    try {
      this[ENGINE].despawn(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /** Slot of a live entity: its index in `positions`. @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  slotOf(id: EntityId): number {
    try {
      return this[ENGINE].slotOf(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /** Whether id names a live entity (false for anything that is not an entity id). */
  isLive(id: EntityId): boolean {
    return this[ENGINE].isLive(id);
  }

  /** An entity's position in meters (read from `positions`). */
  position(id: EntityId): Vec3 {
    const s = this.slotOf(id);
    return { x: toMeters(this.positions.x[s]), y: toMeters(this.positions.y[s]), z: toMeters(this.positions.z[s]) };
  }

  /** Moves an entity to a position in meters (z left out: 0). @throws like spawn and slotOf; changes nothing then. */
  setPosition(id: EntityId, position: PositionInput): void {
    this[REQUIRE_OPEN]();
    const [x, y, z] = checkVec3(position);
    const s = this.slotOf(id);
    this.positions.x[s] = x;
    this.positions.y[s] = y;
    this.positions.z[s] = z;
  }

  /**
   * The entity's odometer: total |dx|+|dy|+|dz| travelled (raw units), plus the weights of field
   * changes and newDrift for kind or attribute changes, each tick's growth times the entity's
   * priority weight (1 by default), wrapping at 2^32, as of the last tick (a new entity's first
   * tick adds 0).
   */
  odometer(id: EntityId): number {
    try {
      return this[ENGINE].odometer(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets an entity's visibility groups, a 32-bit mask (default every group, 0xffffffff): it is a
   * candidate only of viewers whose groups meet them (teams, stealth, instanced content; 0 hides it
   * from everyone). From the next tick on: that tick's packets never carry it to a viewer outside
   * its groups, and the viewers that held it and may no longer see it get its despawn in that
   * packet, ahead of their other despawns (within the despawn budget, half a packet's state bytes;
   * the rest in the packets after). A mask given as a negative integer (`~0`, `1 << 31`) is read
   * as its unsigned 32-bit value.
   * @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY, ERR_SIGHTLINE_INVALID_ARGUMENT
   *   (not an integer from -2^31 to 2^32 - 1).
   */
  setGroups(entity: EntityId, groups: number): void {
    this[REQUIRE_OPEN]();
    const g = groupsMask('groups', groups);
    if (this.#cameras.has(entity) && this[ENGINE].isLive(entity)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `entity ${entity} is a spectator's camera: it is in no group, so that no viewer sees it`);
    }
    try {
      this[ENGINE].setGroups(entity, g);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's visibility groups as last set (unsigned). @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  groups(entity: EntityId): number {
    try {
      return this[ENGINE].entityInterest(entity)[0];
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets an entity's priority weight, an integer from 1 (default) to 16: its score grows that many
   * times faster for every viewer, so it is sent up to 16 times as often as an entity of weight 1
   * moving alike at the same distance. From the next tick on, as the priority accumulator goes: each
   * tick's growth of its odometer (motion, field and state changes) is multiplied by it, so drift
   * carries the weight and score = drift × band weight × the viewer's boost; a first sighting
   * scores newDrift × band weight × priority × boost. A weight changed while a viewer holds the
   * entity weighs the drift from then on, not the drift already accumulated. Starvation bound: with B update slots a packet and N candidates whose scores
   * grow, a candidate whose score grows r times slower than the fastest one's (r counts speeds,
   * band weights, priorities and boosts) is sent at least every 2 × ceil(N / B) × ceil(r) + 1
   * ticks (docs/api.md; test/interest.test.ts).
   * @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY, ERR_SIGHTLINE_INVALID_PRIORITY.
   */
  setPriority(entity: EntityId, weight: number): void {
    this[REQUIRE_OPEN]();
    const w = priorityWeight(weight);
    try {
      this[ENGINE].setPriority(entity, w);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's priority weight as last set. @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  priority(entity: EntityId): number {
    try {
      return this[ENGINE].entityInterest(entity)[1];
    } catch (e) {
      rethrow(e);
    }
  }
}
