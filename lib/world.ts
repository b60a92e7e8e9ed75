// World: the public face of one region's engine, in three layers by concept: its entities and the
// engine under them (world-entities.ts), its viewers with their settings, acknowledgements and
// events (world-viewers.ts), and here the tick that runs the replication pass off the JavaScript
// thread, its clock (loop.ts), the snapshot and gather, the caps and close. Its argument checks are
// in validate.ts, its shapes in world-types.ts and the tick's result in tick-result.ts.
import { markAsUntransferable } from 'node:worker_threads';
import { AT as TICK_META_AT, native, readTickMeta, type NativeWorld } from './binding.js';
import type { WorldConfig } from './config.js';
import { UNCAPPED_WALK } from './config-limits.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { run as runClock, type LoopHandle, type LoopOptions } from './loop.js';
import { TickResult } from './tick-result.js';
import { ALL_GROUPS, groupsMask, viewRadiusRaw } from './interest.js';
import { MAX_ID, checkCoordinate, isId, rethrow } from './validate.js';
import { CLOSE_ENGINE, ENGINE, REQUIRE_OPEN, readWorldSetup } from './world-entities.js';
import { EVENTS, OVERLOAD, TICKING, WorldViewers } from './world-viewers.js';
import type { EntityId, GatherResult, GhostTableView, WorldOptions } from './world-types.js';

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

const GATHER_OPTIONS = ['walkCap', 'exclude', 'radius', 'groups'] as const;

/** @internal The engine under a world, for the package's native UDP data path (lib/net/native-path.ts). */
export let engineOf: (world: World) => NativeWorld;
/**
 * @internal What a world's congestion control must hear of each acknowledgement that the native UDP
 * data path applies to the engine itself (lib/net/udp-native.ts); undefined when it is off.
 */
export let congestionObserverOf: (world: World) => ((viewer: EntityId, ack: number, ackBits: number) => void) | undefined;

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
 * Errors are {@link SightlineError}s with a `code`; a rejected call changes nothing. The entity
 * methods come from world-entities.ts, the viewer methods from world-viewers.ts.
 */
export class World extends WorldViewers {
  static {
    engineOf = (world) => world[ENGINE];
    congestionObserverOf = (world) =>
      world[OVERLOAD].congestion === null ? undefined : (viewer, ack, ackBits) => world[OVERLOAD].acknowledged(viewer, ack, ackBits);
  }
  #views: ({ generation: number; buffer: ArrayBuffer; index: Uint32Array } | undefined)[] = [undefined, undefined];
  #epoch = 0;

  /**
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (config not a WorldConfig, options not an object, a
   *   boolean option that is not a boolean), ERR_SIGHTLINE_UNKNOWN_OPTION (a key that is not a
   *   {@link WorldOptions} field, or of `congestion`; `congestion` out of range),
   *   ERR_SIGHTLINE_INVALID_CAPACITY, ERR_SIGHTLINE_INVALID_THREADS, ERR_SIGHTLINE_CONFIG_* (the
   *   native engine validates the configuration again).
   */
  constructor(config: WorldConfig, options?: WorldOptions | null) {
    // Every option is checked, congestion's too, before the engine is made.
    super(config, readWorldSetup(config, options));
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
    if (this.closed) return;
    if (this[TICKING]) {
      throw new SightlineError('ERR_SIGHTLINE_TICK_IN_PROGRESS', 'close() cannot run while a tick is running; await the tick first');
    }
    this[CLOSE_ENGINE]();
    this[EVENTS].clear();
  }

  /** Ticks run so far. */
  get tickCount(): number {
    return this[ENGINE].info().tick;
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
      p = this[ENGINE].tick();
    } catch (e) {
      rethrow(e);
    }
    const epoch = ++this.#epoch;
    this[TICKING] = true;
    return p.then(
      (meta) => {
        this[TICKING] = false;
        this[EVENTS].flush();
        // The output slot of this tick's parity: its buffer and index, fetched again only when the
        // addon made new ones (the `views` generation changed).
        const which = meta[TICK_META_AT.tick] & 1;
        let views = this.#views[which];
        if (views === undefined || views.generation !== meta[TICK_META_AT.views]) {
          const v = this[ENGINE].outputViews(which)!;
          views = { generation: meta[TICK_META_AT.views], buffer: v.buffer, index: v.index };
          this.#views[which] = views;
          markAsUntransferable(v.buffer);  // the engine writes it again two ticks later
        }
        const result = new TickResult(this, epoch, readTickMeta(meta, views));
        this[OVERLOAD].ticked(result);
        return result;
      },
      (e) => {
        this[TICKING] = false;
        this[EVENTS].flush();
        return rethrow(e);
      },
    );
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
    this[REQUIRE_OPEN]();
    return runClock(this, options);
  }

  /** @internal Whether a tick's pass is running (its promise has not settled). */
  get tickPending(): boolean {
    return this[TICKING];
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
      this[ENGINE].rebuildSnapshot();
    } catch (e) {
      rethrow(e);
    }
  }

  /** Entities in the snapshot, those outside the region, and cells with a sub-grid. */
  snapshotInfo(): { count: number; outsideRegion: number; denseCells: number; maxCellOccupancy: number } {
    return this[ENGINE].snapshotInfo();
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
    this[REQUIRE_OPEN]();
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
      const r = this[ENGINE].gather(x, y, walkCap, exclude === undefined ? -1 : exclude, radius, groups);
      return { ids: r.ids, distancesSq: r.d2, examined: r.examined };
    } catch (e) {
      rethrow(e);
    }
  }

  /** A viewer's ghost table. @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_TICK_IN_PROGRESS. */
  ghosts(avatar: EntityId): GhostTableView {
    try {
      return this[ENGINE].ghosts(avatar);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * The walk and ghost caps the pass uses from the next tick on: the config's, unless lowered
   * with {@link setCaps}.
   */
  get caps(): { walkCap: number; ghostCap: number } {
    const i = this[ENGINE].info();
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
    this[REQUIRE_OPEN]();
    const now = this.caps;
    const o = readOptions('setCaps', caps, ['walkCap', 'ghostCap'] as const);
    const walk = o.walkCap === undefined ? now.walkCap : o.walkCap;
    const ghost = o.ghostCap === undefined ? now.ghostCap : o.ghostCap;
    if (typeof walk !== 'number' || typeof ghost !== 'number') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `walkCap and ghostCap must be numbers, received ${describe(walk)} and ${describe(ghost)}`);
    }
    try {
      // Infinity is what an uncapped config's walkCap was built from (2^31 − 1): refused by a capped one.
      this[ENGINE].setCaps(walk === Infinity ? UNCAPPED_WALK : walk, ghost);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * The engine's native memory, bytes: its big allocations added up (entities, snapshot, ghost
   * tables, output buffers, scratch), what it reports to V8 as external memory.
   */
  get memoryBytes(): number {
    return this[ENGINE].info().memoryBytes;
  }
}
