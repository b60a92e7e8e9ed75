// Validation and derivation of a world configuration: reads the authored object as the native
// addon does, checks every value in native/core/config.cpp's order with its error codes, and derives
// the integers the engine uses. WorldConfig.build (config.ts) is its one caller.
import { SightlineError, describe } from './errors.js';
import { RAW_PER_METER, metersToRaw, roundHalfAwayFromZero, toMeters } from './fixed.js';
import { HEADER_BYTES, MAX_PAYLOAD_BYTES, RECORD_BYTES, protocolHash } from './wire.js';
import {
  ATTRIBUTE_HEADER_BYTES,
  MAX_ATTRIBUTE_BYTES,
  SECTION_COUNT_BYTES,
  buildFields,
  readFields,
  recordBytesOf,
  type FieldInput,
  type FieldSpec,
} from './state-config.js';
import {
  BAND_COUNT,
  CONFIG_FIELDS,
  DEFAULTS,
  MAX_CELL_RADIUS,
  MAX_CELLS_PER_AXIS,
  MAX_REGION_METERS,
  MAX_TICK_HZ,
  MIN_EVENT_RESERVE_BYTES,
  MIN_NEW_DRIFT_METERS,
  UNCAPPED_WALK,
  type ConfigField,
  type ResolvedWorldConfigInput,
} from './config-limits.js';


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

/** @internal The derived configuration, field for field the native engine's Config. */
export interface Derived {
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
        `config field ${f} is inherited, not an own property of the config; only own properties are read (make it one: { ${f}: config.${f}, ... }; a spread { ...config } leaves out getters of a class)`,
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
export function derive(raw: unknown): Derived {
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
  const verticalRaw = metersToRaw(verticalExtent);
  if (verticalRaw < 2)
    fail(
      'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
      `verticalExtent must be at least 2 raw units (0.002 m), received ${describe(verticalExtent)}`,
    );
  const zBits = ceilLog2(verticalRaw);

  const viewRadiusRaw = metersToRaw(viewRadius);
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
      `regionSize / cellSize must be at most ${MAX_CELLS_PER_AXIS} cells per axis, received ${cellsPerAxis} (cell ${toMeters(cellRaw)} m` +
        (cellSizeIn === 0
          ? `: the default cell, derived from viewRadius ${describe(viewRadius)} m as the largest power of two up to viewRadius / 2; raise viewRadius, or set cellSize to at least ${toMeters(Math.max(1, regionRaw / MAX_CELLS_PER_AXIS))} m)`
          : ')'),
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
    const r = metersToRaw(meters);
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
