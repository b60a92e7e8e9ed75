// Over 500 lines as one file: one packet format, decoded in order (header, updates, events, kinds, attributes), with the two output shapes (objects and reused typed arrays) kept beside each other so they cannot drift apart.
// Packet decoding (docs/wire-format.md): the client side of native/core/codec.h. Version 2.
// Browser-safe: imports nothing from Node, uses no BigInt. The layout's derived parts and the
// per-packet id set are in decode-layout.ts.

import { MAX_PAYLOAD_BYTES, DESPAWN_RECORD_BYTES, HEADER_BYTES, PROTOCOL_VERSION, RECORD_BYTES } from './config.js';
import type { WorldConfig } from './config.js';
import {
  ATTRIBUTE_ONLY,
  DESPAWNED,
  HAS_ATTRIBUTE,
  HAS_KIND,
  beginIdSet,
  bitFieldOf,
  bits,
  fail,
  fieldLayoutOf,
  flagSlot,
  slotOfId,
  valueAt,
  type FieldLayout,
  type PacketField,
} from './decode-layout.js';
import { describe, isUint8Array } from './errors.js';
import { toMeters } from './fixed.js';
import { ATTRIBUTE_HEADER_BYTES, KIND_RECORD_BYTES, SECTION_COUNT_BYTES } from './state-config.js';

export type { PacketField } from './decode-layout.js';

/**
 * The configuration fields a decoder needs. A {@link WorldConfig} qualifies; so does a plain object
 * carrying the five position values, and, when the server's configuration has them, its `fields`
 * (name, bits, min, max, in record order) and `attributeBytes` (absent: none, 0). The protocol
 * hash covers all of them: a client whose hash matches the server's decodes its packets.
 */
export type PacketLayoutConfig = Pick<WorldConfig, 'regionRaw' | 'regionShift' | 'verticalRaw' | 'zBits' | 'quantShift'> & {
  readonly fields?: readonly PacketField[];
  readonly attributeBytes?: number;
};

/** Packet header fields. */
export interface PacketHeader {
  /** Protocol version, u8 (always 2). */
  version: number;
  /** Flags, u8: bit 0 events, bit 1 kinds, bit 2 attributes sections; other bits are 0. */
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

/** One update record: an entity id, its position in meters, its fields and its kind. */
export interface PacketUpdate {
  /** Entity id, u32. */
  id: number;
  /** x, m, in [0, regionSize). */
  x: number;
  /** y, m, in [0, regionSize). */
  y: number;
  /** z, m, in [-verticalExtent / 2, verticalExtent / 2). */
  z: number;
  /** The fast fields in their declared units, by name; present only when the layout has fields. */
  fields?: Record<string, number>;
  /**
   * The entity's kind (u16), present only when the packet carries a kind record for it: with an
   * entity's first sighting (unless its kind is 0) and after its kind changed. Absent on a first
   * sighting: kind 0.
   */
  kind?: number;
}

/** A reliable event: its per-viewer sequence (u16, consecutive) and its bytes. */
export interface PacketEvent {
  sequence: number;
  bytes: Uint8Array;
}

/** An entity's attributes: the latest version (u32, wrapping; 0 is never sent) and its bytes. */
export interface PacketAttributes {
  id: number;
  version: number;
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
  /**
   * Attributes carried (copies), for entities updated in this packet or held by the client. The
   * same version may come again (repeats, resends); a client keeps the newest (wrapping compare).
   */
  attributes: PacketAttributes[];
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
  /** Fast fields, raw (0 to 2^bits − 1): field k of update i at i × fieldCount + k. */
  fields: Int32Array;
  /** Fields per update (the layout's). */
  fieldCount: number;
  /** Kind records: entries [0, kindCount) of `kindIds` and `kinds` are valid; each id is updated in this packet. */
  kindCount: number;
  kindIds: Uint32Array;
  kinds: Uint16Array;
  /** Attribute entries: [0, attributeCount) of the three arrays are valid; `attributes` are views into the packet. */
  attributeCount: number;
  attributeIds: Uint32Array;
  attributeVersions: Uint32Array;
  attributes: Uint8Array[];
}

/**
 * Allocates a {@link RawPacket} whose arrays hold any packet of up to `payloadBytes` bytes
 * (default 1200) without fields: (payloadBytes - 16) / 4 despawns and (payloadBytes - 16) / 12
 * updates (arrays too short for a packet are replaced as it is decoded).
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT when payloadBytes is not an integer from 16 (a header
 *   alone) to 65,507 (the largest UDP payload, as for a viewer's payloadBytes).
 */
export function createRawPacket(payloadBytes = 1200): RawPacket {
  if (typeof payloadBytes !== 'number' || !Number.isInteger(payloadBytes) || payloadBytes < HEADER_BYTES || payloadBytes > MAX_PAYLOAD_BYTES) {
    fail(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `payloadBytes must be an integer from ${HEADER_BYTES} to ${MAX_PAYLOAD_BYTES}, received ${describe(payloadBytes)}`,
    );
  }
  const state = payloadBytes - HEADER_BYTES;
  return rawPacketOf(Math.floor(state / DESPAWN_RECORD_BYTES), Math.floor(state / RECORD_BYTES), 0, 0);
}

// An empty RawPacket whose arrays hold `despawns` despawn and `updates` update records.
function rawPacketOf(despawns: number, updates: number, fieldCount: number, kinds: number): RawPacket {
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
    fields: new Int32Array(updates * fieldCount),
    fieldCount,
    kindCount: 0,
    kindIds: new Uint32Array(kinds),
    kinds: new Uint16Array(kinds),
    attributeCount: 0,
    attributeIds: new Uint32Array(0),
    attributeVersions: new Uint32Array(0),
    attributes: [],
  };
}

