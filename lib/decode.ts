// Packet decoding (docs/wire-format.md): the client side of native/core/codec.h.
// Browser-safe: imports nothing from Node, uses no BigInt.

import { MAX_PAYLOAD_BYTES, DESPAWN_RECORD_BYTES, HEADER_BYTES, PROTOCOL_VERSION, RECORD_BYTES } from './config.js';
import type { WorldConfig } from './config.js';
import { SightlineError, describe, isUint8Array } from './errors.js';
import { toMeters } from './fixed.js';

/**
 * The configuration fields a decoder needs. A {@link WorldConfig} qualifies; so does a plain object
 * carrying these five values (for instance one received from the server alongside its protocol hash).
 */
export type PacketLayoutConfig = Pick<WorldConfig, 'regionRaw' | 'regionShift' | 'verticalRaw' | 'zBits' | 'quantShift'>;

/** Packet header fields. */
export interface PacketHeader {
  /** Protocol version, u8 (always 1). */
  version: number;
  /** Flags, u8: bit 0 = an events section follows the header; other bits are 0. */
  flags: number;
  /** Per-viewer packet sequence number, u16, wrapping. */
  sequence: number;
  /** Server tick the packet was assembled on, u32. */
  tick: number;
  /** Reserved, u16 (0). */
  ack: number;
  /** Reserved, u16 (0). */
  ackBits: number;
}

/** One update record: an entity id and its position in meters. */
export interface PacketUpdate {
  /** Entity id, u32. */
  id: number;
  /** x, m, in [0, regionSize). */
  x: number;
  /** y, m, in [0, regionSize). */
  y: number;
  /** z, m, in [-verticalExtent / 2, verticalExtent / 2). */
  z: number;
}

/** A reliable event: its per-viewer sequence (u16, consecutive) and its bytes. */
export interface PacketEvent {
  sequence: number;
  bytes: Uint8Array;
}

/** A decoded packet, positions in meters. */
export interface DecodedPacket extends PacketHeader {
  /**
   * Reliable events carried (copies), oldest first. The server resends an event until a packet
   * carrying it is acknowledged, so a client delivers each sequence once and drops repeats.
   */
  events: PacketEvent[];
  /** Entity ids the client should drop, in packet order. */
  despawns: Uint32Array;
  /** Entity positions, in packet order. */
  updates: PacketUpdate[];
}

/**
 * A decoded packet, positions in raw units (Int32, 1024 per meter), in reusable typed arrays.
 * Entries past the counts are left over from earlier packets and are meaningless.
 */
export interface RawPacket extends PacketHeader {
  /** Reliable events carried, oldest first; `bytes` are views into the packet (copy to keep). */
  events: PacketEvent[];
  /** Despawn records in this packet; entries [0, despawnCount) of `despawns` are valid. */
  despawnCount: number;
  /** Update records in this packet; entries [0, updateCount) of `ids`, `x`, `y`, `z` are valid. */
  updateCount: number;
  /** Despawned entity ids. */
  despawns: Uint32Array;
  /** Updated entity ids. */
  ids: Uint32Array;
  /** x, raw units, in [0, regionRaw). */
  x: Int32Array;
  /** y, raw units, in [0, regionRaw). */
  y: Int32Array;
  /** z, raw units, in [-(verticalRaw >> 1), verticalRaw - (verticalRaw >> 1)). */
  z: Int32Array;
}

/**
 * Allocates a {@link RawPacket} whose arrays hold any packet of up to `payloadBytes` bytes
 * (default 1200): (payloadBytes - 16) / 4 despawns and (payloadBytes - 16) / 12 updates.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT when payloadBytes is not an integer from 16 (a header
 *   alone) to 65,507 (the largest UDP payload, as for a viewer's payloadBytes).
 */
export function createRawPacket(payloadBytes = 1200): RawPacket {
  if (typeof payloadBytes !== 'number' || !Number.isInteger(payloadBytes) || payloadBytes < HEADER_BYTES || payloadBytes > MAX_PAYLOAD_BYTES) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `payloadBytes must be an integer from ${HEADER_BYTES} to ${MAX_PAYLOAD_BYTES}, received ${describe(payloadBytes)}`,
    );
  }
  const state = payloadBytes - HEADER_BYTES;
  const despawns = Math.floor(state / DESPAWN_RECORD_BYTES);
  const updates = Math.floor(state / RECORD_BYTES);
  return rawPacketOf(despawns, updates);
}

