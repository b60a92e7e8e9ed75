// The state schema of a configuration beyond positions: fast fields (their validation, their layout
// in an update record, their units) and the protocol hash's words for them. Mirrors buildFields()
// and protocolHash() in native/core/config.cpp. Browser-safe: imports nothing from Node.

import { SightlineError, describe } from './errors.js';
import { RAW_PER_METER, roundHalfAwayFromZero } from './fixed.js';

/** Largest width of the fields together, bits: they ride in every update record after the position. */
export const MAX_FIELD_BITS = 64;
/** Largest width of one field, bits: its values are Int32 by slot, 0 to 2^bits − 1. */
export const MAX_ONE_FIELD_BITS = 31;
/** Longest field name, characters (letters, digits, underscores; not starting with a digit). */
export const MAX_FIELD_NAME_LENGTH = 32;
/** Largest attributeBytes: an attribute entry's length is one byte. */
export const MAX_ATTRIBUTE_BYTES = 255;
/** Kind record size in bytes: u32 wire id + u16 kind. */
export const KIND_RECORD_BYTES = 6;
/** Attribute entry size before its bytes: u32 wire id, u32 version, u8 length. */
export const ATTRIBUTE_HEADER_BYTES = 9;
/** The u16 count opening the kinds section and the attributes section. */
export const SECTION_COUNT_BYTES = 2;

/** A fast field as authored. */
export interface FieldInput {
  /** Name: 1 to 32 letters, digits or underscores, not starting with a digit (nor `__proto__`); unique. */
  name: string;
  /** Width, bits: an integer from 1 to 31. The fields together take at most 64 bits. */
  bits: number;
  /** The value raw 0 stands for, in the field's declared units. Default 0. */
  min?: number;
  /** The value raw 2^bits − 1 stands for, declared units; more than min. Default 2^bits − 1 (value = raw). */
  max?: number;
  /**
   * Meters of drift a change of this field adds to its entity (raw 0 to 2^32 − 1, i.e. 0 to about
   * 4,194,304 m): a still entity whose field changes is scored as one that moved this far. 0: a
   * change alone does not make the entity due. Default 1 m.
   */
  weight?: number;
}

/**
 * A validated fast field, with its place in the record. A raw value r (an integer 0 to 2^bits − 1,
 * what the game writes into `world.fields[name]`) stands for min + r × (max − min) / (2^bits − 1)
 * in the field's declared units.
 */
export interface FieldSpec {
  readonly name: string;
  readonly bits: number;
  /** Bit offset within the record's fields: bit 0 is the low bit of the byte after the position. */
  readonly offset: number;
  readonly min: number;
  readonly max: number;
  /** Drift a change adds, m. */
  readonly weight: number;
  /** Drift a change adds, raw units (round(weight × 1024)). */
  readonly weightRaw: number;
}

const FIELD_KEYS = ['name', 'bits', 'min', 'max', 'weight'] as const;

function invalid(i: number, what: string): never {
  throw new SightlineError('ERR_SIGHTLINE_CONFIG_FIELD_INVALID', `fields[${i}]${what}`);
}

/**
 * @internal The authored `fields` as the native addon reads them, before validation: an array (or
 * undefined / null: none) of ordinary objects with own keys among name, bits, min, max and weight,
 * name a string, the others numbers (min, max and weight may be absent or undefined).
 * @throws ERR_SIGHTLINE_CONFIG_FIELD_INVALID.
 */
export function readFields(value: unknown): FieldInput[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value))
    throw new SightlineError(
      'ERR_SIGHTLINE_CONFIG_FIELD_INVALID',
      `fields must be an array of { name, bits, min?, max?, weight? }, received ${describe(value)}`,
    );
  const out: FieldInput[] = [];
  const list = value as unknown[];
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    if (typeof e !== 'object' || e === null || Array.isArray(e) || Object.prototype.toString.call(e) !== '[object Object]')
      invalid(i, ` must be an object { name, bits, min?, max?, weight? }, received ${describe(e)}`);
    const known: readonly string[] = FIELD_KEYS;
    for (const key of Object.keys(e)) {
      if (!known.includes(key)) invalid(i, ` has an unknown key ${describe(key)}; valid keys are ${FIELD_KEYS.join(', ')}`);
    }
    const src = e as Record<string, unknown>;
    const own = (k: string): unknown => (Object.prototype.hasOwnProperty.call(src, k) ? src[k] : undefined);
    const name = own('name');
    if (typeof name !== 'string') invalid(i, `.name must be a string, received ${describe(name)}`);
    const bits = own('bits');
    if (typeof bits !== 'number') invalid(i, `.bits must be a number, received ${describe(bits)}`);
    const f: FieldInput = { name, bits };
    for (const k of ['min', 'max', 'weight'] as const) {
      const v = own(k);
      if (v === undefined) continue;
      if (typeof v !== 'number') invalid(i, `.${k} must be a number, received ${describe(v)}`);
      f[k] = v;
    }
    out.push(f);
  }
  return out;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * @internal Validates read fields in order (each one whole, then whether its name was taken), then
 * their total width; lays them out from bit 0.
 * @throws ERR_SIGHTLINE_CONFIG_FIELD_INVALID, ERR_SIGHTLINE_CONFIG_FIELD_DUPLICATE,
 *   ERR_SIGHTLINE_CONFIG_FIELDS_TOO_WIDE.
 */