/**
 * Decodes a packet into meters (and fields into their declared units).
 *
 * @param bytes the whole packet (a `Uint8Array`; a Node `Buffer` qualifies)
 * @param config the configuration the server runs (its protocol hash must match)
 * @throws SightlineError with one of:
 *   `ERR_SIGHTLINE_PACKET_NOT_BYTES` (bytes is not a Uint8Array),
 *   `ERR_SIGHTLINE_INVALID_ARGUMENT` (config is not an object with non-negative integer regionRaw,
 *   regionShift, verticalRaw, zBits and quantShift that relate as a WorldConfig's do, or its fields
 *   or attributeBytes are malformed),
 *   `ERR_SIGHTLINE_PACKET_TRUNCATED` (shorter than the header, or than its counts imply),
 *   `ERR_SIGHTLINE_PACKET_OVERSIZED` (longer than its counts imply, or than 65507 bytes),
 *   `ERR_SIGHTLINE_PACKET_VERSION` (version byte other than 2),
 *   `ERR_SIGHTLINE_PACKET_INCONSISTENT` (an unknown flag, an empty section, an id twice in the
 *   packet, nonzero bits above the packed position or the fields, z outside the vertical extent,
 *   a kind record for an id not updated in the packet, an attribute entry for a despawned id or
 *   longer than attributeBytes): docs/wire-format.md lists them in order.
 */
export function decodePacket(bytes: Uint8Array, config: PacketLayoutConfig): DecodedPacket {
  const raw = decodeInto(bytes, config, undefined);
  const n = raw.updateCount;
  const layout = fieldLayoutOf(config, 'config');
  const fields = layout.fields;
  const fc = fields.length;
  const updates: PacketUpdate[] = new Array<PacketUpdate>(n);
  const index = new Map<number, PacketUpdate>();
  for (let i = 0; i < n; i++) {
    const u: PacketUpdate = { id: raw.ids[i], x: toMeters(raw.x[i]), y: toMeters(raw.y[i]), z: toMeters(raw.z[i]) };
    if (fc > 0) {
      const values: Record<string, number> = {};
      for (let k = 0; k < fc; k++) values[fields[k].name] = fields[k].min + raw.fields[i * fc + k] * layout.scales[k];
      u.fields = values;
    }
    updates[i] = u;
    if (raw.kindCount > 0) index.set(u.id, u);
  }
  for (let i = 0; i < raw.kindCount; i++) index.get(raw.kindIds[i])!.kind = raw.kinds[i];
  const attributes: PacketAttributes[] = new Array<PacketAttributes>(raw.attributeCount);
  for (let i = 0; i < raw.attributeCount; i++)
    attributes[i] = { id: raw.attributeIds[i], version: raw.attributeVersions[i], bytes: new Uint8Array(raw.attributes[i]) };
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
    attributes,
  };
}

