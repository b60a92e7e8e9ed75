// World configuration: authored values (meters, m/s, Hz, bytes, ticks) and everything derived
// from them. Mirrors native/core/config.h and native/core/config.cpp: the same rules, checked in
// the same order, with the same error codes, the same derived integers and the same protocol hash.
// Browser-safe: imports nothing from Node.

import { SightlineError, describe } from './errors.js';
import { FRAC_BITS, RAW_PER_METER, roundHalfAwayFromZero, toMeters, toRaw } from './fixed.js';
import {
  ATTRIBUTE_HEADER_BYTES,
  MAX_ATTRIBUTE_BYTES,
  SECTION_COUNT_BYTES,
  buildFields,
  fieldFromRaw,
  fieldToRaw,
  fnvWord,
  hashState,
  readFields,
  recordBytesOf,
  type FieldInput,
  type FieldSpec,
} from './state-config.js';

export type { FieldInput, FieldSpec } from './state-config.js';

/** Wire protocol version, byte 0 of every packet (docs/wire-format.md). */
export const PROTOCOL_VERSION = 2;
/** Packet header size in bytes (docs/wire-format.md). */
export const HEADER_BYTES = 16;
/** Update record size in bytes without fields: u32 wire id + u64 packed position (a config's `recordBytes` adds its fields' bytes). */
export const RECORD_BYTES = 12;
/** Despawn record size in bytes: u32 wire id. */
export const DESPAWN_RECORD_BYTES = 4;
/** Largest cell radius (view radius in cells, rounded up): ring order and box are precomputed up to 17 × 17 cells. */
export const MAX_CELL_RADIUS = 8;
/** Largest number of cells per axis: the snapshot clears one counter per cell each tick. */
export const MAX_CELLS_PER_AXIS = 1024;
/** Largest regionSize and verticalExtent, in meters: 2^26 raw, so squared distances stay far below 2^63. */
export const MAX_REGION_METERS = 65536;
/** Largest tickHz: a tick of 1 ms. */
export const MAX_TICK_HZ = 1000;
/** Largest payloadBytes: the largest UDP payload over IPv4. */
export const MAX_PAYLOAD_BYTES = 65507;
/** newDrift's smallest value, meters: one raw unit. */
const MIN_NEW_DRIFT_METERS = 1 / 1024;
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