// An empty RawPacket whose arrays hold `despawns` despawn and `updates` update records.
function rawPacketOf(despawns: number, updates: number): RawPacket {
  return {
    version: 0,
    flags: 0,
    sequence: 0,
    tick: 0,
    ack: 0,
    ackBits: 0,
    despawnCount: 0,
    updateCount: 0,
    events: [],
    despawns: new Uint32Array(despawns),
    ids: new Uint32Array(updates),
    x: new Int32Array(updates),
    y: new Int32Array(updates),
    z: new Int32Array(updates),
  };
}

/**
 * Decodes a packet into meters.
 *
 * @param bytes the whole packet (a `Uint8Array`; a Node `Buffer` qualifies)
 * @param config the configuration the server runs (its protocol hash must match)
 * @throws SightlineError with one of:
 *   `ERR_SIGHTLINE_PACKET_NOT_BYTES` (bytes is not a Uint8Array),
 *   `ERR_SIGHTLINE_INVALID_ARGUMENT` (config is not an object with non-negative integer regionRaw,
 *   regionShift, verticalRaw, zBits and quantShift that relate as a WorldConfig's do),
 *   `ERR_SIGHTLINE_PACKET_TRUNCATED` (shorter than the header, or than its counts imply),
 *   `ERR_SIGHTLINE_PACKET_OVERSIZED` (longer than its counts imply, or than 65507 bytes),
 *   `ERR_SIGHTLINE_PACKET_VERSION` (version byte other than 1),
 *   `ERR_SIGHTLINE_PACKET_INCONSISTENT` (nonzero flags, an id twice in the packet, nonzero bits
 *   above the packed position, or z outside the vertical extent).
 */
export function decodePacket(bytes: Uint8Array, config: PacketLayoutConfig): DecodedPacket {
  const raw = decodeInto(bytes, config, undefined);
  const n = raw.updateCount;
  const updates: PacketUpdate[] = new Array<PacketUpdate>(n);
  for (let i = 0; i < n; i++) {
    updates[i] = { id: raw.ids[i], x: toMeters(raw.x[i]), y: toMeters(raw.y[i]), z: toMeters(raw.z[i]) };
  }
  return {
    version: raw.version,
    flags: raw.flags,
    sequence: raw.sequence,
    tick: raw.tick,
    ack: raw.ack,
    ackBits: raw.ackBits,
    events: raw.events.map((e) => ({ sequence: e.sequence, bytes: new Uint8Array(e.bytes) })),  // a copy (Buffer#slice would be a view)
    despawns: raw.despawns,
    updates,
  };
}

/**
 * Decodes a packet into raw units (Int32, 1024 per meter), writing into `out` and returning it.
 *
 * Allocation-free when `out` is given and its arrays are long enough (see {@link createRawPacket});
 * an array that is too short is replaced on `out` by a longer one, so read the arrays from the
 * returned object rather than from references kept across calls. Without `out`, a new RawPacket
 * with arrays of exactly the packet's counts is returned. Checks and errors are those of
 * {@link decodePacket}, plus `ERR_SIGHTLINE_INVALID_ARGUMENT` when `out` is given and is not a
 * RawPacket (events an array, despawns and ids Uint32Arrays, x, y and z Int32Arrays); that one
 * leaves `out` as it was, after the others its contents are unspecified.
 */
export function decodePacketRaw(bytes: Uint8Array, config: PacketLayoutConfig, out?: RawPacket): RawPacket {
  return decodeInto(bytes, config, out);
}

// ---------------------------------------------------------------------------------------------

/** Header flag: an events section follows the header. */
export const FLAG_EVENTS = 1;
/** Bytes of the events section's own header: u16 first sequence, u8 count. */
export const EVENT_SECTION_BYTES = 3;

function fail(code: string, message: string): never {
  throw new SightlineError(code, message);
}

function u16(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8);
}