/**
 * Decodes a packet into raw units (Int32, 1024 per meter; fields raw), writing into `out` and
 * returning it.
 *
 * Allocation-free when `out` is given and its arrays are long enough (see {@link createRawPacket}),
 * but for the views of events and attributes; an array that is too short is replaced on `out` by a
 * longer one, so read the arrays from the returned object rather than from references kept across
 * calls. Without `out`, a new RawPacket with arrays of exactly the packet's counts is returned.
 * Checks and errors are those of {@link decodePacket}, plus `ERR_SIGHTLINE_INVALID_ARGUMENT` when
 * `out` is given and is not a RawPacket (events and attributes arrays, despawns, ids, kindIds,
 * attributeIds and attributeVersions Uint32Arrays, x, y, z and fields Int32Arrays, kinds a
 * Uint16Array); that one leaves `out` as it was, after the others its contents are unspecified.
 */
export function decodePacketRaw(bytes: Uint8Array, config: PacketLayoutConfig, out?: RawPacket): RawPacket {
  return decodeInto(bytes, config, out);
}

// ---------------------------------------------------------------------------------------------

/** Header flag: an events section follows the header. */
export const FLAG_EVENTS = 1;
/** Header flag: a kinds section follows the update records. */
export const FLAG_KINDS = 2;
/** Header flag: an attributes section follows (after the kinds section when both are present). */
export const FLAG_ATTRIBUTES = 4;
/** Bytes of the events section's own header: u16 first sequence, u8 count. */
export const EVENT_SECTION_BYTES = 3;

function u16(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8);
}

