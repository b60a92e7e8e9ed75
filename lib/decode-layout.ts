// What the decoder derives from a packet layout (lib/decode.ts): the position's bit fields, the
// fast fields' places in a record, their validation; and the per-packet id set. Browser-safe.

import { MAX_ATTRIBUTE_BYTES, MAX_FIELD_BITS, MAX_ONE_FIELD_BITS, recordBytesOf, type FieldSpec } from './state-config.js';
import { SightlineError, describe } from './errors.js';

/** A fast field as a decoder needs it: its name, width and units (a {@link FieldSpec} qualifies). */
export type PacketField = Pick<FieldSpec, 'name' | 'bits' | 'min' | 'max'>;

export function fail(code: string, message: string): never {
  throw new SightlineError(code, message);
}

// Extracts bits [offset, offset + width) of a u64 given as (hi · 2^32 + lo); width <= 31,
// offset + width <= 64. The shifts and masks are computed once per layout.
export interface BitField {
  readonly lowShift: number; // offset within lo (offset < 32), else -1
  readonly lowMask: number; // bits taken from lo, already shifted down
  readonly highShift: number; // offset within hi (offset >= 32), or 0
  readonly highMask: number; // bits taken from hi
  readonly highScale: number; // 2^(bits taken from lo): where hi's bits land
}

export function bitFieldOf(offset: number, width: number): BitField {
  if (offset >= 32) return { lowShift: -1, lowMask: 0, highShift: offset - 32, highMask: 2 ** width - 1, highScale: 1 };
  const lowBits = Math.min(width, 32 - offset);
  return {
    lowShift: offset,
    lowMask: 2 ** lowBits - 1,
    highShift: 0,
    highMask: 2 ** (width - lowBits) - 1,
    highScale: 2 ** lowBits,
  };
}

export function bits(lo: number, hi: number, f: BitField): number {
  if (f.lowShift < 0) return (hi >>> f.highShift) & f.highMask;
  return ((lo >>> f.lowShift) & f.lowMask) + (hi & f.highMask) * f.highScale;
}

/** The fields of a layout, as the decoder reads them. */
export interface FieldLayout {
  readonly fields: readonly PacketField[];
  readonly bitFields: readonly BitField[];
  /** Bits the fields use together; bits above them in the record's last field byte are 0. */
  readonly fieldBits: number;
  readonly fieldBytes: number;
  readonly recordBytes: number;
  readonly attributeBytes: number;
  /** (max − min) / (2^bits − 1) per field: declared units per raw step. */
  readonly scales: readonly number[];
}

const NO_FIELDS: FieldLayout = Object.freeze({
  fields: Object.freeze([]) as readonly PacketField[],
  bitFields: Object.freeze([]) as readonly BitField[],
  fieldBits: 0,
  fieldBytes: 0,
  recordBytes: recordBytesOf(0),
  attributeBytes: 0,
  scales: Object.freeze([]) as readonly number[],
});

// Layouts already checked, by their fields array (a WorldConfig's is frozen): a decode per packet
// then costs a lookup, not a walk of the fields.
const checked = new WeakMap<object, FieldLayout>();

/**
 * The fields part of a layout, checked: `fields` absent (none) or an array of { name (string), bits
 * (integer 1 to 31), min, max (finite, min < max) }, 64 bits at most together; `attributeBytes`
 * absent (0) or an integer 0 to 255.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT naming `name`.
 */
