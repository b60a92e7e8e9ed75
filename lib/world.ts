// World: the public face of one region's engine. Entities, viewers, positions (zero copy), and the
// async tick that runs the replication pass off the JavaScript thread.
import { markAsUntransferable } from 'node:worker_threads';
import { AT as TICK_META_AT, native, readTickMeta, type NativeTickResult, type NativeTickStats, type NativeWorld } from './binding.js';
import { WorldConfig } from './config.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { toMeters, toRaw } from './fixed.js';
import { run as runClock, type LoopHandle, type LoopOptions } from './loop.js';

/**
 * Which vector kernels the replication pass runs in this process: `'avx512'` on x86-64 CPUs with
 * AVX-512 (F, DQ, VL, BW, CD), where the gather and the selections work on 8 or 16 lanes at a time,
 * else `'portable'`. Setting `SIGHTLINE_SIMD=off` in the environment before the addon loads forces
 * the portable loops. Both write the same packets byte for byte; only the speed differs.
 */
export const kernels: 'avx512' | 'portable' = native.kernels;

/**
 * Whether the loaded addon was built with profile-guided optimization: `npm run build:pgo` (and the
 * published prebuilds, from `npm run prebuildify`) compile it once instrumented, run the herd's
 * scenarios on it and compile it again with the profile; `npm run build:native` and an install
 * that compiles from source build it plainly (-O3). The same packets either way; the pass is
 * about 5-10% faster profile-guided (README, Development).
 */
export const profileGuided: boolean = native.profileGuided;

/**
 * An entity's id: slot (low 20 bits) and generation (high 12 bits). A despawned entity's slot is
 * reused with the next generation, so a stale id is refused (`ERR_SIGHTLINE_STALE_ENTITY`) rather
 * than answering for the new occupant, until that slot has been reused 4,096 times. Freed slots are
 * reused oldest first, and only once 4,096 of them wait (or no never-used slot is left), so a
 * despawned id stays refused for at least 4,096 × min(4,096, capacity − live) later despawns:
 * 16.7 million with room to spare, days of heavy churn.
 */
export type EntityId = number;

/** A position in meters. x and y are horizontal; z is vertical. */
export interface Vec3 {
  x: number;
  y: number;
  z: number;
}

/**
 * A position given to spawn or setPosition, in meters: z may be left out and is then 0. Other keys
 * are not read, so a game object that has x, y and z may be passed as it is; a misspelt key (`Z`)
 * is therefore no error at run time, though TypeScript flags it in an object literal.
 */
export interface PositionInput {
  x: number;
  y: number;
  z?: number;
}

export interface WorldOptions {
  /** Entity slots, 1 to 1,048,576. Default 65,536. */
  capacity?: number;
  /** Threads for the pass: 0 = every core (default), 1 = inline on one pool thread. */
  threads?: number;
  /**
   * Expose positions as external ArrayBuffers over the engine's memory (default true). Where the
   * runtime refuses external buffers, or with `false`, the engine adopts V8-allocated buffers
   * instead (and copies each tick's packets into one); the arrays behave the same either way.
   * The position and packet buffers are marked untransferable (`markAsUntransferable` of
   * `node:worker_threads`), in both modes: `postMessage` and `structuredClone` copy them. In the
   * fallback, a position buffer detached by other means takes the entity memory with it: the world
   * then refuses `spawn`, `tick` and `rebuildSnapshot` with `ERR_SIGHTLINE_POSITIONS_DETACHED`. A
   * packet buffer detached by other means is replaced by the next tick that writes it.
   */
  externalBuffers?: boolean;
  /**
   * Ghost tables also keep the last position sent of every ghost, as the client decodes it
   * (quantized, z clamped to the vertical extent), so {@link World.ghosts} can report it (tools,
   * tests, convergence checks). Costs one extra write per record. Default false.
   */
  recordGhostPositions?: boolean;
}

export interface ViewerOptions {
  /** Bytes per packet for this viewer, header included. Default: config.payloadBytes (1200). */
  payloadBytes?: number;
  /** Serve this viewer every Nth tick (1 to 65535). Phases are spread across viewers. Default 1. */
  sendPeriod?: number;
  /**
   * The client acknowledges packets ({@link World.acknowledge}): marks then advance when a packet
   * is acknowledged, and a lost packet's records regain their priority, its new ghosts are
   * announced again and its despawns resent. The engine keeps the last 64 packets' records for it.
   * A viewer that never acknowledges behaves as one without acks. Default false.
   */
  acks?: boolean;
}

/**
 * Raw positions by slot: Int32Array views over the engine's entity arrays (zero copy), in raw
 * fixed point (1 m = 1024). Write to move entities: `x[world.slotOf(id)] += toRaw(1.5)`.
 *
 * Int32Array semantics apply to what you write: a float is truncated toward zero, NaN and
 * ±Infinity become 0, and a value outside the Int32 range wraps modulo 2^32. An entity whose x or
 * y falls outside [0, regionSize) is outside the region: left out of the snapshot (counted as
 * `outsideRegion`), invisible until it returns, and a viewer whose avatar is there is skipped.
 */
export interface Positions {
  readonly x: Int32Array;
  readonly y: Int32Array;
  readonly z: Int32Array;
}

