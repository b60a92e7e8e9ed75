// The configuration's authored fields, their defaults and limits.
// Browser-safe: imports nothing from Node.
import type { FieldInput } from './state-config.js';

export type { FieldInput, FieldSpec } from './state-config.js';
export { MAX_ATTRIBUTE_BYTES, MAX_FIELD_BITS, MAX_ONE_FIELD_BITS, MAX_FIELD_NAME_LENGTH } from './state-config.js';

/** Largest cell radius (view radius in cells, rounded up): ring order and box are precomputed up to 17 × 17 cells. */
export const MAX_CELL_RADIUS = 8;
/** Largest number of cells per axis: the snapshot clears one counter per cell each tick. */
export const MAX_CELLS_PER_AXIS = 1024;
/** Largest regionSize and verticalExtent, in meters: 2^26 raw, so squared distances stay far below 2^63. */
export const MAX_REGION_METERS = 65536;
/** Largest tickHz: a tick of 1 ms. */
export const MAX_TICK_HZ = 1000;
/** newDrift's smallest value, meters: one raw unit. */
export const MIN_NEW_DRIFT_METERS = 1 / 1024;
/** Smallest nonzero eventReserveBytes: a 3-byte events section and one event (2-byte length, 1 byte). */
export const MIN_EVENT_RESERVE_BYTES = 6;
/** Number of distance bands: band = floor(log2(squared distance in raw units)), 0..63. */
export const BAND_COUNT = 64;
/** walkCap used for `walkCap: Infinity` (uncapped): the largest Int32. */
export const UNCAPPED_WALK = 2147483647;

/** Authored configuration fields, in the order the native engine validates them. */
export const CONFIG_FIELDS = [
  'regionSize',
  'verticalExtent',
  'viewRadius',
  'maxSpeed',
  'tickHz',
  'cellSize',
  'payloadBytes',
  'eventReserveBytes',
  'walkCap',
  'ghostCap',
  'graceTicks',
  'denseCellThreshold',
  'subGridDivisions',
  'newDrift',
  'bandWeights',
  'fields',
  'attributeBytes',
  'attributeRepeatPasses',
  'attributeShare',
] as const;

/** Name of an authored configuration field. */
export type ConfigField = (typeof CONFIG_FIELDS)[number];

/**
 * Authored configuration. Every field is optional; an omitted (or `undefined`) field takes its
 * default. Units: meters, meters per second, hertz, bytes, ticks.
 */
export interface WorldConfigInput {
  /** Side of the square region, m. A power of two of whole meters, at most 65536. Default 4096. */
  regionSize?: number;
  /** Vertical extent, m; z lies in [-extent/2, extent/2). At most 65536, at least 2 raw units. Default 1024. */
  verticalExtent?: number;
  /** View radius, m: entities farther than this from a viewer are never sent. Default 256. */
  viewRadius?: number;
  /** Largest entity speed, m/s. maxSpeed / tickHz must be less than one cell. Default 40. */
  maxSpeed?: number;
  /** Simulation tick rate, Hz; at most 1000 (a tick of 1 ms). Default 20. */
  tickHz?: number;
  /** Grid cell side, m; a power of two in raw units, at most 1024 cells per axis (regionSize / cellSize). Default: the largest power of two ≤ viewRadius / 2. `0` also means the default. */
  cellSize?: number;
  /** Bytes per packet, header included. Default 1200 (QUIC's minimum datagram size; fits a 1500-byte MTU). */
  payloadBytes?: number;
  /** Bytes per packet held back for events: 0 (no events), or at least 6 (the smallest that holds one event). Default 0. */
  eventReserveBytes?: number;
  /** Candidates examined per viewer before the walk stops: an integer from 1 to 2^31 − 1, or `Infinity` (uncapped). Default 256. */
  walkCap?: number;
  /** Nearest candidates eligible for the ghost table, 1 to 16384. Default 256. */
  ghostCap?: number;
  /**
   * Grace window, in passes of the ghost's viewer (0 to 30000): a ghost not eligible on graceTicks + 1
   * consecutive passes departs, and its despawn record goes in the packet of the pass after them (an
   * entity that leaves before pass p is despawned in pass p + graceTicks + 1). Default 10.
   */
  graceTicks?: number;
  /** A cell holding at least this many entities gets a sub-grid. Default 512. */
  denseCellThreshold?: number;
  /** Sub-cells per axis in a dense cell: 2, 4, 8 or 16. Default 8. */
  subGridDivisions?: number;
  /** Drift given to a candidate the client does not hold, m (1/1024 to (2^32 − 1)/1024, about 4,194,304). Default: viewRadius. `-1` also means the default. */
  newDrift?: number;
  /**
   * Weight per distance band: 64 integers in [1, 2^32 - 1], as an array or a typed array (e.g. a
   * `Uint32Array`). Default: 1/d ({@link defaultBandWeights}). An empty array or `null` also means
   * the default.
   */
  bandWeights?: readonly number[] | ArrayLike<number> | null;
  /**
   * Fast fields: small integers every update record carries after the position (a heading, an
   * animation state, health), at most 64 bits together, in this order. The game writes them by slot
   * into `world.fields[name]` (raw values 0 to 2^bits − 1; see {@link FieldInput} for units and the
   * drift a change adds). Default none. `null` also means none.
   */
  fields?: readonly FieldInput[] | null;
  /**
   * Largest attribute string per entity, bytes: 0 (no attributes; default) to 255. Attributes
   * (`world.setAttributes`) are opaque bytes sent with an entity's first sighting and after each
   * change, latest version only.
   */
  attributeBytes?: number;
  /**
   * Viewers without acknowledgements (or whose client has not acknowledged yet): every held ghost's
   * attributes are sent again about every this many of the viewer's passes, 0 to 65535 (0: never).
   * Default 20 (once a second at 20 Hz, as seed 003's server sent names).
   */
  attributeRepeatPasses?: number;
  /**
   * The floor of the kinds and attributes sections, a share of a packet's state bytes (after events
   * and despawns): while kinds or attributes are pending they get at least this share (at least one
   * largest attribute entry), and update records get at least the rest. 1/64 to 63/64. Default 0.25.
   */
  attributeShare?: number;
}

