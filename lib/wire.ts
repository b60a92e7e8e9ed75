// The wire format's constants and the protocol hash (docs/wire-format.md), shared by the
// configuration, the decoder and the transports. Mirrors native/core/codec.h and config.cpp.
// Browser-safe: imports nothing from Node.
import { FRAC_BITS } from './fixed.js';

/** Wire protocol version, byte 0 of every packet (docs/wire-format.md). */
export const PROTOCOL_VERSION = 1;
/** Packet header size in bytes (docs/wire-format.md). */
export const HEADER_BYTES = 16;
/** Update record size in bytes: u32 wire id + u64 packed position. */
export const RECORD_BYTES = 12;
/** Despawn record size in bytes: u32 wire id. */
export const DESPAWN_RECORD_BYTES = 4;
/** Largest payloadBytes: the largest UDP payload over IPv4. */
export const MAX_PAYLOAD_BYTES = 65507;


function fnvWord(h: number, word: number): number {
  for (let i = 0; i < 4; i++) {
    h = (h ^ ((word >>> (8 * i)) & 0xff)) >>> 0;
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h;
}

/**
 * Protocol hash: FNV-1a 32-bit over the little-endian bytes of the u32 words
 * [PROTOCOL_VERSION, FRAC_BITS, regionRaw, verticalRaw, quantShift, HEADER_BYTES, RECORD_BYTES,
 * DESPAWN_RECORD_BYTES]: every value a decoder needs. Two configurations with the same hash decode
 * each other's packets identically. Returns an unsigned 32-bit integer.
 *
 * @param regionRaw region side, raw units (1024 per meter)
 * @param verticalRaw vertical extent, raw units
 * @param quantShift low bits dropped from each coordinate on the wire
 */
export function protocolHash(regionRaw: number, verticalRaw: number, quantShift: number): number {
  let h = 2166136261;
  h = fnvWord(h, PROTOCOL_VERSION);
  h = fnvWord(h, FRAC_BITS);
  h = fnvWord(h, regionRaw >>> 0);
  h = fnvWord(h, verticalRaw >>> 0);
  h = fnvWord(h, quantShift >>> 0);
  h = fnvWord(h, HEADER_BYTES);
  h = fnvWord(h, RECORD_BYTES);
  h = fnvWord(h, DESPAWN_RECORD_BYTES);
  return h;
}
