// World: the public face of one region's engine. Entities, viewers, positions (zero copy), and the
// async tick that runs the replication pass off the JavaScript thread. Its argument checks are in
// validate.ts, its shapes in world-types.ts, events in events.ts and the tick's result in
// tick-result.ts.
import { markAsUntransferable } from 'node:worker_threads';
import { AT as TICK_META_AT, native, readTickMeta, type NativeWorld } from './binding.js';
import { WorldConfig } from './config.js';
import { UNCAPPED_WALK } from './config-limits.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { EventRouter, type EventRecipients } from './events.js';
import { toMeters } from './fixed.js';
import { run as runClock, type LoopHandle, type LoopOptions } from './loop.js';
import { TickResult } from './tick-result.js';
import { ALL_GROUPS, CHANGE, boostSet, groupsMask, priorityWeight, teleportDistanceRaw, viewRadiusRaw, viewerNumber } from './interest.js';
import type { CongestionStats } from './congestion.js';
import type { ViewerShedding } from './shedding.js';
import { WorldOverload } from './world-overload.js';
import { MAX_ID, checkAttributes, checkCoordinate, checkKind, checkVec3, isId, readBoolean, rethrow } from './validate.js';
import type {
  EntityId,
  Fields,
  GatherResult,
  GhostTableView,
  PositionInput,
  Positions,
  SpawnOptions,
  SpectatorOptions,
  Vec3,
  WorldOptions,
  ViewerOptions,
  ViewerSettings,
} from './world-types.js';

export { TickResult } from './tick-result.js';
export type * from './world-types.js';
export type { EventRecipients } from './events.js';

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

const NO_IDS: Uint32Array = new Uint32Array(0);

const WORLD_OPTIONS = ['capacity', 'threads', 'externalBuffers', 'recordGhostPositions', 'congestion'] as const;
const VIEWER_OPTIONS = ['payloadBytes', 'sendPeriod', 'acks', 'viewRadius', 'groups', 'self', 'teleportDistance'] as const;
const SPECTATOR_OPTIONS = [...VIEWER_OPTIONS, 'at'] as const;
const GATHER_OPTIONS = ['walkCap', 'exclude', 'radius', 'groups'] as const;
const SPAWN_OPTIONS = ['kind', 'attributes'] as const;

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
/** @internal The engine under a world, for the package's native UDP data path (lib/net/native-path.ts). */
export let engineOf: (world: World) => NativeWorld;
/**
 * @internal What a world's congestion control must hear of each acknowledgement that the native UDP
 * data path applies to the engine itself (lib/net/udp-native.ts); undefined when it is off.
 */
export let congestionObserverOf: (world: World) => ((viewer: EntityId, ack: number, ackBits: number) => void) | undefined;

export class World {
  static {
    engineOf = (world) => world.#native;
    congestionObserverOf = (world) =>
      world.#overload.congestion === null ? undefined : (viewer, ack, ackBits) => world.#overload.acknowledged(viewer, ack, ackBits);
  }
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
  #views: ({ generation: number; buffer: ArrayBuffer; index: Uint32Array } | undefined)[] = [undefined, undefined];
  #epoch = 0;
  #ticking = false;
  readonly #events: EventRouter;
  readonly #overload: WorldOverload;
  /** The spectators' camera entities (addViewer({ at })): removeViewer despawns them. */
  readonly #cameras = new Set<EntityId>();

