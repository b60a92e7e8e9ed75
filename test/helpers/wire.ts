// A small packet encoder written from docs/wire-format.md alone (BigInt is fine here), for decoder
// tests: version 2, with fields, kinds, attributes and events.

export interface WireLayout {
  regionRaw: number;
  regionShift: number;
  verticalRaw: number;
  zBits: number;
  quantShift: number;
  fields?: readonly { name: string; bits: number; min: number; max: number }[];
  attributeBytes?: number;
}

export interface WireUpdate {
  id: number;
  x: number;
  y: number;
  z: number;
  /** Raw field values, in the layout's order. */
  fields?: number[];
}

export interface WirePacket {
  sequence: number;
  tick: number;
  version?: number;
  /** The reserved header fields, 0 unless given. */
  ack?: number;
  ackBits?: number;
  /** Overrides the flags the sections imply. */
  flags?: number;
  events?: { first: number; bytes: Uint8Array[] };
  despawns?: number[];
  updates?: WireUpdate[];
  kinds?: [id: number, kind: number][];
  attributes?: [id: number, version: number, bytes: Uint8Array][];
}

export function pack(c: WireLayout, x: number, y: number, z: number): bigint {
  const q = BigInt(c.quantShift);
  const bits = BigInt(c.regionShift - c.quantShift);
  const zHalf = Math.floor(c.verticalRaw / 2);
  const zz = Math.min(Math.max(z + zHalf, 0), c.verticalRaw - 1);
  return (BigInt(x) >> q) | ((BigInt(y) >> q) << bits) | ((BigInt(zz) >> q) << (2n * bits));
}

export function fieldBitsOf(c: WireLayout): number {
  return (c.fields ?? []).reduce((s, f) => s + f.bits, 0);
}

export function recordBytesOf(c: WireLayout): number {
  return 12 + Math.ceil(fieldBitsOf(c) / 8);
}

export function encode(c: WireLayout, p: WirePacket): Uint8Array {
  const out: number[] = [];
  const u8 = (v: number) => out.push(v & 0xff);
  const u16 = (v: number) => (u8(v), u8(v >>> 8));
  const u32 = (v: number) => (u16(v & 0xffff), u16(v >>> 16));
  const despawns = p.despawns ?? [];
  const updates = p.updates ?? [];
  const flags = p.flags ?? ((p.events ? 1 : 0) | (p.kinds?.length ? 2 : 0) | (p.attributes?.length ? 4 : 0));
  u8(p.version ?? 2);
  u8(flags);
  u16(p.sequence);
  u32(p.tick);
  u16(p.ack ?? 0);
  u16(p.ackBits ?? 0);
  u16(despawns.length);
  u16(updates.length);
  if (p.events) {
    u16(p.events.first);
    u8(p.events.bytes.length);
    for (const e of p.events.bytes) (u16(e.length), out.push(...e));
  }
  for (const d of despawns) u32(d);
  const fieldBytes = Math.ceil(fieldBitsOf(c) / 8);
  for (const u of updates) {
    u32(u.id);
    const v = pack(c, u.x, u.y, u.z);
    for (let i = 0n; i < 8n; i++) u8(Number((v >> (8n * i)) & 0xffn));
    let f = 0n;
    let off = 0n;
    (c.fields ?? []).forEach((spec, k) => {
      f |= BigInt(u.fields?.[k] ?? 0) << off;
      off += BigInt(spec.bits);
    });
    for (let i = 0; i < fieldBytes; i++) u8(Number((f >> BigInt(8 * i)) & 0xffn));
  }
  if (p.kinds?.length || flags & 2) {
    const kinds = p.kinds ?? [];
    u16(kinds.length);
    for (const [id, kind] of kinds) (u32(id), u16(kind));
  }
  if (p.attributes?.length || flags & 4) {
    const attributes = p.attributes ?? [];
    u16(attributes.length);
    for (const [id, version, bytes] of attributes) (u32(id), u32(version), u8(bytes.length), out.push(...bytes));
  }
  return Uint8Array.from(out);
}

// What the client decodes for a raw position: quantized, z clamped to the vertical extent.
export function expectedRaw(c: WireLayout, u: { x: number; y: number; z: number }): { x: number; y: number; z: number } {
  const q = 2 ** c.quantShift;
  const zHalf = Math.floor(c.verticalRaw / 2);
  const zz = Math.min(Math.max(u.z + zHalf, 0), c.verticalRaw - 1);
  return { x: Math.floor(u.x / q) * q, y: Math.floor(u.y / q) * q, z: Math.floor(zz / q) * q - zHalf };
}

export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