export function fieldLayoutOf(config: { fields?: unknown; attributeBytes?: unknown }, name: string): FieldLayout {
  const fields = config.fields;
  const attributeBytes = config.attributeBytes ?? 0;
  if (typeof attributeBytes !== 'number' || !Number.isInteger(attributeBytes) || attributeBytes < 0 || attributeBytes > MAX_ATTRIBUTE_BYTES)
    fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name}.attributeBytes must be an integer from 0 to ${MAX_ATTRIBUTE_BYTES}, received ${describe(attributeBytes)}`);
  if (fields === undefined || fields === null) return attributeBytes === 0 ? NO_FIELDS : { ...NO_FIELDS, attributeBytes };
  if (!Array.isArray(fields)) fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name}.fields must be an array of { name, bits, min, max }, received ${describe(fields)}`);
  const known = checked.get(fields);
  if (known !== undefined && known.attributeBytes === attributeBytes && Object.isFrozen(fields)) return known;
  const list = fields as unknown[];
  const out: PacketField[] = [];
  const bitFields: BitField[] = [];
  const scales: number[] = [];
  let offset = 0;
  for (let i = 0; i < list.length; i++) {
    const f = list[i] as Partial<PacketField> | null;
    const at = `${name}.fields[${i}]`;
    if (typeof f !== 'object' || f === null) fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${at} must be an object { name, bits, min, max }, received ${describe(f)}`);
    const { name: n, bits: b, min, max } = f;
    if (typeof n !== 'string') fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${at}.name must be a string, received ${describe(n)}`);
    if (typeof b !== 'number' || !Number.isInteger(b) || b < 1 || b > MAX_ONE_FIELD_BITS)
      fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${at}.bits must be an integer from 1 to ${MAX_ONE_FIELD_BITS}, received ${describe(b)}`);
    const lo = min ?? 0;
    const hi = max ?? 2 ** b - 1;
    if (typeof lo !== 'number' || typeof hi !== 'number' || !Number.isFinite(lo) || !Number.isFinite(hi) || !(lo < hi))
      fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${at}.min and .max must be finite numbers with min < max, received ${describe(lo)} and ${describe(hi)}`);
    if (offset + b > MAX_FIELD_BITS) fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name}.fields must fit ${MAX_FIELD_BITS} bits together`);
    out.push({ name: n, bits: b, min: lo, max: hi });
    bitFields.push(bitFieldOf(offset, b));
    scales.push((hi - lo) / (2 ** b - 1));
    offset += b;
  }
  const layout: FieldLayout = {
    fields: out,
    bitFields,
    fieldBits: offset,
    fieldBytes: Math.ceil(offset / 8),
    recordBytes: recordBytesOf(offset),
    attributeBytes,
    scales,
  };
  if (Object.isFrozen(fields)) checked.set(fields, layout);
  return layout;
}

// ---------------------------------------------------------------------------------------------
// Ids of one packet: an open-addressing set reused across calls, each id with a value (its update
// record's index, or DESPAWNED, or ATTRIBUTE_ONLY) and flags (a kind record, an attribute entry
// named it). A slot is occupied when its stamp equals the current stamp, so starting a packet
// costs nothing.

export const DESPAWNED = -1;
export const ATTRIBUTE_ONLY = -2;
export const HAS_KIND = 1;
export const HAS_ATTRIBUTE = 2;

let setKeys = new Uint32Array(0);
let setStamps = new Uint32Array(0);
let setValues = new Int32Array(0);
let setFlags = new Uint8Array(0);
let setStamp = 0;
let setShift = 32;

export function beginIdSet(count: number): void {
  let size = 16;
  while (size < 2 * count) size *= 2;
  if (setKeys.length < size) {
    setKeys = new Uint32Array(size);
    setStamps = new Uint32Array(size);
    setValues = new Int32Array(size);
    setFlags = new Uint8Array(size);
    setStamp = 0;
  }
  setShift = 32 - (31 - Math.clz32(setKeys.length));
  setStamp = (setStamp + 1) >>> 0;
  if (setStamp === 0) {
    setStamps.fill(0);
    setStamp = 1;
  }
}

/** The slot of id in the set, adding it with `value` when absent; ~slot (negative) when it was absent. */
export function slotOfId(id: number, value: number): number {
  const mask = setKeys.length - 1;
  let h = Math.imul(id, 0x9e3779b1) >>> setShift;
  for (;;) {
    if (setStamps[h] !== setStamp) {
      setStamps[h] = setStamp;
      setKeys[h] = id;
      setValues[h] = value;
      setFlags[h] = 0;
      return ~h;
    }
    if (setKeys[h] === id) return h;
    h = (h + 1) & mask;
  }
}

export function valueAt(slot: number): number {
  return setValues[slot];
}

/** Sets flag on a slot; false when it was set already. */
export function flagSlot(slot: number, flag: number): boolean {
  if (setFlags[slot] & flag) return false;
  setFlags[slot] |= flag;
  return true;
}