function u32(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

const LAYOUT_FIELDS = ['regionRaw', 'regionShift', 'verticalRaw', 'zBits', 'quantShift'] as const;

/**
 * @internal Throws `ERR_SIGHTLINE_INVALID_ARGUMENT` (naming the argument `name`) unless config is an
 * object with non-negative integer regionRaw, regionShift, verticalRaw, zBits and quantShift that
 * relate as a WorldConfig's do, and well-formed fields and attributeBytes when present. Returns the
 * layout's fields.
 */
export function checkLayout(config: unknown, name = 'config'): FieldLayout {
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
  return fieldLayoutOf(c, name);
}

function checkRawPacket(out: unknown): void {
  const o = out as Partial<Record<keyof RawPacket, unknown>> | null;
  if (
    typeof o !== 'object' ||
    o === null ||
    !Array.isArray(o.events) ||
    !Array.isArray(o.attributes) ||
    !(o.despawns instanceof Uint32Array) ||
    !(o.ids instanceof Uint32Array) ||
    !(o.x instanceof Int32Array) ||
    !(o.y instanceof Int32Array) ||
    !(o.z instanceof Int32Array) ||
    !(o.fields instanceof Int32Array) ||
    !(o.kindIds instanceof Uint32Array) ||
    !(o.kinds instanceof Uint16Array) ||
    !(o.attributeIds instanceof Uint32Array) ||
    !(o.attributeVersions instanceof Uint32Array)
  )
    fail(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `out must be a RawPacket (see createRawPacket): events and attributes arrays, despawns, ids, kindIds, attributeIds and attributeVersions Uint32Arrays, x, y, z and fields Int32Arrays, kinds a Uint16Array; received ${describe(out)}`,
    );
}

function decodeInto(bytes: Uint8Array, config: PacketLayoutConfig, out: RawPacket | undefined): RawPacket {
  if (!isUint8Array(bytes))
    fail('ERR_SIGHTLINE_PACKET_NOT_BYTES', `packet must be a Uint8Array, received ${describe(bytes)}`);
  const fl = checkLayout(config);
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
  if ((flags & ~(FLAG_EVENTS | FLAG_KINDS | FLAG_ATTRIBUTES)) !== 0)
    fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `packet flags must be a combination of 1 (events), 2 (kinds) and 4 (attributes), received ${flags}`);
  if (flags & FLAG_ATTRIBUTES && fl.attributeBytes === 0)
    fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', 'the packet has an attributes section, and the layout has no attributes (attributeBytes 0)');
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
  const R = fl.recordBytes;
  const recordsEnd = HEADER_BYTES + eventBytes + despawnCount * DESPAWN_RECORD_BYTES + updateCount * R;
  if (len < recordsEnd)
    fail(
      'ERR_SIGHTLINE_PACKET_TRUNCATED',
      `packet is ${len} bytes, but its header announces ${despawnCount} despawns and ${updateCount} updates of ${R} bytes (${recordsEnd} bytes)`,
    );
  // Kinds section: u16 count, count x (u32 id, u16 kind).
  let at = recordsEnd;
  let kindCount = 0;
  const kindsAt = at + SECTION_COUNT_BYTES;
  if (flags & FLAG_KINDS) {
    if (at + SECTION_COUNT_BYTES > len) fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, too short for the kinds section it announces`);
    kindCount = u16(bytes, at);
    if (kindCount === 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', 'the kinds section announces no kind records');
    at += SECTION_COUNT_BYTES + kindCount * KIND_RECORD_BYTES;
    if (at > len) fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, but its kinds section announces ${kindCount} records (to byte ${at})`);
  }
  // Attributes section: u16 count, count x (u32 id, u32 version, u8 length, bytes).
  let attributeCount = 0;
  const attributesAt = at + SECTION_COUNT_BYTES;
  if (flags & FLAG_ATTRIBUTES) {
    if (at + SECTION_COUNT_BYTES > len)
      fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, too short for the attributes section it announces`);
    attributeCount = u16(bytes, at);
    if (attributeCount === 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', 'the attributes section announces no attributes');
    at += SECTION_COUNT_BYTES;
    for (let i = 0; i < attributeCount; i++) {
      if (at + ATTRIBUTE_HEADER_BYTES > len) fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, attribute entry ${i}'s header lies beyond it`);
      const n = bytes[at + 8];
      if (n > fl.attributeBytes)
        fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `attribute entry ${i} is ${n} bytes, more than the layout's attributeBytes (${fl.attributeBytes})`);
      if (u32(bytes, at + 4) === 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `attribute entry ${i} has version 0 (versions start at 1)`);
      at += ATTRIBUTE_HEADER_BYTES + n;
      if (at > len) fail('ERR_SIGHTLINE_PACKET_TRUNCATED', `packet is ${len} bytes, attribute entry ${i} (${n} bytes) runs past it`);
    }
  }
  if (len > at)
    fail(
      'ERR_SIGHTLINE_PACKET_OVERSIZED',
      `packet is ${len} bytes, but its header and sections announce ${at} bytes: ${len - at} trailing bytes`,
    );

  // Every read below lies inside [0, len).
  const fc = fl.fields.length;
  if (out === undefined) {
    out = rawPacketOf(despawnCount, updateCount, fc, kindCount);
  } else {
    if (out.despawns.length < despawnCount) out.despawns = new Uint32Array(despawnCount);
    if (out.ids.length < updateCount) out.ids = new Uint32Array(updateCount);
    if (out.x.length < updateCount) out.x = new Int32Array(updateCount);
    if (out.y.length < updateCount) out.y = new Int32Array(updateCount);
    if (out.z.length < updateCount) out.z = new Int32Array(updateCount);
    if (out.fields.length < updateCount * fc) out.fields = new Int32Array(updateCount * fc);
    if (out.kindIds.length < kindCount) (out.kindIds = new Uint32Array(kindCount)), (out.kinds = new Uint16Array(kindCount));
  }
  if (out.attributeIds.length < attributeCount) {
    out.attributeIds = new Uint32Array(attributeCount);
    out.attributeVersions = new Uint32Array(attributeCount);
  }
  out.version = version;
  out.flags = flags;
  out.sequence = u16(bytes, 2);
  out.tick = u32(bytes, 4);
  out.ack = u16(bytes, 8);
  out.ackBits = u16(bytes, 10);
  out.despawnCount = despawnCount;
  out.updateCount = updateCount;
  out.fieldCount = fc;
  out.kindCount = kindCount;
  out.attributeCount = attributeCount;

  beginIdSet(despawnCount + updateCount + attributeCount);

  let p = HEADER_BYTES;
  if (eventCount > 0) {
    const events: PacketEvent[] = [];
    let e = HEADER_BYTES + EVENT_SECTION_BYTES;
    for (let i = 0; i < eventCount; i++) {
      const n = u16(bytes, e);
      events.push({ sequence: (firstEvent + i) & 0xffff, bytes: bytes.subarray(e + 2, e + 2 + n) });
      e += 2 + n;
    }
    out.events = events;
  } else if (out.events.length > 0) {
    out.events = [];
  }
  p += eventBytes;

  const despawns = out.despawns;
  for (let i = 0; i < despawnCount; i++, p += DESPAWN_RECORD_BYTES) {
    const id = u32(bytes, p);
    if (slotOfId(id, DESPAWNED) >= 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `despawn record ${i}: entity ${id} appears twice in the packet`);
    despawns[i] = id;
  }

  readUpdates(bytes, p, config, fl, out);

  // Kind records: each names an entity updated in this packet, once.
  for (let i = 0, k = kindsAt; i < kindCount; i++, k += KIND_RECORD_BYTES) {
    const id = u32(bytes, k);
    const slot = slotOfId(id, ATTRIBUTE_ONLY);
    if (slot < 0 || valueAt(slot) < 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `kind record ${i}: entity ${id} has no update record in the packet`);
    if (!flagSlot(slot, HAS_KIND)) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `kind record ${i}: entity ${id} has two kind records`);
    out.kindIds[i] = id;
    out.kinds[i] = u16(bytes, k + 4);
  }
  // Attribute entries: never for an entity despawned in this packet, at most one per entity.
  const views = out.attributes;
  views.length = attributeCount;
  for (let i = 0, a = attributesAt; i < attributeCount; i++) {
    const id = u32(bytes, a);
    const s = slotOfId(id, ATTRIBUTE_ONLY);
    const slot = s < 0 ? ~s : s;
    if (valueAt(slot) === DESPAWNED) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `attribute entry ${i}: entity ${id} is despawned in the same packet`);
    if (!flagSlot(slot, HAS_ATTRIBUTE)) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `attribute entry ${i}: entity ${id} has two attribute entries`);
    const n = bytes[a + 8];
    out.attributeIds[i] = id;
    out.attributeVersions[i] = u32(bytes, a + 4);
    views[i] = bytes.subarray(a + ATTRIBUTE_HEADER_BYTES, a + ATTRIBUTE_HEADER_BYTES + n);
    a += ATTRIBUTE_HEADER_BYTES + n;
  }
  return out;
}

