// The baselines' packets, in the wire format the accumulator's client decodes.
import { DESPAWN_RECORD_BYTES, HEADER_BYTES, PROTOCOL_VERSION, RECORD_BYTES, type WorldConfig } from 'sightline';

// Writes a packet in the wire format (docs/wire-format.md): header, despawn ids, update records.
// ids: wire ids; xs/ys/zs: raw positions of the updates. Returns the packet's length in bytes.
export function encodePacket(
  out: Uint8Array,
  view: DataView,
  config: WorldConfig,
  sequence: number,
  tick: number,
  despawnIds: ArrayLike<number>,
  despawnCount: number,
  ids: ArrayLike<number>,
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  zs: ArrayLike<number>,
  updateCount: number,
): number {
  out[0] = PROTOCOL_VERSION;
  out[1] = 0;
  view.setUint16(2, sequence & 0xffff, true);
  view.setUint32(4, tick >>> 0, true);
  view.setUint16(8, 0, true);
  view.setUint16(10, 0, true);
  view.setUint16(12, despawnCount, true);
  view.setUint16(14, updateCount, true);
  let p = HEADER_BYTES;
  for (let i = 0; i < despawnCount; i++, p += DESPAWN_RECORD_BYTES) view.setUint32(p, despawnIds[i] >>> 0, true);
  const q = config.quantShift;
  const B = config.regionShift - q;
  const zHalf = Math.floor(config.verticalRaw / 2);
  const zMax = config.verticalRaw - 1;
  for (let i = 0; i < updateCount; i++, p += RECORD_BYTES) {
    const zc = Math.min(Math.max(zs[i] + zHalf, 0), zMax);
    let lo = 0;
    let hi = 0;
    // Fields of at most 26 bits at bit offsets 0, B and 2B of a 64-bit word.
    const put = (offset: number, v: number): void => {
      if (offset >= 32) hi |= v << (offset - 32);
      else {
        lo |= v << offset;
        if (offset > 0) hi |= v >>> (32 - offset);
      }
    };
    put(0, xs[i] >>> q);
    put(B, ys[i] >>> q);
    put(2 * B, zc >>> q);
    view.setUint32(p, ids[i] >>> 0, true);
    view.setUint32(p + 4, lo >>> 0, true);
    view.setUint32(p + 8, hi >>> 0, true);
  }
  return p;
}
