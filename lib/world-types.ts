// The shapes the World API takes and returns: entity ids, positions (meters and raw), options,
// packets, and the introspection views (gather, ghost table).
import type { NativeTickStats } from './binding.js';

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

import type { CongestionOptions } from './congestion.js';
/** Options of {@link World.spawn}. */
export interface SpawnOptions {
  /** The entity's kind, an integer 0 to 65535 (u16). Default 0. */
  kind?: number;
  /** Its first attributes (copied; at most config.attributeBytes). Default none. */
  attributes?: Uint8Array;
}

export interface WorldOptions {
  /** Entity slots, 1 to 1,048,576. Default 65,536. */
  capacity?: number;
  /** Threads for the pass: 0 = one per CPU the process may run on (its affinity mask; default), 1 = inline on one pool thread. */
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
  /**
   * Congestion control for the viewers added with `{ acks: true }` (lib/congestion.ts): each one's
   * round-trip time and loss from its acknowledgements, and a good/bad mode (Fiedler's, with a
   * doubling penalty) that serves a congested client half as often with half-size packets until
   * its link has been good for a while. `true`: on, with the defaults; or
   * {@link CongestionOptions}; `false` or left out: off (the default: a client that loses packets
   * keeps its rate unless the server asks for this). Viewers without acks are never touched.
   */
  congestion?: boolean | CongestionOptions;
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
  /**
   * This viewer's view radius, m: more than 0 and at most config.viewRadius (a zoomed-in map, a
   * low-bandwidth client). Its subscription box covers the cells within it. Default:
   * config.viewRadius. Changeable with {@link World.setViewRadius}.
   */
  viewRadius?: number;
}

/** A viewer's settings as last set ({@link World.viewerSettings}). */
export interface ViewerSettings {
  /** Bytes per packet, header included. */
  readonly payloadBytes: number;
  /** Served every Nth tick. */
  readonly sendPeriod: number;
  /** View radius, m. */
  readonly viewRadius: number;
  /** Whether the client acknowledges packets (fixed when the viewer is added). */
  readonly acks: boolean;
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

/**
 * Fast fields by name: an Int32Array per field of the config, by slot, over the engine's entity
 * memory (zero copy, like {@link Positions}; the same buffer rules). Write raw values:
 * `world.fields.yaw[world.slotOf(id)] = config.fieldToRaw('yaw', angle)`. A tick reads each value
 * clamped to 0 .. 2^bits − 1 (a negative value is sent as 0, one above as 2^bits − 1); a change of
 * the clamped value since the previous tick adds the field's weight to the entity's drift. A
 * spawn sets its slot's fields to 0. A null-prototype, frozen object.
 */
export type Fields = Readonly<Record<string, Int32Array>>;

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