/** One packet: the viewer (its avatar's id) and the bytes to send it. */
export interface Packet {
  readonly viewer: EntityId;
  readonly bytes: Uint8Array;
}

/** Counters of one tick (sums over viewers) and the time its phases took (µs). */
export type TickStats = NativeTickStats;

/** Candidates of a gather: ids, squared horizontal distances (raw², i.e. meters² × 2^20). */
export interface GatherResult {
  readonly ids: Uint32Array;
  readonly distancesSq: Float64Array;
  /** Entities whose distance was computed before the walk stopped. */
  readonly examined: number;
}

/**
 * A viewer's ghost table: what its client holds, with the positions last sent as the client
 * decodes them (raw: quantized, z clamped to the vertical extent; null unless the world was
 * created with `recordGhostPositions: true`).
 */
export interface GhostTableView {
  readonly ids: Uint32Array;
  readonly x: Int32Array | null;
  readonly y: Int32Array | null;
  readonly z: Int32Array | null;
  /**
   * Per ghost: 0 live (the client holds it), 1 departing (evicted; its despawn record has not been
   * sent yet: the client still holds it), 3 not held (acks viewers: the packet announcing it was
   * lost for certain; it is announced again when eligible, or a despawn is sent). A ghost leaves
   * the table when its despawn record is written (2, despawn sent, is no longer used: for acks
   * viewers a lost despawn is sent again from the packet log).
   */
  readonly state: Uint8Array;
  /** Sequence number the next packet to this viewer will carry. */
  readonly sequence: number;
  /** Passes this viewer has been served (its send period counts only the ticks it is due). */
  readonly passes: number;
}

/**
 * Who receives an event; see {@link World.emit}. Positions in meters. Exactly one of the three
 * forms: a target naming two is refused at run time, and the `never` fields make TypeScript refuse
 * it too. (Named so as not to shadow the DOM's and Node's global `EventTarget` where it is imported.)
 */
export type EventRecipients =
  | { viewer: EntityId; holders?: never; near?: never; radius?: never }
  | { holders: EntityId; viewer?: never; near?: never; radius?: never }
  | { near: { x: number; y: number }; radius: number; viewer?: never; holders?: never };

// A target checkTarget accepted: one form, its other fields absent.
type NearTarget = { near: { x: number; y: number }; radius: number };
type CheckedTarget = { viewer: EntityId } | { holders: EntityId } | NearTarget;

const MAX_ID = 0xffffffff;

function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_ID;
}

function invalidTarget(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', message);
}

const TARGET_FORMS = '{ viewer }, { holders } or { near: { x, y }, radius } (meters)';

// Validates a target completely and returns a copy, so a deferred event does not see later changes
// to the caller's object.
function checkTarget(target: unknown): CheckedTarget {
  if (typeof target !== 'object' || target === null) {
    invalidTarget(`an event target must be ${TARGET_FORMS}, received ${describe(target)}`);
  }
  const t = target as Record<string, unknown>;
  // A field set to undefined is absent (as the optional `never` fields of EventRecipients allow).
  const keys = Object.keys(t).filter((k) => t[k] !== undefined);
  const forms = Number(keys.includes('viewer')) + Number(keys.includes('holders')) + Number(keys.includes('near'));
  if (forms !== 1) {
    invalidTarget(`an event target must have exactly one of viewer, holders and near: ${TARGET_FORMS}, received an object with ${forms}`);
  }
  const allowed = keys.includes('viewer') ? ['viewer'] : keys.includes('holders') ? ['holders'] : ['near', 'radius'];
  const extra = keys.find((k) => !allowed.includes(k));
  if (extra !== undefined) invalidTarget(`an event target must be ${TARGET_FORMS}, received an object with ${describe(extra)} as well`);
  if (keys.includes('viewer')) {
    if (!isId(t.viewer)) invalidTarget(`target viewer must be an integer entity id from 0 to ${MAX_ID}, received ${describe(t.viewer)}`);
    return { viewer: t.viewer };
  }
  if (keys.includes('holders')) {
    if (!isId(t.holders)) invalidTarget(`target holders must be an integer entity id from 0 to ${MAX_ID}, received ${describe(t.holders)}`);
    return { holders: t.holders };
  }
  const near = t.near;
  if (typeof near !== 'object' || near === null) invalidTarget(`target near must be an object { x, y } (meters), received ${describe(near)}`);
  const { x, y } = near as { x?: unknown; y?: unknown };
  if (typeof x !== 'number' || !Number.isFinite(x)) invalidTarget(`target near.x must be a finite number of meters, received ${describe(x)}`);
  if (typeof y !== 'number' || !Number.isFinite(y)) invalidTarget(`target near.y must be a finite number of meters, received ${describe(y)}`);
  const radius = t.radius;
  if (typeof radius !== 'number' || !Number.isFinite(radius) || radius < 0) {
    invalidTarget(`target radius must be a finite number of meters ≥ 0, received ${describe(radius)}`);
  }
  return { near: { x, y }, radius };
}

function rethrow(e: unknown): never {
  if (e instanceof Error && typeof (e as { code?: unknown }).code === 'string' && !(e instanceof SightlineError)) {
    throw new SightlineError((e as unknown as { code: string }).code, e.message);
  }
  throw e;
}