export function buildFields(fields: readonly FieldInput[]): FieldSpec[] {
  const out: FieldSpec[] = [];
  let offset = 0;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i];
    const n = f.name;
    if (n.length > MAX_FIELD_NAME_LENGTH || !NAME.test(n) || n === '__proto__')
      invalid(i, `.name must be 1 to ${MAX_FIELD_NAME_LENGTH} letters, digits or underscores, not starting with a digit (nor __proto__), received ${JSON.stringify(n)}`);
    const bits = f.bits;
    if (!Number.isInteger(bits) || bits < 1 || bits > MAX_ONE_FIELD_BITS)
      invalid(i, `.bits must be an integer from 1 to ${MAX_ONE_FIELD_BITS}, received ${describe(bits)}`);
    const lo = f.min ?? 0;
    const hi = f.max ?? 2 ** bits - 1;
    if (!Number.isFinite(lo)) invalid(i, `.min must be a finite number, received ${describe(lo)}`);
    if (!Number.isFinite(hi)) invalid(i, `.max must be a finite number, received ${describe(hi)}`);
    if (!(lo < hi)) invalid(i, `.min must be less than .max, received min ${describe(lo)} and max ${describe(hi)}`);
    const w = f.weight ?? 1;
    if (!Number.isFinite(w) || w < 0 || w > 4294967295 / RAW_PER_METER)
      invalid(i, `.weight must be from 0 to 4294967295/1024 m (raw 0 to 2^32 - 1), received ${describe(w)}`);
    for (let j = 0; j < i; j++) {
      if (fields[j].name === n)
        throw new SightlineError('ERR_SIGHTLINE_CONFIG_FIELD_DUPLICATE', `fields[${i}].name "${n}" is the name of fields[${j}] already`);
    }
    out.push(Object.freeze({ name: n, bits, offset, min: lo, max: hi, weight: w, weightRaw: roundHalfAwayFromZero(w * RAW_PER_METER) }));
    offset += bits;
  }
  if (offset > MAX_FIELD_BITS)
    throw new SightlineError(
      'ERR_SIGHTLINE_CONFIG_FIELDS_TOO_WIDE',
      `the fields must fit ${MAX_FIELD_BITS} bits together, received ${offset} bits in ${fields.length} fields`,
    );
  return out;
}

/**
 * A field's raw value for a value in its declared units: round((value − min) × (2^bits − 1) /
 * (max − min)), clamped to 0 .. 2^bits − 1 (NaN gives 0). What to write into `world.fields[name]`.
 */
export function fieldToRaw(field: Pick<FieldSpec, 'bits' | 'min' | 'max'>, value: number): number {
  const top = 2 ** field.bits - 1;
  const r = Math.round(((value - field.min) * top) / (field.max - field.min));
  return r > 0 ? (r < top ? r : top) : 0;
}

/**
 * A field's value in its declared units for a raw value: min + raw × step, step = (max − min) /
 * (2^bits − 1), computed in that order in double precision (as the decoder does).
 */
export function fieldFromRaw(field: Pick<FieldSpec, 'bits' | 'min' | 'max'>, raw: number): number {
  return field.min + raw * ((field.max - field.min) / (2 ** field.bits - 1));
}

/** Record bytes for fields of `fieldBits` bits together: 12 (id and position) + ceil(fieldBits / 8). */
export function recordBytesOf(fieldBits: number): number {
  return 12 + Math.ceil(fieldBits / 8);
}

// FNV-1a 32-bit steps.
function fnvByte(h: number, byte: number): number {
  return Math.imul((h ^ byte) >>> 0, 16777619) >>> 0;
}

/** @internal One u32 word, little-endian, into an FNV-1a hash. */
export function fnvWord(h: number, word: number): number {
  for (let i = 0; i < 4; i++) h = fnvByte(h, (word >>> (8 * i)) & 0xff);
  return h;
}

const f64 = new Float64Array(1);
const f64Words = new Uint32Array(f64.buffer);

/**
 * @internal The protocol hash's words after the despawn record size: the field count, the largest
 * attribute, then per field its bits, min and max (float64, low word first) and its name (u32
 * length, then its bytes). Hosts are little-endian for the float words (as every JavaScript engine
 * in use is; the native side reads the same bits).
 */
export function hashState(h: number, fields: readonly Pick<FieldSpec, 'name' | 'bits' | 'min' | 'max'>[], attributeBytes: number): number {
  h = fnvWord(h, fields.length);
  h = fnvWord(h, attributeBytes >>> 0);
  for (const f of fields) {
    h = fnvWord(h, f.bits);
    f64[0] = f.min;
    h = fnvWord(fnvWord(h, f64Words[0]), f64Words[1]);
    f64[0] = f.max;
    h = fnvWord(fnvWord(h, f64Words[0]), f64Words[1]);
    h = fnvWord(h, f.name.length);
    for (let i = 0; i < f.name.length; i++) h = fnvByte(h, f.name.charCodeAt(i));
  }
  return h;
}