/**
 * Authored configuration with every default filled in: the object to hand to the native engine.
 * When not authored, cellSize and newDrift hold the derived values in meters (the native engine
 * derives the same raw values from them); bandWeights is `undefined` when the default table is in
 * use; walkCap keeps `Infinity` when authored so.
 */
export interface ResolvedWorldConfigInput {
  /** Side of the square region, m. */
  readonly regionSize: number;
  /** Vertical extent, m. */
  readonly verticalExtent: number;
  /** View radius, m. */
  readonly viewRadius: number;
  /** Largest entity speed, m/s. */
  readonly maxSpeed: number;
  /** Simulation tick rate, Hz. */
  readonly tickHz: number;
  /** Grid cell side, m (derived when not authored). */
  readonly cellSize: number;
  /** Bytes per packet. */
  readonly payloadBytes: number;
  /** Bytes per packet held back for events. */
  readonly eventReserveBytes: number;
  /** Candidates examined per viewer; `Infinity` when uncapped. */
  readonly walkCap: number;
  /** Nearest candidates eligible for the ghost table. */
  readonly ghostCap: number;
  /** Grace window, viewer passes. */
  readonly graceTicks: number;
  /** Entities per cell that trigger a sub-grid. */
  readonly denseCellThreshold: number;
  /** Sub-cells per axis in a dense cell. */
  readonly subGridDivisions: number;
  /** Drift given to a candidate the client does not hold, m (viewRadius, rounded to raw units, when not authored). */
  readonly newDrift: number;
  /** 64 band weights as authored, or `undefined` for the default 1/d table. */
  readonly bandWeights: readonly number[] | undefined;
  /** Fast fields, every optional filled in. */
  readonly fields: readonly Required<FieldInput>[];
  /** Largest attribute, bytes. */
  readonly attributeBytes: number;
  /** Attribute repeat period without acks, viewer passes (0: never). */
  readonly attributeRepeatPasses: number;
  /** The kinds' and attributes' floor, a share of the state bytes. */
  readonly attributeShare: number;
}

/** @internal Defaults of the authored fields (cellSize 0 and newDrift -1: derived). */
export const DEFAULTS = {
  regionSize: 4096,
  verticalExtent: 1024,
  viewRadius: 256,
  maxSpeed: 40,
  tickHz: 20,
  cellSize: 0,
  payloadBytes: 1200,
  eventReserveBytes: 0,
  walkCap: 256,
  ghostCap: 256,
  graceTicks: 10,
  denseCellThreshold: 512,
  subGridDivisions: 8,
  newDrift: -1,
  attributeBytes: 0,
  attributeRepeatPasses: 20,
  attributeShare: 0.25,
} as const;