const DEFAULTS = {
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

// ---------------------------------------------------------------------------------------------
// Integer helpers. Every argument is a non-negative integer below 2^32.

function isPow2(v: number): boolean {
  return v >= 1 && v <= 0xffffffff && Number.isInteger(v) && ((v >>> 0) & ((v >>> 0) - 1)) === 0;
}

// floor(log2(v)); 0 for v = 0.
function ilog2(v: number): number {
  return v === 0 ? 0 : 31 - Math.clz32(v);
}

// ceil(log2(v)); 0 for v <= 1.
function ceilLog2(v: number): number {
  return v <= 1 ? 0 : 32 - Math.clz32(v - 1);
}

function fail(code: string, message: string): never {
  throw new SightlineError(code, message);
}

function requireFinitePositive(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    fail('ERR_SIGHTLINE_CONFIG_NOT_FINITE', `${name} must be a finite number, received ${describe(v)}`);
  if (!(v > 0)) fail('ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', `${name} must be greater than 0, received ${describe(v)}`);
  return v;
}

function requireInteger(name: string, v: unknown, lo: number, hi: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    fail('ERR_SIGHTLINE_CONFIG_NOT_FINITE', `${name} must be a finite number, received ${describe(v)}`);
  if (lo > 0 && !(v > 0))
    fail('ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', `${name} must be greater than 0, received ${describe(v)}`);
  if (!Number.isInteger(v)) fail('ERR_SIGHTLINE_CONFIG_NOT_INTEGER', `${name} must be an integer, received ${describe(v)}`);
  if (v < lo || v > hi)
    fail('ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', `${name} must be between ${lo} and ${hi}, received ${describe(v)}`);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Protocol hash and default band weights.

/**
 * Protocol hash: FNV-1a 32-bit over the little-endian bytes of the u32 words
 * [PROTOCOL_VERSION, FRAC_BITS, regionRaw, verticalRaw, quantShift, HEADER_BYTES, recordBytes,
 * DESPAWN_RECORD_BYTES, field count, attributeBytes], then per field its bits, min and max (float64,
 * low word first), the length of its name and the name's bytes (docs/wire-format.md, Versioning):
 * every value a decoder needs. Two configurations with the same hash decode each other's packets
 * identically. Returns an unsigned 32-bit integer.
 *
 * @param regionRaw region side, raw units (1024 per meter)
 * @param verticalRaw vertical extent, raw units
 * @param quantShift low bits dropped from each coordinate on the wire
 * @param state the fields (name, bits, min, max, in record order) and attributeBytes; default none
 */
export function protocolHash(
  regionRaw: number,
  verticalRaw: number,
  quantShift: number,
  state: { readonly fields?: readonly Pick<FieldSpec, 'name' | 'bits' | 'min' | 'max'>[]; readonly attributeBytes?: number } = {},
): number {
  const fields = state.fields ?? [];
  let bits = 0;
  for (const f of fields) bits += f.bits;
  let h = 2166136261;
  h = fnvWord(h, PROTOCOL_VERSION);
  h = fnvWord(h, FRAC_BITS);
  h = fnvWord(h, regionRaw >>> 0);
  h = fnvWord(h, verticalRaw >>> 0);
  h = fnvWord(h, quantShift >>> 0);
  h = fnvWord(h, HEADER_BYTES);
  h = fnvWord(h, recordBytesOf(bits));
  h = fnvWord(h, DESPAWN_RECORD_BYTES);
  return hashState(h, fields, state.attributeBytes ?? 0);
}

/**
 * Default band weights, 1/d: band b covers squared distances [2^b, 2^(b+1)) raw², i.e. distances
 * near 2^(b/2) raw units, so weight[b] = round(2^31 / 2^(b/2)) = 2^(31 - floor(b/2)), divided by
 * √2 for odd b, rounded half away from zero, at least 1. 64 unsigned 32-bit integers, halving per
 * doubling of distance: weight[0] = 2^31, weight[62] = weight[63] = 1.
 */
export function defaultBandWeights(): number[] {
  const w: number[] = [];
  for (let b = 0; b < BAND_COUNT; b++) {
    let v = 2 ** (31 - Math.floor(b / 2));
    if (b % 2 === 1) v /= Math.SQRT2;
    const r = roundHalfAwayFromZero(v);
    w.push(r < 1 ? 1 : r);
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// The configuration.

interface Derived {
  input: ResolvedWorldConfigInput;
  regionRaw: number;
  regionShift: number;
  verticalRaw: number;
  zBits: number;
  viewRadiusRaw: number;
  viewRadiusSq: number;
  cellRaw: number;
  cellShift: number;
  cellsPerAxis: number;
  cellCount: number;
  cellRadius: number;
  maxMovePerTickRaw: number;
  payloadBytes: number;
  eventReserveBytes: number;
  slotsPerPacket: number;
  walkCap: number;
  ghostCap: number;
  ghostTableCapacity: number;
  graceTicks: number;
  denseCellThreshold: number;
  subGridDivisions: number;
  subShift: number;
  newDrift: number;
  quantShift: number;
  bandWeights: readonly number[];
  fields: readonly FieldSpec[];
  fieldBits: number;
  fieldBytes: number;
  recordBytes: number;
  minPayloadBytes: number;
  attributeBytes: number;
  attributeRepeatPasses: number;
  attributeShareQ16: number;
  protocolHash: number;
}

/**
 * A validated world configuration: the authored values with defaults filled in and every derived
 * integer, field for field the native engine's `Config`. Raw units are 1/1024 m (see lib/fixed.ts).
 * Immutable (frozen). Build one with {@link WorldConfig.build}.
 */
// Passed by WorldConfig.build to the constructor, which refuses any other caller.
const BUILD_TOKEN = Symbol('WorldConfig.build');

export class WorldConfig {
  /** Authored values with defaults filled in; the object to hand to the native engine. */
  readonly input: ResolvedWorldConfigInput;

  /** Region side, raw units: regionSize × 1024. A power of two; 2^22 (4096 m) by default. */
  readonly regionRaw: number;
  /** log2(regionRaw): bits of a horizontal raw coordinate. 22 by default. */
  readonly regionShift: number;
  /** Vertical extent, raw units: verticalExtent × 1024, rounded. 2^20 (1024 m) by default. */
  readonly verticalRaw: number;
  /** ceil(log2(verticalRaw)): bits of an offset z coordinate. 20 by default. */
  readonly zBits: number;
  /** View radius, raw units. 262144 (256 m) by default. */
  readonly viewRadiusRaw: number;
  /** viewRadiusRaw², raw² (exact: below 2^53). */
  readonly viewRadiusSq: number;
  /**
   * Cell side, raw units; a power of two. Default: the largest power of two ≤ viewRadiusRaw / 2,
   * so the view circle fits a 5 × 5 box of cells. 131072 (128 m) by default.
   */
  readonly cellRaw: number;
  /** log2(cellRaw): a cell index is a raw coordinate shifted right by this. 17 by default. */
  readonly cellShift: number;
  /** Cells per axis: regionRaw / cellRaw, at most 1024. 32 by default. */
  readonly cellsPerAxis: number;
  /** Cells in the grid: cellsPerAxis². 1024 by default. */
  readonly cellCount: number;
  /** View radius in cells, rounded up: the box is (2 × cellRadius + 1)² cells. At most 8; 2 by default. */
  readonly cellRadius: number;
  /** Largest move per tick, raw units: ceil(maxSpeed × 1024 / tickHz); less than cellRaw. 2048 (2 m) by default. */
  readonly maxMovePerTickRaw: number;
  /** Bytes per packet, header included. 1200 by default (QUIC's minimum datagram size; fits a 1500-byte MTU). */
  readonly payloadBytes: number;
  /**
   * Bytes per packet that events may use (the events actually queued take what they need of it;
   * the rest carries records). 0 by default.
   */
  readonly eventReserveBytes: number;
  /**
   * Update records per packet with the whole event reserve in use, no despawns, kinds or
   * attributes: (payloadBytes - 16 - eventReserveBytes) / recordBytes, rounded down; (1200 - 16) /
   * 12 = 98 by default. A packet without events has (payloadBytes - 16) / recordBytes.
   */
  readonly slotsPerPacket: number;
  /** Candidates examined per viewer before the walk stops; 2147483647 when uncapped. 256 by default. */
  readonly walkCap: number;
  /** Nearest candidates eligible for the ghost table. 256 by default. */
  readonly ghostCap: number;
  /** Ghost table slots per viewer: 2 × ghostCap (eligible ghosts plus those inside the grace window). */
  readonly ghostTableCapacity: number;
  /** A ghost not stamped for this many of its viewer's passes is evicted. 10 by default. */
  readonly graceTicks: number;
  /** A cell holding at least this many entities gets a sub-grid. 512 by default. */
  readonly denseCellThreshold: number;
  /** Sub-cells per axis in a dense cell: 2, 4, 8 or 16. 8 by default. */
  readonly subGridDivisions: number;
  /** log2 of the sub-cell side in raw units: cellShift - log2(subGridDivisions). 14 by default. */
  readonly subShift: number;
  /** Drift given to a candidate the client does not hold, raw units. viewRadiusRaw by default. */
  readonly newDrift: number;
  /**
   * Low bits dropped from each coordinate on the wire, so that x, y (regionShift - q bits each) and
   * z (zBits - q bits) fit in 64: q = ceil((2 × regionShift + zBits - 64) / 3), at least 0.
   * 0 by default (2 × 22 + 20 = 64: lossless).
   */
  readonly quantShift: number;
  /** Weight per distance band, 64 unsigned 32-bit integers (frozen). Default: {@link defaultBandWeights}. */
  readonly bandWeights: readonly number[];
  /** Fast fields in record order, with their bit offsets (frozen; empty by default). */
  readonly fields: readonly FieldSpec[];
  /** The fields' bits together, 0 to 64. */
  readonly fieldBits: number;
  /** Bytes an update record carries after the position: ceil(fieldBits / 8). */
  readonly fieldBytes: number;
  /** Update record size, bytes: 12 (id and position) + fieldBytes. 12 by default. */
  readonly recordBytes: number;
  /**
   * The smallest payload a packet may have (this config's payloadBytes, or a viewer's): the header,
   * the event reserve and one record, and with attributes the largest attribute entry in its
   * section. 28 by default.
   */
  readonly minPayloadBytes: number;
  /** Largest attribute, bytes (0: no attributes). */
  readonly attributeBytes: number;
  /** Attribute repeat period for viewers without acks, viewer passes (0: never). 20 by default. */
  readonly attributeRepeatPasses: number;
  /** attributeShare × 65536, rounded (1 to 65535): the share the engine computes with. 16384 by default. */
  readonly attributeShareQ16: number;
  /** Protocol hash, unsigned 32-bit: see {@link protocolHash}. */
  readonly protocolHash: number;

  /** Cell side, m: cellRaw / 1024. 128 by default. */
  readonly cellSize: number;

  // Set by the constructor alone: an object made from WorldConfig.prototype without build() lacks it.
  readonly #built = true;

  /**
   * The raw value to write into `world.fields[name]` for a value in the field's declared units:
   * round((value − min) × (2^bits − 1) / (max − min)), clamped to 0 .. 2^bits − 1.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (no field of that name; value not a number).
   */
  fieldToRaw(name: string, value: number): number {
    if (typeof value !== 'number') fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `value must be a number, received ${describe(value)}`);
    return fieldToRaw(this.#field(name), value);
  }

  /**
   * A field's value in its declared units for a raw value: min + raw × (max − min) / (2^bits − 1).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (no field of that name; raw not a number).
   */
  fieldFromRaw(name: string, raw: number): number {
    if (typeof raw !== 'number') fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `raw must be a number, received ${describe(raw)}`);
    return fieldFromRaw(this.#field(name), raw);
  }

  #field(name: string): FieldSpec {
    const f = this.fields.find((g) => g.name === name);
    if (f === undefined)
      fail(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `no field named ${describe(name)}; this configuration's fields are ${this.fields.length ? this.fields.map((g) => g.name).join(', ') : 'none'}`,
      );
    return f;
  }

  /** @internal Whether value was made by {@link WorldConfig.build}, not merely given its prototype. */
  static isBuilt(value: unknown): value is WorldConfig {
    return typeof value === 'object' && value !== null && #built in value;
  }

  private constructor(token: symbol, d: Derived) {
    // Only build() holds the token: a `new WorldConfig(...)` from JavaScript gets no brand.
    if (token !== BUILD_TOKEN) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', 'a WorldConfig is made by WorldConfig.build(input), not by new WorldConfig()');
    }
    this.input = d.input;
    this.regionRaw = d.regionRaw;
    this.regionShift = d.regionShift;
    this.verticalRaw = d.verticalRaw;
    this.zBits = d.zBits;
    this.viewRadiusRaw = d.viewRadiusRaw;
    this.viewRadiusSq = d.viewRadiusSq;
    this.cellRaw = d.cellRaw;
    this.cellShift = d.cellShift;
    this.cellsPerAxis = d.cellsPerAxis;
    this.cellCount = d.cellCount;
    this.cellRadius = d.cellRadius;
    this.maxMovePerTickRaw = d.maxMovePerTickRaw;
    this.payloadBytes = d.payloadBytes;
    this.eventReserveBytes = d.eventReserveBytes;
    this.slotsPerPacket = d.slotsPerPacket;
    this.walkCap = d.walkCap;
    this.ghostCap = d.ghostCap;
    this.ghostTableCapacity = d.ghostTableCapacity;
    this.graceTicks = d.graceTicks;
    this.denseCellThreshold = d.denseCellThreshold;
    this.subGridDivisions = d.subGridDivisions;
    this.subShift = d.subShift;
    this.newDrift = d.newDrift;
    this.quantShift = d.quantShift;
    this.bandWeights = d.bandWeights;
    this.fields = d.fields;
    this.fieldBits = d.fieldBits;
    this.fieldBytes = d.fieldBytes;
    this.recordBytes = d.recordBytes;
    this.minPayloadBytes = d.minPayloadBytes;
    this.attributeBytes = d.attributeBytes;
    this.attributeRepeatPasses = d.attributeRepeatPasses;
    this.attributeShareQ16 = d.attributeShareQ16;
    this.protocolHash = d.protocolHash;
    this.cellSize = toMeters(d.cellRaw);
    Object.freeze(this);
  }

  /**
   * Validates authored values and derives the configuration, exactly as the native engine does.
   *
   * Checks, in order (the first failure throws a {@link SightlineError}):
   * - `ERR_SIGHTLINE_INVALID_ARGUMENT`: input is neither a plain object nor `undefined` (an array,
   *   a Map, a Date, a boxed number and other built-ins are refused, not read as empty).
   * - `ERR_SIGHTLINE_CONFIG_UNKNOWN_FIELD`: a key that is not one of {@link CONFIG_FIELDS}.
   * - field by field in {@link CONFIG_FIELDS} order: a field the input only inherits (found on its
   *   prototype chain, not an own property) is `ERR_SIGHTLINE_INVALID_ARGUMENT`: only own
   *   properties are read. Then types: a value that is not a number (or, in
   *   bandWeights, an entry that is not a number) is `ERR_SIGHTLINE_CONFIG_NOT_FINITE`; a
   *   bandWeights that is not an array (nor `null`/`undefined`) is `ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE`.
   * - values, in the native engine's order: `NOT_FINITE`, `NOT_POSITIVE`, `NOT_INTEGER`,
   *   `OUT_OF_RANGE`, `REGION_NOT_POWER_OF_TWO`, `RADIUS_EXCEEDS_REGION`, `CELL_NOT_POWER_OF_TWO`,
   *   `CELL_RADIUS_TOO_LARGE`, `SPEED_EXCEEDS_CELL_PER_TICK`, `PAYLOAD_TOO_SMALL`,
   *   `BAND_WEIGHT_ZERO`, then the fields (`FIELD_INVALID` for an entry, in order, then
   *   `FIELD_DUPLICATE` for a name taken by an earlier one; `FIELDS_TOO_WIDE` for more than 64
   *   bits together), `attributeBytes`, `attributeRepeatPasses`, `attributeShare`, and
   *   `PAYLOAD_TOO_SMALL` again for a record with its fields or the largest attribute entry (all
   *   prefixed `ERR_SIGHTLINE_CONFIG_`). A `fields` that is not an array, or an entry that is not
   *   an object with own keys among name, bits, min, max and weight (name a string, the others
   *   numbers), is `ERR_SIGHTLINE_CONFIG_FIELD_INVALID` with the type checks above.
   * A WorldConfig given as input is returned as it is (configurations are immutable).
   */
  static build(input?: WorldConfigInput | WorldConfig): WorldConfig {
    if (WorldConfig.isBuilt(input)) return input;
    if (input instanceof WorldConfig) fail('ERR_SIGHTLINE_INVALID_ARGUMENT', 'config has the WorldConfig prototype but was not made by WorldConfig.build()');
    return new WorldConfig(BUILD_TOKEN, derive(input));
  }
}

// Reads the authored object as the native addon does before validation: unknown keys first, then
// each field in CONFIG_FIELDS order (inherited, then type). Only own properties are read; absent
// and undefined fields take their defaults.
function readInput(input: unknown): Record<ConfigField, unknown> {
  if (input === undefined) input = {};
  // An ordinary object: not an array, nor a Map, a Date, a boxed number or another built-in that
  // holds its data elsewhere (its fields would be silently ignored).
  if (typeof input !== 'object' || input === null || Array.isArray(input) || Object.prototype.toString.call(input) !== '[object Object]')
    fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `config must be an object, received ${describe(input)}`);
  const known: readonly string[] = CONFIG_FIELDS;
  for (const key of Object.keys(input)) {
    if (!known.includes(key))
      fail(
        'ERR_SIGHTLINE_CONFIG_UNKNOWN_FIELD',
        `unknown config field ${describe(key)}; valid fields are ${CONFIG_FIELDS.join(', ')}`,
      );
  }
  const src = input as Record<string, unknown>;
  const own = (f: ConfigField): unknown => {
    if (Object.prototype.hasOwnProperty.call(src, f)) return src[f];
    if (f in src)
      fail(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `config field ${f} is inherited, not an own property of the config; only own properties are read (copy it: { ...config })`,
      );
    return undefined;
  };
  const out = {} as Record<ConfigField, unknown>;
  for (const f of CONFIG_FIELDS) {
    if (f === 'bandWeights' || f === 'fields') continue;
    const v = own(f);
    if (v === undefined) {
      out[f] = DEFAULTS[f];
      continue;
    }
    if (typeof v !== 'number')
      fail('ERR_SIGHTLINE_CONFIG_NOT_FINITE', `${f} must be a finite number, received ${describe(v)}`);
    out[f] = v;
  }
  const w = own('bandWeights');
  if (w === undefined || w === null) {
    out.bandWeights = undefined;
  } else {
    // An array, or a typed array of numbers (a BigInt64Array's entries are not numbers).
    const typed = ArrayBuffer.isView(w) && !(w instanceof DataView);
    if (!Array.isArray(w) && !typed)
      fail(
        'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
        `bandWeights must be an array or typed array of ${BAND_COUNT} integers, received ${describe(w)}`,
      );
    const list: unknown[] = Array.from(w as ArrayLike<unknown>);
    for (let i = 0; i < list.length; i++) {
      const e: unknown = list[i];
      if (typeof e !== 'number')
        fail('ERR_SIGHTLINE_CONFIG_NOT_FINITE', `bandWeights[${i}] must be a finite number, received ${describe(e)}`);
    }
    out.bandWeights = list as number[];
  }
  out.fields = readFields(own('fields'));
  return out;
}

// Mirrors buildConfig() in native/core/config.cpp step by step.
function derive(raw: unknown): Derived {
  const inp = readInput(raw);

  const regionSize = requireFinitePositive('regionSize', inp.regionSize);
  const verticalExtent = requireFinitePositive('verticalExtent', inp.verticalExtent);
  const viewRadius = requireFinitePositive('viewRadius', inp.viewRadius);
  const maxSpeed = requireFinitePositive('maxSpeed', inp.maxSpeed);
  const tickHz = requireFinitePositive('tickHz', inp.tickHz);
  if (tickHz > MAX_TICK_HZ) fail('ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', `tickHz must be at most ${MAX_TICK_HZ} Hz, received ${describe(tickHz)}`);

  // Region: a power of two of whole meters, so a cell index is the top bits of a raw coordinate.
  if (regionSize > MAX_REGION_METERS)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `regionSize must be at most ${MAX_REGION_METERS} m, received ${describe(regionSize)}`,
    );
  if (!Number.isInteger(regionSize) || !isPow2(regionSize))
    fail(
      'ERR_SIGHTLINE_CONFIG_REGION_NOT_POWER_OF_TWO',
      `regionSize must be a power of two of whole meters, at most 65536 (..., 1024, 2048, 4096, ...), received ${describe(regionSize)}`,
    );
  const regionRaw = regionSize * RAW_PER_METER;
  const regionShift = ilog2(regionRaw);

  if (verticalExtent > MAX_REGION_METERS)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `verticalExtent must be at most ${MAX_REGION_METERS} m, received ${describe(verticalExtent)}`,
    );
  const verticalRaw = toRaw(verticalExtent);
  if (verticalRaw < 2)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `verticalExtent must be at least 2 raw units (0.002 m), received ${describe(verticalExtent)}`,
    );
  const zBits = ceilLog2(verticalRaw);

  const viewRadiusRaw = toRaw(viewRadius);
  if (viewRadiusRaw < 1)
    fail(
      'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE',
      `viewRadius must be at least 1 raw unit (1/1024 m), received ${describe(viewRadius)}`,
    );
  if (viewRadiusRaw > regionRaw)
    fail(
      'ERR_SIGHTLINE_CONFIG_RADIUS_EXCEEDS_REGION',
      `viewRadius must be at most regionSize (${regionSize} m), received ${describe(viewRadius)}`,
    );
  const viewRadiusSq = viewRadiusRaw * viewRadiusRaw;

  // Cell: a power of two; by default the largest one <= viewRadius / 2 (so the box is 5 x 5).
  let cellRaw: number;
  const cellSizeIn = inp.cellSize;
  if (cellSizeIn === 0) {
    const half = Math.floor(viewRadiusRaw / 2);
    cellRaw = half < 1 ? 1 : 2 ** ilog2(half);
  } else {
    const cellSize = requireFinitePositive('cellSize', cellSizeIn);
    const r = cellSize * RAW_PER_METER;
    if (!Number.isInteger(r) || r > regionRaw || !isPow2(r))
      fail(
        'ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO',
        `cellSize must be a power of two in meters (..., 64, 128, 256) no larger than regionSize (${regionSize} m), received ${describe(cellSize)}`,
      );
    cellRaw = r;
  }
  let cellShift = ilog2(cellRaw);
  if (cellRaw > regionRaw) {
    cellRaw = regionRaw;
    cellShift = regionShift;
  }
  const cellsPerAxis = 2 ** (regionShift - cellShift);
  if (cellsPerAxis > MAX_CELLS_PER_AXIS)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `regionSize / cellSize must be at most ${MAX_CELLS_PER_AXIS} cells per axis, received ${cellsPerAxis} (cell ${toMeters(cellRaw)} m)`,
    );
  const cellCount = cellsPerAxis * cellsPerAxis;
  const cellRadius = Math.ceil(viewRadiusRaw / cellRaw);
  if (cellRadius > MAX_CELL_RADIUS)
    fail(
      'ERR_SIGHTLINE_CONFIG_CELL_RADIUS_TOO_LARGE',
      `viewRadius / cellSize must be at most ${MAX_CELL_RADIUS} cells, received ${cellRadius} (viewRadius ${viewRadius} m, cell ${toMeters(cellRaw)} m)`,
    );

  // An entity may cross at most one cell boundary per axis per tick.
  const maxMovePerTickRaw = Math.ceil((maxSpeed * RAW_PER_METER) / tickHz);
  if (maxMovePerTickRaw >= cellRaw)
    fail(
      'ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK',
      `maxSpeed / tickHz must be less than one cell (${toMeters(cellRaw)} m) per tick, received ${maxSpeed} m/s at ${tickHz} Hz (${toMeters(maxMovePerTickRaw)} m per tick)`,
    );

  const payloadBytes = requireInteger('payloadBytes', inp.payloadBytes, 1, Number.MAX_SAFE_INTEGER);
  if (payloadBytes > MAX_PAYLOAD_BYTES)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `payloadBytes must be at most ${MAX_PAYLOAD_BYTES} (the largest UDP payload over IPv4), received ${describe(payloadBytes)}`,
    );
  const eventReserveBytes = requireInteger('eventReserveBytes', inp.eventReserveBytes, 0, MAX_PAYLOAD_BYTES);
  if (eventReserveBytes > 0 && eventReserveBytes < MIN_EVENT_RESERVE_BYTES)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `eventReserveBytes must be 0, or at least ${MIN_EVENT_RESERVE_BYTES} (a 3-byte events section and one event of 2 + 1 bytes), received ${describe(eventReserveBytes)}`,
    );
  const minPayload = HEADER_BYTES + eventReserveBytes + RECORD_BYTES;
  if (payloadBytes < minPayload)
    fail(
      'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL',
      `payloadBytes must hold the ${HEADER_BYTES}-byte header, the event reserve (${eventReserveBytes}) and one ${RECORD_BYTES}-byte record: at least ${minPayload}, received ${payloadBytes}`,
    );

  if (inp.walkCap === -Infinity)
    fail('ERR_SIGHTLINE_CONFIG_NOT_FINITE', `walkCap must be an integer from 1 to ${UNCAPPED_WALK}, or Infinity (uncapped), received -Infinity`);
  const walkCapIn = inp.walkCap === Infinity ? UNCAPPED_WALK : inp.walkCap;
  const walkCap = requireInteger('walkCap', walkCapIn, 1, UNCAPPED_WALK);
  const ghostCap = requireInteger('ghostCap', inp.ghostCap, 1, 16384);
  const ghostTableCapacity = 2 * ghostCap;
  const graceTicks = requireInteger('graceTicks', inp.graceTicks, 0, 30000);
  const denseCellThreshold = requireInteger('denseCellThreshold', inp.denseCellThreshold, 1, 2 ** 30);
  const subGridDivisions = requireInteger('subGridDivisions', inp.subGridDivisions, 2, 16);
  if (!isPow2(subGridDivisions) || subGridDivisions < 2 || subGridDivisions > cellRaw)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `subGridDivisions must be 2, 4, 8 or 16 and no more than the cell's raw size, received ${describe(subGridDivisions)}`,
    );
  const subShift = cellShift - ilog2(subGridDivisions);

  let newDrift: number;
  const newDriftIn = inp.newDrift;
  if (newDriftIn === -1) {
    newDrift = viewRadiusRaw;
  } else {
    const meters = requireFinitePositive('newDrift', newDriftIn);
    const r = toRaw(meters);
    // The lower bound is checked in meters (rounding would let 1/2048 m become 1 raw unit).
    if (meters < MIN_NEW_DRIFT_METERS || r > 0xffffffff)
      fail(
        'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
        `newDrift must be between 1/1024 m and 4294967295/1024 m (raw 1 to 2^32 - 1), received ${describe(meters)}`,
      );
    newDrift = r;
  }

  let bandWeights: readonly number[];
  let authoredWeights: readonly number[] | undefined;
  const bw = inp.bandWeights as readonly unknown[] | undefined;
  if (bw === undefined || bw.length === 0) {
    bandWeights = Object.freeze(defaultBandWeights());
    authoredWeights = undefined;
  } else {
    if (bw.length !== BAND_COUNT)
      fail(
        'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
        `bandWeights must have exactly ${BAND_COUNT} entries, received ${bw.length}`,
      );
    const w: number[] = [];
    for (let b = 0; b < BAND_COUNT; b++) {
      const v: unknown = bw[b];
      if (v === 0)
        fail(
          'ERR_SIGHTLINE_CONFIG_BAND_WEIGHT_ZERO',
          `bandWeights[${b}] must be at least 1 (a zero weight would never send that band), received ${describe(v)}`,
        );
      w.push(requireInteger(`bandWeights[${b}]`, v, 1, 4294967295));
    }
    bandWeights = Object.freeze(w);
    authoredWeights = bandWeights;
  }

  // State beyond positions: fast fields in every record, attributes in a section of their own.
  const fields = Object.freeze(buildFields(inp.fields as FieldInput[]));
  let fieldBits = 0;
  for (const f of fields) fieldBits += f.bits;
  const fieldBytes = Math.ceil(fieldBits / 8);
  const recordBytes = recordBytesOf(fieldBits);
  const attributeBytes = requireInteger('attributeBytes', inp.attributeBytes, 0, MAX_ATTRIBUTE_BYTES);
  const attributeRepeatPasses = requireInteger('attributeRepeatPasses', inp.attributeRepeatPasses, 0, 65535);
  const share = inp.attributeShare as number;
  if (!Number.isFinite(share)) fail('ERR_SIGHTLINE_CONFIG_NOT_FINITE', `attributeShare must be a finite number, received ${describe(share)}`);
  if (!(share >= 1 / 64 && share <= 63 / 64))
    fail('ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', `attributeShare must be from 1/64 to 63/64 (0.015625 to 0.984375), received ${describe(share)}`);
  const attributeShareQ16 = roundHalfAwayFromZero(share * 65536);
  // A packet holds the header, the event reserve and one record; with attributes, also one
  // attributes section holding the largest entry.
  const needRecord = HEADER_BYTES + eventReserveBytes + recordBytes;
  const needAttribute = attributeBytes === 0 ? 0 : HEADER_BYTES + eventReserveBytes + SECTION_COUNT_BYTES + ATTRIBUTE_HEADER_BYTES + attributeBytes;
  if (payloadBytes < needRecord || payloadBytes < needAttribute)
    fail(
      'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL',
      `payloadBytes must hold the ${HEADER_BYTES}-byte header, the event reserve (${eventReserveBytes}) and one ${recordBytes}-byte record` +
        (attributeBytes ? ` or an attributes section of one ${attributeBytes}-byte attribute (${SECTION_COUNT_BYTES + ATTRIBUTE_HEADER_BYTES + attributeBytes} bytes)` : '') +
        `: at least ${Math.max(needRecord, needAttribute)}, received ${payloadBytes}`,
    );
  const minPayloadBytes = Math.max(needRecord, needAttribute);
  const slotsPerPacket = Math.floor((payloadBytes - HEADER_BYTES - eventReserveBytes) / recordBytes);

  // Wire position: x and y take (regionShift - q) bits, z takes (zBits - q); the three fit in 64.
  const excess = 2 * regionShift + zBits - 64;
  const quantShift = excess <= 0 ? 0 : Math.floor((excess + 2) / 3);

  const input: ResolvedWorldConfigInput = Object.freeze({
    regionSize,
    verticalExtent,
    viewRadius,
    maxSpeed,
    tickHz,
    cellSize: toMeters(cellRaw),
    payloadBytes,
    eventReserveBytes,
    walkCap: inp.walkCap as number,
    ghostCap,
    graceTicks,
    denseCellThreshold,
    subGridDivisions,
    newDrift: newDriftIn === -1 ? toMeters(newDrift) : (newDriftIn as number),
    bandWeights: authoredWeights,
    fields: Object.freeze(fields.map((f) => Object.freeze({ name: f.name, bits: f.bits, min: f.min, max: f.max, weight: f.weight }))),
    attributeBytes,
    attributeRepeatPasses,
    attributeShare: share,
  });

  return {
    input,
    regionRaw,
    regionShift,
    verticalRaw,
    zBits,
    viewRadiusRaw,
    viewRadiusSq,
    cellRaw,
    cellShift,
    cellsPerAxis,
    cellCount,
    cellRadius,
    maxMovePerTickRaw,
    payloadBytes,
    eventReserveBytes,
    slotsPerPacket,
    walkCap,
    ghostCap,
    ghostTableCapacity,
    graceTicks,
    denseCellThreshold,
    subGridDivisions,
    subShift,
    newDrift,
    quantShift,
    bandWeights,
    fields,
    fieldBits,
    fieldBytes,
    recordBytes,
    minPayloadBytes,
    attributeBytes,
    attributeRepeatPasses,
    attributeShareQ16,
    protocolHash: protocolHash(regionRaw, verticalRaw, quantShift, { fields, attributeBytes }),
  };
}
