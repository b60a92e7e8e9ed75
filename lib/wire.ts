// The wire format's constants and the protocol hash (docs/wire-format.md), shared by the
// configuration, the decoder and the transports. Mirrors native/core/codec.h and config.cpp.
// Browser-safe: imports nothing from Node.
import { FRAC_BITS } from './fixed.js';
import { fnvWord, hashState, recordBytesOf, type FieldSpec } from './state-config.js';

export { ATTRIBUTE_HEADER_BYTES, KIND_RECORD_BYTES, SECTION_COUNT_BYTES } from './state-config.js';

/** Wire protocol version, byte 0 of every packet (docs/wire-format.md). */
export const PROTOCOL_VERSION = 2;
/** Packet header size in bytes (docs/wire-format.md). */
export const HEADER_BYTES = 16;
/** Update record size in bytes without fields: u32 wire id + u64 packed position (a config's `recordBytes` adds its fields' bytes). */
export const RECORD_BYTES = 12;
/** Despawn record size in bytes: u32 wire id. */
export const DESPAWN_RECORD_BYTES = 4;
/** Largest payloadBytes: the largest UDP payload over IPv4. */
export const MAX_PAYLOAD_BYTES = 65507;

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