const WORLD_OPTIONS = ['capacity', 'threads', 'externalBuffers', 'recordGhostPositions'] as const;
const VIEWER_OPTIONS = ['payloadBytes', 'sendPeriod', 'acks'] as const;
const GATHER_OPTIONS = ['walkCap', 'exclude'] as const;



function readBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be true or false, received ${describe(value)}`);
  }
  return value;
}

function checkCoordinate(name: string, meters: unknown): number {
  if (typeof meters !== 'number' || !Number.isFinite(meters)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_POSITION', `${name} must be a finite number of meters, received ${describe(meters)}`);
  }
  const raw = toRaw(meters);
  if (raw < -2147483648 || raw > 2147483647) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_POSITION',
      `${name} must be within ±2097152 m (Int32 raw units), received ${describe(meters)}`,
    );
  }
  return raw;
}

function checkVec3(pos: unknown): [number, number, number] {
  if (typeof pos !== 'object' || pos === null) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_POSITION', `position must be an object { x, y, z } in meters, received ${describe(pos)}`);
  }
  const p = pos as Partial<Vec3>;
  return [checkCoordinate('x', p.x), checkCoordinate('y', p.y), checkCoordinate('z', p.z === undefined ? 0 : p.z)];
}

/**
 * The packets and stats of one tick.
 *
 * Lifetime: a result's bytes live in one of two output buffers that ticks use alternately. They
 * stay valid while the next tick runs (so sending may overlap the next pass) and until the tick
 * after that starts. From then on `packets`, `viewerAt` and `bytesAt` throw
 * `ERR_SIGHTLINE_RESULT_EXPIRED`; a `Uint8Array` kept from earlier never dangles but reads
 * whatever its buffer holds by then (a later tick's bytes), so copy what must outlive that
 * (`bytes.slice()`).
 */
export class TickResult {
  /** The tick number (starts at 1). */
  readonly tick: number;
  /** Number of packets (one per served viewer). */
  readonly count: number;
  readonly stats: TickStats;
  readonly #world: World;
  readonly #epoch: number;
  readonly #buffer: ArrayBuffer;
  readonly #index: Uint32Array;
  #packets: readonly Packet[] | undefined;

  /** @internal */
  constructor(world: World, epoch: number, r: NativeTickResult) {
    this.tick = r.tick;
    this.count = r.count;
    this.stats = r.stats;
    this.#world = world;
    this.#epoch = epoch;
    this.#buffer = r.buffer;
    this.#index = r.index;
  }

  /** Whether the bytes are still valid (see the class docs). */
  get valid(): boolean {
    return this.#world.epochValid(this.#epoch);
  }

  #check(): void {
    if (!this.valid) {
      throw new SightlineError(
        'ERR_SIGHTLINE_RESULT_EXPIRED',
        `the packets of tick ${this.tick} expired when a later tick started: their buffer is reused two ticks later; copy bytes you need to keep`,
      );
    }
  }

  /** Every packet of the tick, in viewer order. Built once on first access; the array is frozen (every access returns it). */
  get packets(): readonly Packet[] {
    this.#check();
    if (!this.#packets) {
      const out: Packet[] = new Array(this.count);
      const ix = this.#index;
      for (let i = 0; i < this.count; i++) {
        out[i] = { viewer: ix[3 * i], bytes: new Uint8Array(this.#buffer, ix[3 * i + 1], ix[3 * i + 2]) };
      }
      this.#packets = Object.freeze(out);
    }
    return this.#packets;
  }

  #checkIndex(i: number): void {
    if (typeof i !== 'number' || (i >>> 0) !== i || i >= this.count) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `packet index must be an integer from 0 to count-1 (count is ${this.count}), received ${describe(i)}`,
      );
    }
  }

  /**
   * The viewer of packet i (0 ≤ i < count).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (i not an integer in [0, count)), ERR_SIGHTLINE_RESULT_EXPIRED.
   */
  viewerAt(i: number): EntityId {
    this.#checkIndex(i);
    this.#check();
    return this.#index[3 * i];
  }

  /**
   * The bytes of packet i (0 ≤ i < count): a view into the reused output buffer.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (i not an integer in [0, count)), ERR_SIGHTLINE_RESULT_EXPIRED.
   */
  bytesAt(i: number): Uint8Array {
    this.#checkIndex(i);
    this.#check();
    return new Uint8Array(this.#buffer, this.#index[3 * i + 1], this.#index[3 * i + 2]);
  }
}

/**
 * One region: entities, viewers and the replication pass.
 *
 * ```ts
 * const world = new World(WorldConfig.build(), { capacity: 65_536, threads: 0 });
 * const id = world.spawn({ x: 2048, y: 2048, z: 0 });
 * world.addViewer(id);
 * const result = await world.tick();
 * for (const p of result.packets) transport.send(p.viewer, p.bytes);
 * ```
 *
 * Errors are {@link SightlineError}s with a `code`; a rejected call changes nothing.
 */
export class World {
  readonly config: WorldConfig;
  /** Raw Int32 positions by slot; see {@link Positions}. */
  readonly positions: Positions;
  /** Whether `positions` are external buffers over engine memory (false: V8-allocated fallback). */
  readonly externalBuffers: boolean;
  readonly #engine: NativeWorld;
  #closed = false;
  #views: ({ generation: number; buffer: ArrayBuffer; index: Uint32Array } | undefined)[] = [undefined, undefined];
  #epoch = 0;
  #ticking = false;
  // Events emitted and acknowledgements made during a tick, applied when it ends, in call order;
  // `changes` is #viewerChanges when called; `near`, for a { near } target, the viewers whose
  // avatars were in range when emitted.
  #deferredEvents: (
    | { bytes: Uint8Array; target: CheckedTarget; changes: number; near?: ReadonlySet<EntityId> }
    | { ack: { viewer: EntityId; ack: number; ackBits: number }; changes: number }
  )[] = [];
  readonly #addedDuringTick = new Set<EntityId>();
  // Viewer additions and removals during the current tick, counted, and the count at each viewer's
  // last one: a deferred event is applied in call order with them (a viewer added or removed after
  // the emit is not the one the event was meant for).
  #viewerChanges = 0;
  readonly #changedDuringTick = new Map<EntityId, number>();
  #eventsDropped = 0;

  /**
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (config not a WorldConfig, options not an object, a
   *   boolean option that is not a boolean), ERR_SIGHTLINE_UNKNOWN_OPTION (a key that is not a
   *   {@link WorldOptions} field), ERR_SIGHTLINE_INVALID_CAPACITY, ERR_SIGHTLINE_INVALID_THREADS,
   *   ERR_SIGHTLINE_CONFIG_* (the native engine validates the configuration again).
   */
  constructor(config: WorldConfig, options?: WorldOptions | null) {
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
    this.config = config;
    try {
      this.#engine = new native.NativeWorld(config.input, capacity, threads, externalBuffers, recordGhostPositions);
    } catch (e) {
      rethrow(e);
    }
    const p = this.#native.positions();
    this.positions = Object.freeze({ x: p.x, y: p.y, z: p.z });
    this.externalBuffers = p.external;
    // The buffers are the engine's memory (or, in the fallback, hold it): a transfer copies them
    // instead of moving it away.
    for (const a of [p.x, p.y, p.z]) markAsUntransferable(a.buffer);
  }

  /** Entity slots. */
  get capacity(): number {
    return this.#native.info().capacity;
  }
  /** Live entities. */
  get liveCount(): number {
    return this.#native.info().liveCount;
  }
  /** Threads the pass runs on. */
  get threads(): number {
    return this.#native.info().threads;
  }
  // The engine; every call after close() goes through here and is refused.
  get #native(): NativeWorld {
    this.#requireOpen();
    return this.#engine;
  }

  // Called first, before any argument is checked: a closed world refuses every call alike.
  #requireOpen(): void {
    if (this.#closed) throw new SightlineError('ERR_SIGHTLINE_WORLD_CLOSED', 'this world was closed: make a new one');
  }

  /**
   * Releases the engine now rather than when the World is collected: entities, viewers and their
   * ghost tables, the snapshot (about 10 KB per viewer at the default ghostCap, more with acks).
   * From then on every method, and every getter that asks the engine, throws
   * `ERR_SIGHTLINE_WORLD_CLOSED`; `config`, `externalBuffers`, `eventsDropped`, `closed`,
   * `positions` and the packets of results already delivered stay readable (their memory goes
   * with the last view of it), but nothing reads or writes them any more. Idempotent. A {@link run} loop on this world ends at its next tick with reason
   * `'closed'`; while a tick runs close() throws, so to end a loop and close at once:
   * `handle.stop(); await handle.done; world.close()`.
   * @throws ERR_SIGHTLINE_TICK_IN_PROGRESS (a tick is running: await it first).
   */
  close(): void {
    if (this.#closed) return;
    if (this.#ticking) {
      throw new SightlineError('ERR_SIGHTLINE_TICK_IN_PROGRESS', 'close() cannot run while a tick is running; await the tick first');
    }
    try {
      this.#engine.close();
    } catch (e) {
      rethrow(e);
    }
    this.#closed = true;
    this.#deferredEvents = [];
  }

  /** Whether {@link close} has run. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Ticks run so far. */
  get tickCount(): number {
    return this.#native.info().tick;
  }
  /**
   * Registered viewers. During a tick, viewers added or removed during it count already (as in
   * {@link hasViewer}): each change was checked when asked for and is applied when the tick ends.
   */
  get viewerCount(): number {
    return this.#native.viewerCount();
  }

  /**
   * Adds an entity at a position in meters (z left out: 0) and returns its id.
   * @throws ERR_SIGHTLINE_INVALID_POSITION (non-finite or beyond Int32 raw), ERR_SIGHTLINE_WORLD_FULL.
   */
  spawn(position: PositionInput): EntityId {
    this.#requireOpen();
    const [x, y, z] = checkVec3(position);
    try {
      return this.#native.spawn(x, y, z);
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
      this.#native.despawn(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /** Slot of a live entity: its index in `positions`. @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  slotOf(id: EntityId): number {
    try {
      return this.#native.slotOf(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /** Whether id names a live entity (false for anything that is not an entity id). */
  isLive(id: EntityId): boolean {
    return this.#native.isLive(id);
  }

  /** An entity's position in meters (read from `positions`). */
  position(id: EntityId): Vec3 {
    const s = this.slotOf(id);
    return { x: toMeters(this.positions.x[s]), y: toMeters(this.positions.y[s]), z: toMeters(this.positions.z[s]) };
  }

  /** Moves an entity to a position in meters (z left out: 0). @throws like spawn and slotOf; changes nothing then. */
  setPosition(id: EntityId, position: PositionInput): void {
    this.#requireOpen();
    const [x, y, z] = checkVec3(position);
    const s = this.slotOf(id);
    this.positions.x[s] = x;
    this.positions.y[s] = y;
    this.positions.z[s] = z;
  }

  /**
   * The entity's odometer: total |dx|+|dy|+|dz| travelled, raw units, wrapping at 2^32, as of the
   * last tick (a new entity's first tick adds 0).
   */
  odometer(id: EntityId): number {
    try {
      return this.#native.odometer(id);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Makes an entity's client a viewer: from the next tick it gets a packet every `sendPeriod`
   * ticks. Packets name the viewer by this avatar id. During a running tick the change is checked
   * now, queued, and takes effect when that tick ends (if the avatar is despawned meanwhile, the
   * viewer exists all the same and is skipped, as when the despawn follows the add outside a tick).
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object, acks not a boolean),
   *   ERR_SIGHTLINE_UNKNOWN_OPTION (a key that is not a {@link ViewerOptions} field),
   *   ERR_SIGHTLINE_INVALID_VIEWER_OPTION (payloadBytes or sendPeriod out of range),
   *   ERR_SIGHTLINE_VIEWER_EXISTS, ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_OUTPUT_FULL (the
   *   viewers' payloadBytes together would pass 4 GiB − 64 KiB, the most one output buffer holds),
   *   ERR_SIGHTLINE_OUT_OF_MEMORY (the viewer's tables could not be allocated; during a tick they
   *   are allocated by this call, so applying the add when the tick ends cannot fail).
   */
  addViewer(avatar: EntityId, options?: ViewerOptions | null): void {
    this.#requireOpen();
    const o = readOptions('addViewer', options, VIEWER_OPTIONS);
    const payloadBytes = o.payloadBytes === undefined ? this.config.payloadBytes : o.payloadBytes;
    const sendPeriod = o.sendPeriod === undefined ? 1 : o.sendPeriod;
    if (typeof payloadBytes !== 'number' || typeof sendPeriod !== 'number') {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_VIEWER_OPTION',
        `payloadBytes and sendPeriod must be numbers, received ${describe(payloadBytes)} and ${describe(sendPeriod)}`,
      );
    }
    const acks = readBoolean('acks', o.acks, false);
    try {
      this.#native.addViewer(avatar, payloadBytes, sendPeriod, acks);
    } catch (e) {
      rethrow(e);
    }
    if (this.#ticking) {
      this.#addedDuringTick.add(avatar);
      this.#changedDuringTick.set(avatar, ++this.#viewerChanges);
    }
  }

  /**
   * Stops serving a viewer and forgets its ghost table. Safe during a tick: it takes effect after
   * the pass, and every other viewer is served. @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  removeViewer(avatar: EntityId): void {
    try {
      this.#native.removeViewer(avatar);
    } catch (e) {
      rethrow(e);
    }
    if (this.#ticking) this.#changedDuringTick.set(avatar, ++this.#viewerChanges);
  }

  /**
   * Applies a client's acknowledgement to a viewer added with `{ acks: true }`: `ack` is the newest
   * packet sequence the client received (u16), bit i of `ackBits` (u32) says whether sequence
   * ack - 1 - i was received. A packet left out by an acknowledgement 3 or more sequences newer is
   * probably lost: its records regain their priority. Left out by one more than 32 newer, it is lost
   * for certain: the ghosts it introduced are forgotten (announced again when eligible) and its
   * despawns resent; so a client must drop packets more than 32 sequences older than the newest it
   * has. A ghost never acknowledged regains the priority of a new candidate when its packet is
   * probably lost (an entity that never moves is announced again too). The first acknowledgement
   * of a viewer also settles the packets taken as assumed delivered before it (see
   * {@link ackStats}): the ghosts only they announced are handled as lost for certain. During a tick it is checked when called, against the packets sent before that tick (a
   * sequence never sent is refused then, as after it), and applied when the tick ends, in call
   * order with the events emitted during the tick.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_ACKS_DISABLED, ERR_SIGHTLINE_INVALID_ACK.
   */
  acknowledge(viewer: EntityId, ack: number, ackBits: number): void {
    let deferred: boolean;
    try {
      // During a tick the engine only checks it: it is applied when the tick ends, in call order
      // with the events emitted during the tick (an acknowledgement may retire a viewer's events,
      // or tell that its client no longer holds an entity).
      deferred = this.#native.acknowledge(viewer, ack, ackBits);
    } catch (e) {
      rethrow(e);
    }
    if (deferred) this.#deferredEvents.push({ ack: { viewer, ack, ackBits }, changes: this.#viewerChanges });
  }

  /**
   * Packets resolved for a viewer with acks: acknowledged; lost for certain (left out by an
   * acknowledgement more than 32 sequences newer, or expired); expired (64 packets went by without
   * a word, from a client that had acknowledged before: an outage; what they carried is sent again);
   * assumed delivered (64 packets went by from a client that had never acknowledged: their
   * announcements wait for the first acknowledgement, their despawns are sent again then (the
   * newest 2 × ghostCap of them), their events are still resent); probably lost (left out by one 3
   * or more newer: their records regained priority at once); despawnsNotResent (despawns that will
   * not be sent again although they may be lost: found lost while 2 × ghostCap others already
   * waited to be sent again, or pushed out of the 2 × ghostCap newest despawns of assumed packets;
   * the client may keep those entities, so this bounds how many it holds that the server no longer
   * accounts for).
   */
  ackStats(viewer: EntityId): { acked: number; lost: number; assumed: number; probablyLost: number; expired: number; despawnsNotResent: number } | null {
    try {
      return this.#native.ackStats(viewer);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Whether `avatar` is a viewer. During a tick the answer counts the viewers added or removed
   * during it (applied when it ends); {@link ackStats} and {@link eventStats} describe the viewers
   * the running pass serves, so until the tick ends a viewer added during it has none
   * (`ERR_SIGHTLINE_UNKNOWN_VIEWER`) and one removed during it still has its own. False for anything
   * that is not an entity id, as {@link isLive}.
   */
  hasViewer(avatar: EntityId): boolean {
    this.#requireOpen();
    if (!isId(avatar)) return false;
    try {
      return this.#native.hasViewer(avatar);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Runs one tick: the odometer and snapshot on this thread (microseconds), then the per-viewer
   * pass on the thread pool while the event loop stays free. Positions may be written for the
   * next tick as soon as this returns.
   * @throws synchronously, not as a rejection: ERR_SIGHTLINE_TICK_IN_PROGRESS (the previous tick
   *   has not ended), ERR_SIGHTLINE_WORLD_CLOSED, ERR_SIGHTLINE_OUT_OF_MEMORY (the tick's buffers
   *   could not grow; the world is unchanged: the tick number, odometers and snapshot stay).
   *   The promise rejects only with ERR_SIGHTLINE_INTERNAL (a defect).
   */
  tick(): Promise<TickResult> {
    let p: Promise<Float64Array>;
    try {
      p = this.#native.tick();
    } catch (e) {
      rethrow(e);
    }
    const epoch = ++this.#epoch;
    this.#ticking = true;
    return p.then(
      (meta) => {
        this.#ticking = false;
        this.#flushEvents();
        // The output slot of this tick's parity: its buffer and index, fetched again only when the
        // addon made new ones (the `views` generation changed).
        const which = meta[TICK_META_AT.tick] & 1;
        let views = this.#views[which];
        if (views === undefined || views.generation !== meta[TICK_META_AT.views]) {
          const v = this.#engine.outputViews(which)!;
          views = { generation: meta[TICK_META_AT.views], buffer: v.buffer, index: v.index };
          this.#views[which] = views;
          markAsUntransferable(v.buffer);  // the engine writes it again two ticks later
        }
        return new TickResult(this, epoch, readTickMeta(meta, views));
      },
      (e) => {
        this.#ticking = false;
        this.#flushEvents();
        return rethrow(e);
      },
    );
  }

  /**
   * Queues a reliable event (a death, a chat line: opaque bytes, 1 to eventReserveBytes − 5) for
   * the viewers a target names:
   * - `{ viewer }`: one viewer;
   * - `{ holders: entity }`: every viewer whose client holds that entity;
   * - `{ near: { x, y }, radius }`: every viewer whose avatar is within `radius` meters (2D) of
   *   the point.
   * Events ride in the packets' event reserve (`eventReserveBytes` in the config), in order,
   * exactly once, resent until a packet carrying them is acknowledged; only viewers added with
   * `{ acks: true }` take events (multi-viewer targets skip the others). Each viewer's queue holds
   * 64 unacknowledged events: for a `{ viewer }` target a full queue throws
   * `ERR_SIGHTLINE_EVENT_QUEUE_FULL`; for the others the viewer is skipped and the drop counted
   * ({@link eventsDropped}). During a tick, events are queued and applied when the tick ends, in
   * call order with that tick's addViewer and removeViewer calls (the viewers they reach are those
   * the same calls between ticks would reach: a viewer added after the emit does not get it, and
   * a `{ viewer }` removed after it, even if added again, loses it, counted in {@link eventsDropped};
   * a `{ near }` target is measured when `emit` is called, so avatars moved or despawned after it
   * do not change who gets it; a `{ holders }` target is measured when the tick ends, after the
   * pass: a client whose packet of that tick despawned the entity no longer holds it and does not
   * get the event, uncounted (the pass changes who holds what while it runs, so there is no earlier
   * moment to measure); acknowledgements made during the tick apply in call order with the events);
   * the target is checked in full when `emit` is called, and a `{ viewer }` that takes no events
   * throws then too (a viewer added during that tick is checked when the tick ends: an event it
   * cannot take is counted in {@link eventsDropped}). Applying queued events never makes the
   * tick's promise reject. Returns the number of viewers the event was queued for (0 while deferred).
   * @throws Checked in this order: ERR_SIGHTLINE_INVALID_ARGUMENT (bytes not a Uint8Array; a target
   *   that is not exactly one of the three forms, a viewer or holders that is not an integer entity
   *   id from 0 to 2^32 - 1, a near.x / near.y that is not finite, a radius that is not finite and
   *   ≥ 0), ERR_SIGHTLINE_EVENTS_DISABLED (the config has no event reserve: eventReserveBytes 0),
   *   ERR_SIGHTLINE_INVALID_ARGUMENT (empty bytes), ERR_SIGHTLINE_EVENT_TOO_LARGE,
   *   ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_EVENTS_DISABLED (a `{ viewer }` added without
   *   acks), ERR_SIGHTLINE_EVENT_QUEUE_FULL (not while deferred).
   */
  emit(bytes: Uint8Array, target: EventRecipients): number {
    this.#requireOpen();
    if (!(bytes instanceof Uint8Array)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `an event must be a Uint8Array, received ${describe(bytes)}`);
    }
    const t = checkTarget(target);
    const max = this.config.eventReserveBytes - 5;
    if (max < 1) {
      throw new SightlineError(
        'ERR_SIGHTLINE_EVENTS_DISABLED',
        `events need an event reserve: build the config with eventReserveBytes above 5 (it is ${this.config.eventReserveBytes})`,
      );
    }
    if (bytes.length === 0) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `an event must hold 1 to ${max} bytes, received an empty Uint8Array`);
    }
    if (bytes.length > max) {
      throw new SightlineError('ERR_SIGHTLINE_EVENT_TOO_LARGE', `an event must be 1 to ${max} bytes (eventReserveBytes - 5), received ${bytes.length}`);
    }
    if ('viewer' in t && !this.hasViewer(t.viewer)) {
      throw new SightlineError('ERR_SIGHTLINE_UNKNOWN_VIEWER', `entity ${describe(t.viewer)} is not a viewer`);
    }
    if (this.#ticking) {
      if ('viewer' in t && !this.#addedDuringTick.has(t.viewer) && !this.#takesEvents(t.viewer)) {
        throw new SightlineError(
          'ERR_SIGHTLINE_EVENTS_DISABLED',
          `viewer ${t.viewer} cannot take events: it needs { acks: true } and the config an eventReserveBytes above 5 (it is ${this.config.eventReserveBytes})`,
        );
      }
      // A { near } target is measured now, as the same call between ticks would: the avatars may
      // move or go before the tick ends. (Viewers added during this tick count by their avatars
      // too; whether they are viewers when the event applies is decided then, in call order.)
      const near = 'near' in t ? new Set(this.#inRange(t, [...this.#native.viewerIds(), ...this.#changedDuringTick.keys()])) : undefined;
      this.#deferredEvents.push({ bytes: bytes.slice(), target: t, changes: this.#viewerChanges, near });
      return 0;
    }
    return this.#emitNow(bytes, t, true);
  }

  // Whether a registered viewer takes events; true for one the engine does not know yet (added
  // during this tick), whose event is then checked when the tick ends.
  #takesEvents(viewer: EntityId): boolean {
    try {
      return this.#native.eventStats(viewer) !== null;
    } catch (e) {
      if ((e as { code?: unknown }).code === 'ERR_SIGHTLINE_UNKNOWN_VIEWER') return true;
      rethrow(e);
    }
  }

  /**
   * Events not queued for a viewer: its queue was full (multi-viewer targets and deferred events),
   * or a deferred event could not be applied when its tick ended (its viewer takes no events, or
   * was removed during that tick).
   */
  get eventsDropped(): number {
    return this.#eventsDropped;
  }

  /** A viewer's events: queued so far, dropped (queue full), pending (not yet acknowledged); null if it takes none. */
  eventStats(viewer: EntityId): { queued: number; dropped: number; pending: number } | null {
    try {
      return this.#native.eventStats(viewer);
    } catch (e) {
      rethrow(e);
    }
  }

  // Of `ids`, the live ones whose avatar is within the { near } target's radius (2D), in order.
  #inRange(target: NearTarget, ids: ArrayLike<EntityId>): EntityId[] {
    const cx = toRaw(target.near.x);
    const cy = toRaw(target.near.y);
    const r = toRaw(target.radius);
    const out: EntityId[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (!this.#native.isLive(ids[i])) continue;
      const s = this.#native.slotOf(ids[i]);
      // hypot: dx * dx + dy * dy would overflow to Infinity for far-off points and huge radii.
      if (Math.hypot(this.positions.x[s] - cx, this.positions.y[s] - cy) <= r) out.push(ids[i]);
    }
    return out;
  }

  // Queues an event for its target's viewers now. `changes`, for an event deferred during a tick:
  // #viewerChanges when it was emitted; viewers added or removed after that are left out (a
  // { viewer } target removed after it, even if added again, is a drop: its queue went with it).
  // `near`: for a deferred { near } event, the viewers that were in range when it was emitted.
  #emitNow(bytes: Uint8Array, target: CheckedTarget, strict: boolean, changes = Infinity, near?: ReadonlySet<EntityId>): number {
    const changedSince = (v: number): boolean => (this.#changedDuringTick.get(v) ?? 0) > changes;
    if ('viewer' in target) {
      if (changedSince(target.viewer)) {
        this.#eventsDropped++;
        return 0;
      }
      try {
        this.#native.emit(target.viewer, bytes, !strict);  // a refusal thrown to the caller is not a drop
        return 1;
      } catch (e) {
        if (strict) rethrow(e);
        this.#eventsDropped++;
        return 0;
      }
    }
    let viewers: ArrayLike<number>;
    if ('holders' in target) {
      viewers = this.#native.holders(target.holders);
    } else {
      const all = this.#native.viewerIds();
      viewers = near ? Array.from(all).filter((v) => near.has(v)) : this.#inRange(target, all);
    }
    let queued = 0;
    for (let i = 0; i < viewers.length; i++) {
      if (changedSince(viewers[i])) continue;  // not a viewer when it was emitted, or not this one
      const stats = this.#native.eventStats(viewers[i]);
      if (!stats) continue; // takes no events
      try {
        this.#native.emit(viewers[i], bytes);
        queued++;
      } catch {
        this.#eventsDropped++;
      }
    }
    return queued;
  }

  #flushEvents(): void {
    const events = this.#deferredEvents;
    this.#deferredEvents = [];
    this.#addedDuringTick.clear();
    for (const deferred of events) {
      if ('ack' in deferred) {
        // A viewer removed (or removed and added again) after the acknowledgement: that session's
        // packets went with it.
        const { viewer, ack, ackBits } = deferred.ack;
        if ((this.#changedDuringTick.get(viewer) ?? 0) > deferred.changes) continue;
        try {
          this.#native.acknowledge(viewer, ack, ackBits);
        } catch {
          // Unreachable: checked in full when made, against the packets sent before the tick.
        }
        continue;
      }
      const { bytes, target, changes, near } = deferred;
      try {
        this.#emitNow(bytes, target, false, changes, near);  // a { viewer } removed meanwhile: counted as dropped
      } catch {
        this.#eventsDropped++;
      }
    }
    this.#changedDuringTick.clear();
    this.#viewerChanges = 0;
  }

  /**
   * Runs the world on its own clock (see lib/loop.ts): tick n is due at start + n × 1000 / tickHz
   * ms (absolute deadlines, no drift); each tick calls `step`, awaits {@link tick}, then `onTick`
   * with the result and a report (pass time, lateness, dropped ticks). `overrun: 'stretch'` starts a
   * late tick at once; `'drop'` skips missed deadlines and counts them. A throwing callback stops
   * the loop (`done` rejects with it) and leaves the world usable; `stop()` ends it cleanly.
   * While it runs the loop owns the world's ticks: a `tick()` of your own makes the loop's next one
   * fail with ERR_SIGHTLINE_TICK_IN_PROGRESS. Attach a handler to `done` when you start the loop:
   * an unhandled rejection ends a Node process.
   */
  run(options: LoopOptions = {}): LoopHandle {
    this.#requireOpen();
    return runClock(this, options);
  }

  /** @internal A result of tick number `epoch` is valid until tick epoch + 2 starts. */
  epochValid(epoch: number): boolean {
    return this.#epoch <= epoch + 1;
  }

  /**
   * Rebuilds the snapshot from the current positions without advancing the tick or the odometer,
   * for {@link gather}. @throws ERR_SIGHTLINE_TICK_IN_PROGRESS.
   */
  rebuildSnapshot(): void {
    try {
      this.#native.rebuildSnapshot();
    } catch (e) {
      rethrow(e);
    }
  }

  /** Entities in the snapshot, those outside the region, and cells with a sub-grid. */
  snapshotInfo(): { count: number; outsideRegion: number; denseCells: number; maxCellOccupancy: number } {
    return this.#native.snapshotInfo();
  }

  /**
   * The candidates a viewer at (x, y) meters would examine, on the current snapshot (see
   * {@link rebuildSnapshot}): nearest cells first, within the view radius, stopping at `walkCap`
   * (default config.walkCap; `Infinity` for uncapped), leaving out `exclude`.
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_POSITION, ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object,
   *   walkCap not a number ≥ 1, exclude not an integer entity id), ERR_SIGHTLINE_UNKNOWN_OPTION (a
   *   key other than walkCap and exclude), ERR_SIGHTLINE_TICK_IN_PROGRESS.
   */
  gather(at: { x: number; y: number }, options?: { walkCap?: number; exclude?: EntityId } | null): GatherResult {
    this.#requireOpen();
    const x = checkCoordinate('x', at?.x);
    const y = checkCoordinate('y', at?.y);
    const o = readOptions('gather', options, GATHER_OPTIONS);
    const walkCap = o.walkCap === undefined ? this.config.walkCap : o.walkCap;
    if (typeof walkCap !== 'number' || !(walkCap >= 1)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `walkCap must be a number ≥ 1 or Infinity, received ${describe(walkCap)}`);
    }
    const exclude = o.exclude;
    if (exclude !== undefined && !isId(exclude)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `exclude must be an integer entity id from 0 to ${MAX_ID}, received ${describe(exclude)}`);
    }
    try {
      const r = this.#native.gather(x, y, walkCap, exclude === undefined ? -1 : exclude);
      return { ids: r.ids, distancesSq: r.d2, examined: r.examined };
    } catch (e) {
      rethrow(e);
    }
  }

  /** A viewer's ghost table. @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_TICK_IN_PROGRESS. */
  ghosts(avatar: EntityId): GhostTableView {
    try {
      return this.#native.ghosts(avatar);
    } catch (e) {
      rethrow(e);
    }
  }
}