  /**
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (config not a WorldConfig, options not an object, a
   *   boolean option that is not a boolean), ERR_SIGHTLINE_UNKNOWN_OPTION (a key that is not a
   *   {@link WorldOptions} field, or of `congestion`; `congestion` out of range),
   *   ERR_SIGHTLINE_INVALID_CAPACITY, ERR_SIGHTLINE_INVALID_THREADS, ERR_SIGHTLINE_CONFIG_* (the
   *   native engine validates the configuration again).
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
    const settingsScratch = new Float64Array(3);
    this.#overload = new WorldOverload(config, o.congestion, {
      read: (v) => {
        const n = settingsScratch;
        this.#native.servedSettingsInto(v, n);
        return { sendPeriod: n[1], payloadBytes: n[0], viewRadius: toMeters(n[2]) };
      },
      write: (v, period, payload, radius) => {
        const what = (period === null ? 0 : CHANGE.sendPeriod) | (payload === null ? 0 : CHANGE.payloadBytes) | (radius === null ? 0 : CHANGE.viewRadius);
        if (what !== 0) this.#change(v, what, period ?? 0, payload ?? 0, radius === null ? 0 : viewRadiusRaw(this.config, radius));
      },
    });
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
    const f = this.#native.fields();
    const fields = Object.create(null) as Record<string, Int32Array>;
    for (const spec of config.fields) {
      fields[spec.name] = f[spec.name];
      markAsUntransferable(f[spec.name].buffer);
    }
    this.fields = Object.freeze(fields);
    for (const a of [p.x, p.y, p.z]) markAsUntransferable(a.buffer);
    this.#events = new EventRouter(() => this.#native, this.positions, config, (v) => this.hasViewer(v));
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
   * ghost tables, the snapshot (about 19 KiB per viewer at the defaults, 157 KiB with acks; see memoryBytes).
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
    this.#events.clear();
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
   * Adds an entity at a position in meters (z left out: 0) and returns its id. `options.kind`: its
   * kind (an integer 0 to 65535, default 0), sent with its first sighting; `options.attributes`:
   * its first attributes (as {@link setAttributes}: version 1), sent with it too. Its fields start at 0.
   * @throws ERR_SIGHTLINE_INVALID_POSITION (non-finite or beyond Int32 raw), ERR_SIGHTLINE_INVALID_KIND,
   *   ERR_SIGHTLINE_INVALID_ARGUMENT, ERR_SIGHTLINE_UNKNOWN_OPTION, ERR_SIGHTLINE_ATTRIBUTES_DISABLED,
   *   ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE, ERR_SIGHTLINE_WORLD_FULL; all before anything changes.
   */
  spawn(position: PositionInput, options?: SpawnOptions | null): EntityId {
    this.#requireOpen();
    const [x, y, z] = checkVec3(position);
    const o = readOptions('spawn', options, SPAWN_OPTIONS);
    const kind = o.kind === undefined ? 0 : checkKind(o.kind);
    const attributes = o.attributes === undefined ? undefined : checkAttributes(o.attributes, this.config.attributeBytes);
    try {
      const id = this.#native.spawn(x, y, z, kind);
      if (attributes !== undefined) this.#native.setAttributes(id, attributes);
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
    this.#requireOpen();
    checkKind(kind);
    try {
      this.#native.setKind(id, kind);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's kind (u16). @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  kind(id: EntityId): number {
    try {
      return this.#native.kindOf(id);
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
    this.#requireOpen();
    checkAttributes(bytes, this.config.attributeBytes);
    try {
      return this.#native.setAttributes(id, bytes);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's latest attributes (a copy) and their version, or null before the first. @throws like {@link kind}. */
  attributes(id: EntityId): { version: number; bytes: Uint8Array } | null {
    try {
      return this.#native.attributes(id);
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
   *
   * A spectator, `addViewer({ at: { x, y, z }, ...options })`, is a viewer without an avatar: the
   * world spawns a camera entity at `at` (m) in no visibility group (no viewer ever sees it),
   * makes it a viewer and returns its id, which names the viewer from then on (packets, settings,
   * removeViewer, which also despawns the camera). The game moves it like any entity. Its groups
   * cannot be set. Refused: a position and an avatar together (ERR_SIGHTLINE_INVALID_VIEWER_OPTION),
   * `self: true` (ERR_SIGHTLINE_INVALID_VIEWER_OPTION), a bad position (ERR_SIGHTLINE_INVALID_POSITION);
   * a refused spectator spawns nothing.
   */
  addViewer(avatar: EntityId, options?: ViewerOptions | null): void;
  addViewer(spectator: SpectatorOptions): EntityId;
  addViewer(avatar: EntityId | SpectatorOptions, options?: ViewerOptions | null): EntityId | void {
    this.#requireOpen();
    if (typeof avatar === 'object' && avatar !== null) return this.#addSpectator(avatar, options);
    if (typeof options === 'object' && options !== null && Object.prototype.hasOwnProperty.call(options, 'at')) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_VIEWER_OPTION',
        `a spectator is given a position (addViewer({ at })) and no avatar, received entity ${describe(avatar)} and a position`,
      );
    }
    this.#addViewer(avatar, options);
  }

  #addSpectator(spectator: object, extra: unknown): EntityId {
    if (extra !== undefined) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `a spectator's options go in its one object, addViewer({ at, ...options }), received a second argument ${describe(extra)}`);
    }
    const { at, ...options } = readOptions('addViewer', spectator, SPECTATOR_OPTIONS);
    if (at === undefined) throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `a spectator needs a position, addViewer({ at: { x, y, z } }), received none`);
    if (options.self !== undefined && options.self !== false) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `a spectator has no avatar to send: self must be false or left out, received ${describe(options.self)}`);
    }
    checkVec3(at);
    const camera = this.spawn(at as PositionInput);
    try {
      this.#native.setGroups(camera, 0);
      this.#addViewer(camera, options);
    } catch (e) {
      this.#native.despawn(camera);
      throw e;
    }
    this.#cameras.add(camera);
    return camera;
  }

  #addViewer(avatar: EntityId, options: unknown): void {
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
    const radius = o.viewRadius === undefined ? 0 : viewRadiusRaw(this.config, o.viewRadius);
    const groups = o.groups === undefined ? ALL_GROUPS : groupsMask('groups', o.groups);
    const self = readBoolean('self', o.self, false);
    const teleport = o.teleportDistance === undefined ? 0 : teleportDistanceRaw(this.config, o.teleportDistance);
    try {
      this.#native.addViewer(avatar, payloadBytes, sendPeriod, acks, radius, groups, self, teleport);
    } catch (e) {
      rethrow(e);
    }
    this.#overload.added(avatar, acks);
    if (this.#ticking) this.#events.viewerAdded(avatar);
  }

  /**
   * Serves a viewer every `ticks` ticks from now on (1 to 65535): the governor's cheapest lever.
   * Its sequence numbers, ghost table and acknowledgement log carry on; the viewer keeps its place
   * in the spread of phases (phase = its place mod the period). During a tick the change is
   * checked now and applied when the tick ends, in call order with the other viewer changes; it
   * takes effect at the viewer's next pass. Allocates nothing.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
   */
  setSendPeriod(viewer: EntityId, ticks: number): void {
    this.#change(viewer, CHANGE.sendPeriod, viewerNumber('sendPeriod', ticks), 0, 0);
    this.#overload.shedding.rebase(viewer, { sendPeriod: ticks });
  }

  /**
   * Sets a viewer's packet size, header included (28 + eventReserveBytes to 65,507 bytes), from
   * its next pass on. The viewers' payloadBytes together stay within what one output buffer holds
   * (4 GiB − 64 KiB), counting changes queued during a tick. For a viewer with `acks`, a larger
   * packet than it ever had grows its acknowledgement log, allocated by this call (so applying a
   * change queued during a tick cannot fail); sequences and the log's packets carry on. Deferred
   * during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION,
   *   ERR_SIGHTLINE_OUTPUT_FULL, ERR_SIGHTLINE_OUT_OF_MEMORY.
   */
  setPayloadBytes(viewer: EntityId, bytes: number): void {
    this.#change(viewer, CHANGE.payloadBytes, 0, viewerNumber('payloadBytes', bytes), 0);
    this.#overload.shedding.rebase(viewer, { payloadBytes: bytes });
  }

  /**
   * Sets a viewer's view radius in meters (more than 0, at most the config's `viewRadius`), from
   * its next pass on: its subscription box shrinks to the cells that cover it and its candidates
   * are the entities within it. Ghosts left outside a smaller radius depart by the grace rule, as
   * any ghost that stops being eligible: after `graceTicks` + 1 of the viewer's passes (sooner
   * when its table is full). Deferred during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
   */
  setViewRadius(viewer: EntityId, meters: number): void {
    this.#change(viewer, CHANGE.viewRadius, 0, 0, viewRadiusRaw(this.config, meters));
    this.#overload.shedding.rebase(viewer, { viewRadius: meters });
  }

  /**
   * Makes the viewer's next pass a teleport, as a move of its avatar further than its
   * `teleportDistance` does: every ghost outside its view radius at the place it is then departs
   * in that packet, ahead of its other despawns (at most the despawn budget, half a packet's state
   * bytes, a packet; the rest in the packets after, still ahead of later ones), instead of after
   * the grace window. The new surroundings then arrive by score: all new, so with the default
   * band weights (falling with distance) nearest first. Sequences and settings carry on. Call it
   * when the game moves the avatar (or a spectator's camera); during a tick it applies to the
   * first pass after.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_ENTITY.
   */
  teleportViewer(viewer: EntityId): void {
    this.#requireOpen();
    try {
      this.#native.teleportViewer(viewer);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets the visibility groups a viewer sees (a 32-bit mask; default every group): an entity is
   * its candidate only where their groups meet (entity groups & viewer groups ≠ 0). The ghosts it
   * may no longer see depart at its next pass, their despawns ahead of the others (up to the
   * despawn budget: half a packet's state bytes). Deferred during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_ARGUMENT (not an integer from
   *   -2^31 to 2^32 - 1).
   */
  setViewerGroups(viewer: EntityId, groups: number): void {
    this.#change(viewer, CHANGE.groups, 0, 0, 0, groupsMask('groups', groups));
  }

  /**
   * Boosts, for this viewer only, the priority of up to 64 entities (its party): their scores are
   * multiplied by `factor` (1 to 16; 1, or an empty list, clears the boost), on top of their own
   * weight ({@link setPriority}). Replaces the viewer's previous set. The ids need not be live;
   * a despawned one simply matches nothing. Deferred during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION (factor not an
   *   integer from 1 to 16, more than 64 entities), ERR_SIGHTLINE_INVALID_ARGUMENT (not a list of
   *   entity ids).
   */
  setBoost(viewer: EntityId, entities: readonly EntityId[], factor: number): void {
    const ids = boostSet(entities, factor);
    this.#change(viewer, CHANGE.boost, 0, 0, 0, ALL_GROUPS, factor, ids);
  }

  /**
   * A viewer's settings as last set: changes asked for during a running tick are included (they
   * apply when it ends). `viewRadius` in meters; `boost.entities` sorted, without repeats. These
   * are the game's settings: while the tick governor or congestion control sheds from a viewer,
   * the engine serves it less often, with smaller packets or radius ({@link servedSettings}); the
   * game's own setters keep changing the settings shedding starts from.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  viewerSettings(viewer: EntityId): ViewerSettings {
    const s = this.servedSettings(viewer);
    const base = this.#overload.shedding.base(viewer);
    return base === undefined ? s : { ...s, ...base };
  }

  /**
   * The settings the engine serves a viewer with: {@link viewerSettings}, less what the tick
   * governor and congestion control shed (a longer send period, smaller packets or radius).
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  servedSettings(viewer: EntityId): ViewerSettings {
    try {
      const s = this.#native.viewerSettings(viewer);
      return {
        payloadBytes: s.payloadBytes,
        sendPeriod: s.sendPeriod,
        viewRadius: toMeters(s.viewRadius),
        acks: s.acks,
        groups: s.groups,
        boost: { entities: Array.from(s.boost), factor: s.boost.length === 0 ? 1 : s.boostFactor },
      };
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Congestion control's view of a viewer added with `{ acks: true }` (see
   * {@link WorldOptions.congestion}): mode, smoothed round-trip time and loss, packets tracked,
   * acknowledged and lost. Null when congestion control is off, the viewer has no acks, or none
   * of its packets has gone out yet.
   */
  congestionStats(viewer: EntityId): CongestionStats | null {
    this.#requireOpen();
    return this.#overload.congestionStats(viewer);
  }

  /**
   * The engine's native memory, bytes: its big allocations added up (entities, snapshot, ghost
   * tables, output buffers, scratch), what it reports to V8 as external memory.
   */
  get memoryBytes(): number {
    return this.#native.info().memoryBytes;
  }

  /** The viewers' avatar ids, in the engine's viewer order (a copy). Not during a tick: viewers added or removed during it are applied when it ends. */
  viewerIds(): Uint32Array {
    return this.#native.viewerIds();
  }

  /** @internal The shedding of this world's viewer settings (the tick governor's levers). */
  get shedding(): ViewerShedding {
    return this.#overload.shedding;
  }

  /**
   * The walk and ghost caps the pass uses from the next tick on: the config's, unless lowered
   * with {@link setCaps}.
   */
  get caps(): { walkCap: number; ghostCap: number } {
    const i = this.#native.info();
    return { walkCap: i.walkCap, ghostCap: i.ghostCap };
  }

  /**
   * Lowers (or restores) the walk and ghost caps of every viewer's pass from the next tick on:
   * walkCap an integer from 1 to config.walkCap (Infinity: 2^31 − 1, an uncapped config's own),
   * ghostCap from 1 to config.ghostCap (ghost tables
   * keep their size: 2 × config.ghostCap). A field left out keeps its value. Ghosts past a lower
   * cap depart by the grace rule. The tick governor's second lever; cheaper passes, fewer ghosts.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (a cap out of range or not an integer),
   *   ERR_SIGHTLINE_TICK_IN_PROGRESS.
   */
  setCaps(caps: { walkCap?: number; ghostCap?: number }): void {
    this.#requireOpen();
    const now = this.caps;
    const o = readOptions('setCaps', caps, ['walkCap', 'ghostCap'] as const);
    const walk = o.walkCap === undefined ? now.walkCap : o.walkCap;
    const ghost = o.ghostCap === undefined ? now.ghostCap : o.ghostCap;
    if (typeof walk !== 'number' || typeof ghost !== 'number') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `walkCap and ghostCap must be numbers, received ${describe(walk)} and ${describe(ghost)}`);
    }
    try {
      // Infinity is what an uncapped config's walkCap was built from (2^31 − 1): refused by a capped one.
      this.#native.setCaps(walk === Infinity ? UNCAPPED_WALK : walk, ghost);
    } catch (e) {
      rethrow(e);
    }
  }

  #change(
    viewer: EntityId,
    what: number,
    sendPeriod: number,
    payloadBytes: number,
    viewRadius: number,
    groups = ALL_GROUPS,
    boostFactor = 1,
    boost = NO_IDS,
  ): void {
    this.#requireOpen();
    try {
      this.#native.changeViewer(viewer, what, sendPeriod, payloadBytes, viewRadius, groups, boostFactor, boost);
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
    this.#requireOpen();
    const g = groupsMask('groups', groups);
    if (this.#cameras.has(entity) && this.#native.isLive(entity)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `entity ${entity} is a spectator's camera: it is in no group, so that no viewer sees it`);
    }
    try {
      this.#native.setGroups(entity, g);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's visibility groups as last set (unsigned). @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  groups(entity: EntityId): number {
    try {
      return this.#native.entityInterest(entity)[0];
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets an entity's priority weight, an integer from 1 (default) to 16: its score is multiplied
   * by it for every viewer (drift × band weight × priority × the viewer's boost), so it is sent up
   * to 16 times as often as an entity of weight 1 with the same drift at the same distance. From
   * the next tick on. Starvation bound: with B update slots a packet and N candidates whose scores
   * grow, a candidate whose score grows r times slower than the fastest one's (r counts speeds,
   * band weights, priorities and boosts) is sent at least every 2 × ceil(N / B) × ceil(r) + 1
   * ticks (docs/api.md; test/interest.test.ts).
   * @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY, ERR_SIGHTLINE_INVALID_PRIORITY.
   */
  setPriority(entity: EntityId, weight: number): void {
    this.#requireOpen();
    const w = priorityWeight(weight);
    try {
      this.#native.setPriority(entity, w);
    } catch (e) {
      rethrow(e);
    }
  }

  /** An entity's priority weight as last set. @throws ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY. */
  priority(entity: EntityId): number {
    try {
      return this.#native.entityInterest(entity)[1];
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Stops serving a viewer and forgets its ghost table. Safe during a tick: it takes effect after
   * the pass, and every other viewer is served. @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  removeViewer(avatar: EntityId): void {
    try {
      this.#native.removeViewer(avatar);
      if (this.#cameras.delete(avatar) && this.#native.isLive(avatar)) this.#native.despawn(avatar);
    } catch (e) {
      rethrow(e);
    }
    this.#overload.removed(avatar);
    if (this.#ticking) this.#events.viewerRemoved(avatar);
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
    this.#overload.acknowledged(viewer, ack, ackBits);
    if (deferred) this.#events.deferAcknowledgement(viewer, ack, ackBits);
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
        this.#events.flush();
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
        const result = new TickResult(this, epoch, readTickMeta(meta, views));
        this.#overload.ticked(result);
        return result;
      },
      (e) => {
        this.#ticking = false;
        this.#events.flush();
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
    return this.#events.emit(bytes, target, this.#ticking);
  }

  /**
   * Events not queued for a viewer: its queue was full (multi-viewer targets and deferred events),
   * or a deferred event could not be applied when its tick ended (its viewer takes no events, or
   * was removed during that tick).
   */
  get eventsDropped(): number {
    return this.#events.dropped;
  }

  /** A viewer's events: queued so far, dropped (queue full), pending (not yet acknowledged); null if it takes none. */
  eventStats(viewer: EntityId): { queued: number; dropped: number; pending: number } | null {
    try {
      return this.#native.eventStats(viewer);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Runs the world on its own clock (see lib/loop.ts): tick n is due at start + n × 1000 / tickHz
   * ms (absolute deadlines, no drift); each tick calls `step`, awaits {@link tick}, then `onTick`
   * with the result and a report (pass time, lateness, dropped ticks). `overrun: 'stretch'` starts a
   * late tick at once; `'drop'` skips missed deadlines and counts them. A throwing callback stops
   * the loop (`done` rejects with it) and leaves the world usable; `stop()` ends it cleanly.
   * While it runs the loop owns the world's ticks: a `tick()` of your own makes the loop's next one
   * fail with ERR_SIGHTLINE_TICK_IN_PROGRESS, and `run()` while a `tick()` of your own is pending
   * is refused at once with that code. Attach a handler to `done` when you start the loop: an
   * unhandled rejection ends a Node process.
   * @throws ERR_SIGHTLINE_TICK_IN_PROGRESS (a tick() of yours is pending), ERR_SIGHTLINE_LOOP_RUNNING,
   *   ERR_SIGHTLINE_INVALID_LOOP_OPTION, ERR_SIGHTLINE_WORLD_CLOSED.
   */
  run(options: LoopOptions = {}): LoopHandle {
    this.#requireOpen();
    return runClock(this, options);
  }

  /** @internal Whether a tick's pass is running (its promise has not settled). */
  get tickPending(): boolean {
    return this.#ticking;
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
   * {@link rebuildSnapshot}): nearest cells first, within `radius` meters (default the config's
   * viewRadius; at most that, as {@link setViewRadius}), stopping at `walkCap` (default
   * config.walkCap; `Infinity` for uncapped), leaving out `exclude` and the entities whose groups
   * do not meet `groups` (default every group).
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_POSITION, ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object,
   *   walkCap not a number ≥ 1, exclude not an integer entity id, radius not in (0, viewRadius],
   *   groups not an integer mask), ERR_SIGHTLINE_UNKNOWN_OPTION (a key other than walkCap,
   *   exclude, radius and groups),
   *   ERR_SIGHTLINE_TICK_IN_PROGRESS.
   */
  gather(
    at: { x: number; y: number },
    options?: { walkCap?: number; exclude?: EntityId; radius?: number; groups?: number } | null,
  ): GatherResult {
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
    let radius = 0;
    if (o.radius !== undefined) {
      try {
        radius = viewRadiusRaw(this.config, o.radius);
      } catch (e) {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', (e as Error).message.replace('viewRadius', 'radius'));
      }
    }
    const groups = o.groups === undefined ? ALL_GROUPS : groupsMask('groups', o.groups);
    try {
      const r = this.#native.gather(x, y, walkCap, exclude === undefined ? -1 : exclude, radius, groups);
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