function u32(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

// Extracts bits [offset, offset + width) of a u64 given as (hi · 2^32 + lo); width <= 26,
// offset + width <= 64. The shifts and masks are computed once per packet layout.
interface Field {
  readonly lowShift: number; // offset within lo (offset < 32), else -1
  readonly lowMask: number; // bits taken from lo, already shifted down
  readonly highShift: number; // offset within hi (offset >= 32), or 0
  readonly highMask: number; // bits taken from hi
  readonly highScale: number; // 2^(bits taken from lo): where hi's bits land
}

function fieldOf(offset: number, width: number): Field {
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

function field(lo: number, hi: number, f: Field): number {
  if (f.lowShift < 0) return (hi >>> f.highShift) & f.highMask;
  return ((lo >>> f.lowShift) & f.lowMask) + (hi & f.highMask) * f.highScale;
}

// Duplicate-id detection: an open-addressing set reused across calls. A slot is occupied when its
// stamp equals the current stamp, so starting a packet costs nothing.
let setKeys = new Uint32Array(0);
let setStamps = new Uint32Array(0);
let setStamp = 0;
let setShift = 32;

function beginIdSet(count: number): void {
  let size = 16;
  while (size < 2 * count) size *= 2;
  if (setKeys.length < size) {
    setKeys = new Uint32Array(size);
    setStamps = new Uint32Array(size);
    setStamp = 0;
  }
  setShift = 32 - (31 - Math.clz32(setKeys.length));
  setStamp = (setStamp + 1) >>> 0;
  if (setStamp === 0) {
    setStamps.fill(0);
    setStamp = 1;
  }
}

// Adds id; false when it is already present.
function addId(id: number): boolean {
  const mask = setKeys.length - 1;
  let h = Math.imul(id, 0x9e3779b1) >>> setShift;
  for (;;) {
    if (setStamps[h] !== setStamp) {
      setStamps[h] = setStamp;
      setKeys[h] = id;
      return true;
    }
    if (setKeys[h] === id) return false;
    h = (h + 1) & mask;
  }
}

const LAYOUT_FIELDS = ['regionRaw', 'regionShift', 'verticalRaw', 'zBits', 'quantShift'] as const;

/**
 * @internal Throws `ERR_SIGHTLINE_INVALID_ARGUMENT` (naming the argument `name`) unless config is an object with non-negative
 * integer regionRaw, regionShift, verticalRaw, zBits and quantShift that relate as a WorldConfig's do.
 */
export function checkLayout(config: unknown, name = 'config'): asserts config is PacketLayoutConfig {
  if (typeof config !== 'object' || config === null)
    fail(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `${name} must be a WorldConfig or a packet layout { ${LAYOUT_FIELDS.join(', ')} }, received ${describe(config)}`,
    );
  const c = config as Record<string, unknown>;
  for (let i = 0; i < LAYOUT_FIELDS.length; i++) {
    const v = c[LAYOUT_FIELDS[i]];
    if (typeof v !== 'number' || v >>> 0 !== v)
      fail(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `${name}.${LAYOUT_FIELDS[i]} must be an integer from 0 to 2^32 - 1 (a WorldConfig or a packet layout { ${LAYOUT_FIELDS.join(', ')} }), received ${describe(v)}`,
      );
  }
  // The relations a WorldConfig's layout always has: regionRaw = 2^regionShift, zBits = the bits
  // verticalRaw needs, and quantShift = the fewest low bits to drop for the packed position to fit
  // 64 bits (as WorldConfig.build derives it).
  const { regionRaw, regionShift, verticalRaw, zBits, quantShift } = c as unknown as PacketLayoutConfig;
  const excess = 2 * regionShift + zBits - 64;
  const derivedShift = excess <= 0 ? 0 : Math.floor((excess + 2) / 3);
  const problem =
    regionShift > 30 || regionRaw !== 2 ** regionShift
      ? `regionRaw (${regionRaw}) must be 2^regionShift (regionShift ${regionShift}, at most 30)`
      : zBits > 30 || verticalRaw < 1 || verticalRaw > 2 ** zBits || (zBits > 0 && verticalRaw <= 2 ** (zBits - 1))
        ? `zBits (${zBits}) must be the bits verticalRaw (${verticalRaw}) needs: verticalRaw from 2^(zBits - 1) + 1 to 2^zBits (1 for zBits 0), zBits at most 30`
        : quantShift !== derivedShift
          ? `quantShift (${quantShift}) must be ${derivedShift}, the fewest low bits to drop for 2 × (regionShift - quantShift) + (zBits - quantShift) to fit 64 bits (regionShift ${regionShift}, zBits ${zBits})`
          : null;
  if (problem !== null) fail('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} is not a packet layout a WorldConfig builds: ${problem}`);
}

function checkRawPacket(out: unknown): void {
  const o = out as Partial<Record<keyof RawPacket, unknown>> | null;
  if (
    typeof o !== 'object' ||
    o === null ||
    !Array.isArray(o.events) ||
    !(o.despawns instanceof Uint32Array) ||
    !(o.ids instanceof Uint32Array) ||
    !(o.x instanceof Int32Array) ||
    !(o.y instanceof Int32Array) ||
    !(o.z instanceof Int32Array)
  )
    fail(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `out must be a RawPacket (see createRawPacket): events an array, despawns and ids Uint32Arrays, x, y and z Int32Arrays; received ${describe(out)}`,
    );
}

function decodeInto(bytes: Uint8Array, config: PacketLayoutConfig, out: RawPacket | undefined): RawPacket {
  if (!isUint8Array(bytes))
    fail('ERR_SIGHTLINE_PACKET_NOT_BYTES', `packet must be a Uint8Array, received ${describe(bytes)}`);
  checkLayout(config);
  if (out !== undefined) checkRawPacket(out);
  const len = bytes.length;
  if (len > MAX_PAYLOAD_BYTES)
    fail('ERR_SIGHTLINE_PACKET_OVERSIZED', `packet is ${len} bytes, more than the largest payload (${MAX_PAYLOAD_BYTES})`);
  if (len < HEADER_BYTES)
    fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, shorter than the ${HEADER_BYTES}-byte header`);

  const version = bytes[0];
  if (version !== PROTOCOL_VERSION)
    fail('ERR_SIGHTLINE_PACKET_VERSION', `packet version must be ${PROTOCOL_VERSION}, received ${version}`);
  const flags = bytes[1];
  if ((flags & ~FLAG_EVENTS) !== 0)
    fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `packet flags must be 0 or 1 (events), received ${flags}`);
  const despawnCount = u16(bytes, 12);
  const updateCount = u16(bytes, 14);
  // Events section: u16 first sequence, u8 count, then count x (u16 length, bytes).
  let eventBytes = 0;
  let firstEvent = 0;
  let eventCount = 0;
  if (flags & FLAG_EVENTS) {
    if (len < HEADER_BYTES + EVENT_SECTION_BYTES)
      fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, too short for the events section it announces`);
    firstEvent = u16(bytes, HEADER_BYTES);
    eventCount = bytes[HEADER_BYTES + 2];
    if (eventCount === 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', 'the events section announces no events');
    eventBytes = EVENT_SECTION_BYTES;
    for (let i = 0; i < eventCount; i++) {
      const at = HEADER_BYTES + eventBytes;
      if (at + 2 > len) fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, event ${i}'s length lies beyond it`);
      const n = u16(bytes, at);
      if (n === 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `event ${i} is empty`);
      if (at + 2 + n > len) fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, event ${i} (${n} bytes) runs past it`);
      eventBytes += 2 + n;
    }
  }
  const expected = HEADER_BYTES + eventBytes + despawnCount * DESPAWN_RECORD_BYTES + updateCount * RECORD_BYTES;
  if (len < expected)
    fail(
      'ERR_SIGHTLINE_PACKET_TRUNCATED',
      `packet is ${len} bytes, but its header announces ${despawnCount} despawns and ${updateCount} updates (${expected} bytes)`,
    );
  if (len > expected)
    fail(
      'ERR_SIGHTLINE_PACKET_OVERSIZED',
      `packet is ${len} bytes, but its header announces ${despawnCount} despawns and ${updateCount} updates (${expected} bytes): ${len - expected} trailing bytes`,
    );

  // Every read below lies inside [0, expected), and expected == len.
  if (out === undefined) {
    out = rawPacketOf(despawnCount, updateCount);
  } else {
    if (out.despawns.length < despawnCount) out.despawns = new Uint32Array(despawnCount);
    if (out.ids.length < updateCount) out.ids = new Uint32Array(updateCount);
    if (out.x.length < updateCount) out.x = new Int32Array(updateCount);
    if (out.y.length < updateCount) out.y = new Int32Array(updateCount);
    if (out.z.length < updateCount) out.z = new Int32Array(updateCount);
  }
  out.version = version;
  out.flags = flags;
  out.sequence = u16(bytes, 2);
  out.tick = u32(bytes, 4);
  out.ack = u16(bytes, 8);
  out.ackBits = u16(bytes, 10);
  out.despawnCount = despawnCount;
  out.updateCount = updateCount;

  beginIdSet(despawnCount + updateCount);

  let p = HEADER_BYTES;
  if (eventCount > 0) {
    const events: PacketEvent[] = [];
    let at = HEADER_BYTES + EVENT_SECTION_BYTES;
    for (let i = 0; i < eventCount; i++) {
      const n = u16(bytes, at);
      events.push({ sequence: (firstEvent + i) & 0xffff, bytes: bytes.subarray(at + 2, at + 2 + n) });
      at += 2 + n;
    }
    out.events = events;
  } else if (out.events.length > 0) {
    out.events = [];
  }
  p += eventBytes;

  const despawns = out.despawns;
  for (let i = 0; i < despawnCount; i++, p += DESPAWN_RECORD_BYTES) {
    const id = u32(bytes, p);
    if (!addId(id)) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `despawn record ${i}: entity ${id} appears twice in the packet`);
    despawns[i] = id;
  }

  // Position layout: x in bits [0, B), y in [B, 2B), z in [2B, 2B + Z); value = field << q.
  const q = config.quantShift;
  const B = config.regionShift - q;
  const Z = config.zBits - q;
  const used = 2 * B + Z;
  const fx = fieldOf(0, B);
  const fy = fieldOf(B, B);
  const fz = fieldOf(2 * B, Z);
  const scale = 2 ** q;
  const regionRaw = config.regionRaw;
  const verticalRaw = config.verticalRaw;
  const zHalf = Math.floor(verticalRaw / 2);
  const ids = out.ids;
  const xs = out.x;
  const ys = out.y;
  const zs = out.z;
  for (let i = 0; i < updateCount; i++, p += RECORD_BYTES) {
    const id = u32(bytes, p);
    const lo = u32(bytes, p + 4);
    const hi = u32(bytes, p + 8);
    if (!addId(id)) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `update record ${i}: entity ${id} appears twice in the packet`);
    const unused = used >= 64 ? 0 : used >= 32 ? hi >>> (used - 32) : (lo >>> used) | hi;
    if (unused !== 0)
      fail(
        'ERR_SIGHTLINE_PACKET_INCONSISTENT',
        `update record ${i} (entity ${id}): bits above bit ${used} of the packed position must be 0`,
      );
    const x = field(lo, hi, fx) * scale;
    const y = field(lo, hi, fy) * scale;
    const zOffset = field(lo, hi, fz) * scale;
    if (x >= regionRaw || y >= regionRaw)
      fail(
        'ERR_SIGHTLINE_PACKET_INCONSISTENT',
        `update record ${i} (entity ${id}): position (${x}, ${y}) raw lies outside the region [0, ${regionRaw})`,
      );
    if (zOffset >= verticalRaw)
      fail(
        'ERR_SIGHTLINE_PACKET_INCONSISTENT',
        `update record ${i} (entity ${id}): z ${zOffset - zHalf} raw lies outside the vertical extent [${-zHalf}, ${verticalRaw - zHalf})`,
      );
    ids[i] = id;
    xs[i] = x;
    ys[i] = y;
    zs[i] = zOffset - zHalf;
  }
  return out;
}

// What a client needs besides the decoder, for an import of this entry point alone (a browser
// bundle: `sightline` itself loads the native addon).
export { SightlineError } from './errors.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from './fixed.js';