// The update records from byte p: ids, positions and fields into out.
function readUpdates(bytes: Uint8Array, p: number, config: PacketLayoutConfig, fl: FieldLayout, out: RawPacket): void {
  // Position layout: x in bits [0, B), y in [B, 2B), z in [2B, 2B + Z); value = field << q.
  const q = config.quantShift;
  const B = config.regionShift - q;
  const Z = config.zBits - q;
  const used = 2 * B + Z;
  const fx = bitFieldOf(0, B);
  const fy = bitFieldOf(B, B);
  const fz = bitFieldOf(2 * B, Z);
  const scale = 2 ** q;
  const regionRaw = config.regionRaw;
  const verticalRaw = config.verticalRaw;
  const zHalf = Math.floor(verticalRaw / 2);
  const ids = out.ids;
  const xs = out.x;
  const ys = out.y;
  const zs = out.z;
  const R = fl.recordBytes;
  const fc = fl.fields.length;
  const fieldBits = fl.fieldBits;
  const fieldValues = out.fields;
  const updateCount = out.updateCount;
  for (let i = 0; i < updateCount; i++, p += R) {
    const id = u32(bytes, p);
    const lo = u32(bytes, p + 4);
    const hi = u32(bytes, p + 8);
    if (slotOfId(id, i) >= 0) fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `update record ${i}: entity ${id} appears twice in the packet`);
    const unused = used >= 64 ? 0 : used >= 32 ? hi >>> (used - 32) : (lo >>> used) | hi;
    if (unused !== 0)
      fail(
        'ERR_SIGHTLINE_PACKET_INCONSISTENT',
        `update record ${i} (entity ${id}): bits above bit ${used} of the packed position must be 0`,
      );
    const x = bits(lo, hi, fx) * scale;
    const y = bits(lo, hi, fy) * scale;
    const zOffset = bits(lo, hi, fz) * scale;
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
    if (fc > 0) {
      // The fields' bytes (1 to 8) as a little-endian u64 (flo, fhi), zero-extended.
      let flo = 0;
      let fhi = 0;
      for (let b = fl.fieldBytes - 1; b >= 0; b--) {
        const v = bytes[p + 12 + b];
        if (b >= 4) fhi = fhi * 256 + v;
        else flo = flo * 256 + v;
      }
      const rest = fieldBits >= 64 ? 0 : fieldBits >= 32 ? fhi / 2 ** (fieldBits - 32) : flo / 2 ** fieldBits + fhi;
      if (rest >= 1 || (fieldBits < 32 && fhi !== 0))
        fail('ERR_SIGHTLINE_PACKET_INCONSISTENT', `update record ${i} (entity ${id}): bits above bit ${fieldBits} of the fields must be 0`);
      flo >>>= 0;
      fhi >>>= 0;
      for (let k = 0; k < fc; k++) fieldValues[i * fc + k] = bits(flo, fhi, fl.bitFields[k]);
    }
  }
}

// What a client needs besides the decoder, for an import of this entry point alone (a browser
// bundle: `sightline` itself loads the native addon).
export { SightlineError } from './errors.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from './fixed.js';
