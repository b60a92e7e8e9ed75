// World configuration: authored values (meters, m/s, Hz, bytes, ticks) and everything derived
// from them. Mirrors native/core/config.h and native/core/config.cpp: the same rules, checked in
// the same order, with the same error codes, the same derived integers and the same protocol hash.
// The authored fields and limits are in config-limits.ts, validation and derivation in
// config-derive.ts, the wire constants and the protocol hash in wire.ts.
// Browser-safe: imports nothing from Node.

import { derive, defaultBandWeights, type Derived } from './config-derive.js';
import type { ResolvedWorldConfigInput, WorldConfigInput } from './config-limits.js';
import { SightlineError, describe } from './errors.js';
import { toMeters } from './fixed.js';
import { fieldFromRaw, fieldToRaw, type FieldSpec } from './state-config.js';

export * from './config-limits.js';
export * from './wire.js';
export { defaultBandWeights };

function fail(code: string, message: string): never {
  throw new SightlineError(code, message);
}

/**
 * A validated world configuration: the authored values with defaults filled in and every derived
 * integer, field for field the native engine's `Config`. Immutable (frozen). Build one with
 * {@link WorldConfig.build}.
 *
 * Field names follow one rule: every authored field is here under its own name, in its authored
 * unit (meters, m/s, Hz, bytes, ticks, counts), with its default or derived value filled in
 * (`regionSize`, `viewRadius`, `cellSize`, `newDrift`, ...); a value in raw fixed point (1/1024 m,
 * see lib/fixed.ts) ends in `Raw` (`regionRaw`, `viewRadiusRaw`, `cellRaw`, `newDriftRaw`), and
 * the other derived integers say what they count (`cellShift`, `cellsPerAxis`, `slotsPerPacket`).
 * `input` holds the same authored values as an object to hand to the engine.
 */
// Passed by WorldConfig.build to the constructor, which refuses any other caller.
const BUILD_TOKEN = Symbol('WorldConfig.build');

export class WorldConfig {
  /** Authored values with defaults filled in; the object to hand to the native engine. */
  readonly input: ResolvedWorldConfigInput;

  /** Side of the square region, m (input.regionSize). 4096 by default. */
  readonly regionSize: number;
  /** Vertical extent, m (input.verticalExtent); z lies in [-extent/2, extent/2). 1024 by default. */
  readonly verticalExtent: number;
  /** View radius, m (input.viewRadius). 256 by default. */
  readonly viewRadius: number;
  /** Largest entity speed, m/s (input.maxSpeed). 40 by default. */
  readonly maxSpeed: number;
  /** Tick rate, Hz (input.tickHz). 20 by default. */
  readonly tickHz: number;
  /** Cell side, m: cellRaw / 1024 (input.cellSize, derived when not authored). 128 by default. */
  readonly cellSize: number;
  /**
   * Drift given to a candidate the client does not hold, m: newDriftRaw / 1024 (input.newDrift;
   * the view radius by default). Until 0.2.0 this field held the raw value, now `newDriftRaw`.
   */
  readonly newDrift: number;

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
  readonly newDriftRaw: number;
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
  /** Largest attribute, bytes (input.attributeBytes; 0: no attributes). */
  readonly attributeBytes: number;
  /** Attribute repeat period for viewers without acks, viewer passes (input.attributeRepeatPasses; 0: never). 20 by default. */
  readonly attributeRepeatPasses: number;
  /** The kinds' and attributes' floor, a share of a packet's state bytes (input.attributeShare). 0.25 by default. */
  readonly attributeShare: number;
  /** attributeShare × 65536, rounded (1 to 65535): the share the engine computes with. 16384 by default. */
  readonly attributeShareQ16: number;
  /** Protocol hash, unsigned 32-bit: see {@link protocolHash}. */
  readonly protocolHash: number;

  // Set by the constructor alone: an object made from WorldConfig.prototype without build() lacks it.
  readonly #built = true;

  /**
   * The raw value to write into `world.fields[name]` for a value in the field's declared units:
   * round((value − min) × (2^bits − 1) / (max − min)), clamped to 0 .. 2^bits − 1 (±Infinity to
   * the ends).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (no field of that name; value not a number, or NaN).
   */
  fieldToRaw(name: string, value: number): number {
    if (typeof value !== 'number' || Number.isNaN(value)) fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `value must be a number, received ${describe(value)}`);
    return fieldToRaw(this.#field(name), value);
  }

  /**
   * A field's value in its declared units for a raw value: min + raw × ((max − min) / (2^bits − 1)).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (no field of that name; raw not an integer from 0 to
   *   2^bits − 1).
   */
  fieldFromRaw(name: string, raw: number): number {
    const field = this.#field(name);
    const top = 2 ** field.bits - 1;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > top) {
      fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `raw must be an integer from 0 to ${top} (field ${name}: ${field.bits} bits), received ${describe(raw)}`);
    }
    return fieldFromRaw(field, raw);
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
    this.newDriftRaw = d.newDrift;
    this.quantShift = d.quantShift;
    this.bandWeights = d.bandWeights;
    this.fields = d.fields;
    this.fieldBits = d.fieldBits;
    this.fieldBytes = d.fieldBytes;
    this.recordBytes = d.recordBytes;
    this.minPayloadBytes = d.minPayloadBytes;
    this.attributeBytes = d.attributeBytes;
    this.attributeRepeatPasses = d.attributeRepeatPasses;
    this.attributeShare = d.input.attributeShare;
    this.attributeShareQ16 = d.attributeShareQ16;
    this.protocolHash = d.protocolHash;
    this.regionSize = d.input.regionSize;
    this.verticalExtent = d.input.verticalExtent;
    this.viewRadius = d.input.viewRadius;
    this.maxSpeed = d.input.maxSpeed;
    this.tickHz = d.input.tickHz;
    this.cellSize = toMeters(d.cellRaw);
    this.newDrift = toMeters(d.newDrift);
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
