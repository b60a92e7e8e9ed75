// Over 500 lines as one file: one concept, the client's model of the world and its rules for loss, reordering and duplication; its types are in client-world-types.ts.
// The client's view of the world: game packets in, perceived entities and acks out. Tolerates
// loss, reordering and duplication: every entity ends in the state of the newest record about it.
// Browser-safe: imports nothing from Node.

import { checkLayout, createRawPacket, decodePacketRaw, type PacketLayoutConfig, type RawPacket } from '../decode.js';
import { SightlineError, describe, readOptions } from '../errors.js';
import type { FieldLayout } from '../decode-layout.js';
import { RAW_PER_METER } from '../fixed.js';
import { extrapolateAxis, isJump, readExtrapolation, type Extrapolation } from './extrapolate.js';
import type {
  AckState,
  AttributesListener,
  ClientEntity,
  ClientWorldCounters,
  ClientWorldOptions,
  DespawnListener,
  EventListener,
  KindListener,
  PredictedPosition,
  ReceiveStatus,
  SpawnListener,
  UpdateListener,
} from './client-world-types.js';
import { encodeAck } from './protocol.js';

export type * from './client-world-types.js';

interface Held {
  id: number;
  x: number;
  y: number;
  z: number;
  rawX: number;
  rawY: number;
  rawZ: number;
  fields: Record<string, number>;
  rawFields: Int32Array;
  kind: number;
  attributes: Uint8Array | null;
  attributesVersion: number;
  sequence: number;
  tick: number;
  /** Extended (unwrapped) sequence of the packet applied last. */
  ext: number;
  /** The update before the newest (raw), and its server tick (-1: none since the entity appeared). */
  prevX: number;
  prevY: number;
  prevZ: number;
  prevTick: number;
}

const CLIENT_WORLD_OPTIONS: readonly string[] = ['payloadBytes', 'maxLateness', 'extrapolate', 'onSpawn', 'onUpdate', 'onDespawn', 'onKind', 'onAttributes', 'onEvent'];

// Extended sequences start here so that late packets before the first one stay positive.
const EXT_BASE = 1 << 20;

/**
 * The perceived world of one client, built from the server's game packets.
 *
 * Sequences are 16-bit and wrap; they are unwrapped against the newest received. Each entity keeps
 * the sequence of the packet that last changed it (a despawned id keeps it while packets that old
 * are still accepted), and a record older than that is ignored, so a late packet never rolls back
 * a newer position nor resurrects a newer despawn. A duplicate packet is ignored whole; a packet
 * more than `maxLateness` sequences older than the newest is discarded.
 *
 * ```ts
 * const view = new ClientWorld(config, { onSpawn: (id, e) => draw(id, e.x, e.y, e.z) });
 * socket.onmessage = (bytes) => { view.receive(bytes); const a = view.ack(); if (a) sendAck(a); };
 * ```
 */
export class ClientWorld {
  /** The packet layout (a WorldConfig qualifies, or {@link layoutOf} of a WELCOME). */
  readonly layout: PacketLayoutConfig;
  /** See {@link ClientWorldOptions.maxLateness}. */
  readonly maxLateness: number;
  /** The extrapolation settings ({@link ClientWorldOptions.extrapolate}, maxStep in raw units per tick); null when off. */
  readonly extrapolation: Extrapolation | null;
  onSpawn: SpawnListener | undefined;
  onUpdate: UpdateListener | undefined;
  onDespawn: DespawnListener | undefined;
  onKind: KindListener | undefined;
  onAttributes: AttributesListener | undefined;
  onEvent: EventListener | undefined;
  readonly counters: ClientWorldCounters = {
    packets: 0,
    reordered: 0,
    duplicates: 0,
    stale: 0,
    malformed: 0,
    spawns: 0,
    updates: 0,
    despawns: 0,
    unknownDespawns: 0,
    staleRecords: 0,
    kindChanges: 0,
    attributes: 0,
    staleAttributes: 0,
    events: 0,
    repeatedEvents: 0,
    skippedEvents: 0,
  };
  /** The decoder's error for the last malformed datagram. */
  lastError: SightlineError | undefined;

  readonly #held = new Map<number, Held>();
  // id -> extended sequence of the despawn (applied or not) that last named it.
  readonly #tombs = new Map<number, number>();
  // Attributes that came for an id not held (reordering: a packet introducing the entity may still
  // come), with the extended sequence they came in: applied if it comes within maxLateness.
  readonly #early = new Map<number, { version: number; bytes: Uint8Array; ext: number }>();
  // ring[e & mask] === e: extended sequence e was applied.
  readonly #ring: Float64Array;
  readonly #mask: number;
  #newest = -1;
  #newestTick = 0;
  #sinceSweep = 0;
  // Sequence (u16) of the next reliable event to deliver; -1 before the first.
  #nextEvent = -1;
  #scratch: RawPacket;
  readonly #fieldLayout: FieldLayout;
  // This packet's entities whose records were applied, and whether each was spawned by it: their
  // listeners run once the packet is applied whole.
  #applied: Held[] = [];
  #spawned: boolean[] = [];

  /**
   * @param layout the server's packet layout; its protocol hash must match the server's
   * @param options `undefined` or `null`: every option takes its default
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (layout without non-negative integer regionRaw,
   *   regionShift, verticalRaw, zBits and quantShift; options not a plain object (an array or a
   *   Date is refused); maxLateness or payloadBytes out of range; a listener not a function;
   *   extrapolate not a boolean or valid {@link ExtrapolationOptions}), ERR_SIGHTLINE_UNKNOWN_OPTION
   *   (a key that is not an option).
   */
  constructor(layout: PacketLayoutConfig, options?: ClientWorldOptions | null) {
    this.#fieldLayout = checkLayout(layout, 'layout');
    options = readOptions('ClientWorld', options, CLIENT_WORLD_OPTIONS) as ClientWorldOptions;
    for (const key of ['onSpawn', 'onUpdate', 'onDespawn', 'onKind', 'onAttributes', 'onEvent'] as const) {
      const fn = options[key];
      if (fn !== undefined && typeof fn !== 'function') {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `ClientWorld option ${key} must be a function, received ${describe(fn)}`);
      }
    }
    const maxLateness = options.maxLateness ?? 32;
    if (!Number.isInteger(maxLateness) || maxLateness < 0 || maxLateness > 32767) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `maxLateness must be an integer from 0 to 32767, received ${describe(maxLateness)}`);
    }
    const payloadBytes = options.payloadBytes ?? 1200;
    if (!Number.isInteger(payloadBytes) || payloadBytes < 16 || payloadBytes > 65507) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `payloadBytes must be an integer from 16 to 65507, received ${describe(payloadBytes)}`);
    }
    const extrapolation = readExtrapolation(options.extrapolate);
    this.layout = layout;
    this.maxLateness = maxLateness;
    this.extrapolation = extrapolation;
    let size = 64;
    while (size < maxLateness + 2) size *= 2;
    this.#ring = new Float64Array(size).fill(-1);
    this.#mask = size - 1;
    this.#scratch = createRawPacket(payloadBytes);
    this.onSpawn = options.onSpawn;
    this.onUpdate = options.onUpdate;
    this.onDespawn = options.onDespawn;
    this.onKind = options.onKind;
    this.onAttributes = options.onAttributes;
    this.onEvent = options.onEvent;
  }

  /** Held entities by id. Entity objects are updated in place; copy what must not change. */
  get entities(): ReadonlyMap<number, ClientEntity> {
    return this.#held;
  }

  /** Number of held entities. */
  get size(): number {
    return this.#held.size;
  }

  /** The held entity with this id, or undefined. */
  get(id: number): ClientEntity | undefined {
    return this.#held.get(id);
  }

  /** Sequence (u16) of the newest packet applied; -1 before the first. */
  get newestSequence(): number {
    return this.#newest < 0 ? -1 : this.#newest % 65536;
  }

  /** Server tick of the newest packet applied; 0 before the first. */
  get newestTick(): number {
    return this.#newestTick;
  }

  /**
   * Applies one datagram holding a game packet.
   *
   * Returns `'malformed'` (decoder rejected it: counted, `lastError` set, nothing changed),
   * `'stale'` (more than `maxLateness` sequences older than the newest), `'duplicate'` (that
   * sequence was applied before) or `'applied'`. Listeners run as records are applied, then
   * `onEvent` for each reliable event not delivered before, in event order; if a listener throws,
   * the packet is still applied whole and the first error is rethrown afterwards.
   */
  receive(bytes: Uint8Array): ReceiveStatus {
    let p: RawPacket;
    try {
      p = decodePacketRaw(bytes, this.layout, this.#scratch);
    } catch (e) {
      this.counters.malformed++;
      this.lastError = e instanceof SightlineError ? e : new SightlineError('ERR_SIGHTLINE_PACKET_INCONSISTENT', String(e));
      return 'malformed';
    }
    this.#scratch = p;

    let ext: number;
    if (this.#newest < 0) {
      ext = EXT_BASE + p.sequence;
    } else {
      const d = ((p.sequence - (this.#newest % 65536) + 65536 + 32768) % 65536) - 32768;
      ext = this.#newest + d;
      if (-d > this.maxLateness) {
        this.counters.stale++;
        return 'stale';
      }
    }
    const ring = this.#ring;
    const slot = ext & this.#mask;
    if (ring[slot] === ext) {
      this.counters.duplicates++;
      return 'duplicate';
    }
    ring[slot] = ext;
    this.counters.packets++;
    if (ext > this.#newest) {
      this.#newest = ext;
      this.#newestTick = p.tick;
    } else {
      this.counters.reordered++;
    }

    let firstError: unknown;
    let failed = false;
    const held = this.#held;
    const tombs = this.#tombs;
    const c = this.counters;

    for (let i = 0; i < p.despawnCount; i++) {
      const id = p.despawns[i];
      const h = held.get(id);
      if (h !== undefined) {
        if (ext <= h.ext) {
          c.staleRecords++;
          continue;
        }
        held.delete(id);
        tombs.set(id, ext);
        c.despawns++;
        const fn = this.onDespawn;
        if (fn !== undefined) {
          try {
            fn(id);
          } catch (e) {
            if (!failed) (failed = true), (firstError = e);
          }
        }
      } else {
        const t = tombs.get(id);
        if (t !== undefined && t >= ext) {
          c.staleRecords++;
          continue;
        }
        tombs.set(id, ext);
        c.unknownDespawns++;
      }
    }

    const seq = p.sequence;
    const tick = p.tick;
    const fl = this.#fieldLayout;
    const fc = fl.fields.length;
    const applied = this.#applied;
    const spawnedNow = this.#spawned;
    applied.length = 0;
    spawnedNow.length = 0;
    // Kind records name entities updated in this packet: their kinds by id, for the records below.
    const kinds = p.kindCount > 0 ? new Map<number, number>() : undefined;
    for (let i = 0; i < p.kindCount; i++) kinds!.set(p.kindIds[i], p.kinds[i]);
    const kindChanged: Held[] = [];
    for (let i = 0; i < p.updateCount; i++) {
      const id = p.ids[i];
      let h = held.get(id);
      let spawned = false;
      if (h !== undefined) {
        if (ext <= h.ext) {
          c.staleRecords++;
          continue;
        }
        c.updates++;
      } else {
        const t = tombs.get(id);
        if (t !== undefined) {
          if (t >= ext) {
            c.staleRecords++;
            continue;
          }
          tombs.delete(id);
        }
        h = {
          id, x: 0, y: 0, z: 0, rawX: 0, rawY: 0, rawZ: 0, fields: {}, rawFields: new Int32Array(fc), kind: 0,
          attributes: null, attributesVersion: 0, sequence: 0, tick: 0, ext: 0, prevX: 0, prevY: 0, prevZ: 0, prevTick: -1,
        };
        held.set(id, h);
        spawned = true;
        c.spawns++;
      }
      const rx = p.x[i];
      const ry = p.y[i];
      const rz = p.z[i];
      if (!spawned && tick > h.tick) {
        h.prevX = h.rawX;
        h.prevY = h.rawY;
        h.prevZ = h.rawZ;
        h.prevTick = h.tick;
      }
      h.rawX = rx;
      h.rawY = ry;
      h.rawZ = rz;
      h.x = rx / RAW_PER_METER;
      h.y = ry / RAW_PER_METER;
      h.z = rz / RAW_PER_METER;
      for (let k = 0; k < fc; k++) {
        const r = p.fields[i * fc + k];
        h.rawFields[k] = r;
        h.fields[fl.fields[k].name] = fl.fields[k].min + r * fl.scales[k];
      }
      const kind = kinds?.get(id);
      if (kind !== undefined && kind !== h.kind) {
        h.kind = kind;
        if (!spawned) {
          c.kindChanges++;
          kindChanged.push(h);
        }
      }
      h.sequence = seq;
      h.tick = tick;
      h.ext = ext;
      applied.push(h);
      spawnedNow.push(spawned);
    }

    // Attributes: the newest version wins (a wrapping compare), for entities held now. Those of an
    // entity not held wait (#early) unless a despawn as new or newer says it is gone.
    const attributed: Held[] = [];
    const newer = (v: number, than: number): boolean => than === 0 || ((v - than) | 0) > 0;
    for (let i = 0; i < p.attributeCount; i++) {
      const id = p.attributeIds[i];
      const h = held.get(id);
      const v = p.attributeVersions[i];
      if (h === undefined) {
        const t = tombs.get(id);
        const e = this.#early.get(id);
        if ((t === undefined || t < ext) && (e === undefined || newer(v, e.version))) this.#early.set(id, { version: v, bytes: new Uint8Array(p.attributes[i]), ext });
        else c.staleAttributes++;
        continue;
      }
      if (!newer(v, h.attributesVersion)) {
        c.staleAttributes++;
        continue;
      }
      h.attributes = new Uint8Array(p.attributes[i]);
      h.attributesVersion = v;
      c.attributes++;
      attributed.push(h);
    }
    // Entities this packet introduced that had attributes waiting.
    if (this.#early.size > 0) {
      for (let i = 0; i < applied.length; i++) {
        if (!spawnedNow[i]) continue;
        const h = applied[i];
        const e = this.#early.get(h.id);
        if (e === undefined) continue;
        this.#early.delete(h.id);
        if (!newer(e.version, h.attributesVersion)) continue;
        h.attributes = e.bytes;
        h.attributesVersion = e.version;
        c.attributes++;
        if (!attributed.includes(h)) attributed.push(h);
      }
    }

    const call = (f: () => void): void => {
      try {
        f();
      } catch (e) {
        if (!failed) (failed = true), (firstError = e);
      }
    };
    for (let i = 0; i < applied.length; i++) {
      const h = applied[i];
      const fn = spawnedNow[i] ? this.onSpawn : this.onUpdate;
      if (fn !== undefined) call(() => fn(h.id, h));
    }
    const onKind = this.onKind;
    if (onKind !== undefined) for (const h of kindChanged) call(() => onKind(h.id, h.kind, h));
    const onAttributes = this.onAttributes;
    if (onAttributes !== undefined) for (const h of attributed) call(() => onAttributes(h.id, h.attributes!, h.attributesVersion, h));

    const events = p.events;
    for (let i = 0; i < events.length; i++) {
      const ev = events[i];
      if (this.#nextEvent >= 0) {
        const d = (ev.sequence - this.#nextEvent + 65536) % 65536;
        if (d >= 32768) {
          c.repeatedEvents++;
          continue;
        }
        c.skippedEvents += d;
      }
      this.#nextEvent = (ev.sequence + 1) % 65536;
      c.events++;
      const fn = this.onEvent;
      if (fn !== undefined) {
        try {
          fn(ev.sequence, ev.bytes);
        } catch (e) {
          if (!failed) (failed = true), (firstError = e);
        }
      }
    }

    if (++this.#sinceSweep >= Math.max(16, this.maxLateness >> 2)) this.#sweepTombs();
    if (failed) throw firstError;
    return 'applied';
  }

  /**
   * Where held entity `id` is probably at server tick `tick` (fractional for a moment between
   * ticks; e.g. {@link newestTick} plus the ticks since that packet arrived): with
   * {@link ClientWorldOptions.extrapolate} on, its newest position moved on by the velocity of its
   * two newest updates ((newest − previous) / the ticks between them) for `tick` − the newest
   * update's tick, at most `maxTicks`; without an earlier update since it appeared, for a tick not
   * after its newest, for a jump (a move over `maxStep` per tick), or with extrapolation off: the
   * newest position. Writes `out` when given (and returns it). Undefined for an id not held.
   */
  predict(id: number, tick: number, out?: PredictedPosition): PredictedPosition | undefined {
    const h = this.#held.get(id);
    if (h === undefined) return undefined;
    const r = out ?? { x: 0, y: 0, z: 0, rawX: 0, rawY: 0, rawZ: 0 };
    const e = this.extrapolation;
    if (e === null) {
      r.rawX = h.rawX;
      r.rawY = h.rawY;
      r.rawZ = h.rawZ;
    } else {
      const jump = h.prevTick >= 0 && isJump(h.rawX - h.prevX, h.rawY - h.prevY, h.rawZ - h.prevZ, h.tick - h.prevTick, e.maxStepRaw);
      r.rawX = extrapolateAxis(h.prevX, h.prevTick, h.rawX, h.tick, tick, e.maxTicks, jump);
      r.rawY = extrapolateAxis(h.prevY, h.prevTick, h.rawY, h.tick, tick, e.maxTicks, jump);
      r.rawZ = extrapolateAxis(h.prevZ, h.prevTick, h.rawZ, h.tick, tick, e.maxTicks, jump);
    }
    r.x = r.rawX / RAW_PER_METER;
    r.y = r.rawY / RAW_PER_METER;
    r.z = r.rawZ / RAW_PER_METER;
    return r;
  }

  /** Whether the packet with this sequence (u16) was applied, among the last 64 (or `maxLateness` + 2). */
  received(sequence: number): boolean {
    if (this.#newest < 0) return false;
    const d = ((sequence - (this.#newest % 65536) + 65536 + 32768) % 65536) - 32768;
    if (d > 0 || d <= -this.#ring.length) return false;
    const e = this.#newest + d;
    return this.#ring[e & this.#mask] === e;
  }

  /** The acknowledgement to send: newest sequence and the 32 before it; null before the first packet. */
  ack(): AckState | null {
    if (this.#newest < 0) return null;
    return { ack: this.#newest % 65536, ackBits: this.#ackBits() };
  }

  /**
   * The ACK datagram ({@link encodeAck}) with the session's token (8 bytes, from the WELCOME),
   * into `out` when given; null before the first packet.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (token not 8 bytes, out shorter than 15 bytes).
   */
  encodeAck(token: Uint8Array, out?: Uint8Array): Uint8Array | null {
    if (this.#newest < 0) return null;
    return encodeAck(token, this.#newest % 65536, this.#ackBits(), out);
  }

  /** Forgets entities (without despawn callbacks), sequences and the event position; counters stay. */
  reset(): void {
    this.#held.clear();
    this.#tombs.clear();
    this.#early.clear();
    this.#ring.fill(-1);
    this.#newest = -1;
    this.#newestTick = 0;
    this.#sinceSweep = 0;
    this.#nextEvent = -1;
  }

  #ackBits(): number {
    const ring = this.#ring;
    const mask = this.#mask;
    let bits = 0;
    for (let i = 0; i < 32; i++) {
      const e = this.#newest - 1 - i;
      if (ring[e & mask] === e) bits |= 1 << i;
    }
    return bits >>> 0;
  }

  // Despawn memory older than maxLateness can go: a packet that old is discarded as stale.
  #sweepTombs(): void {
    this.#sinceSweep = 0;
    const limit = this.#newest - this.maxLateness;
    for (const [id, e] of this.#tombs) if (e < limit) this.#tombs.delete(id);
    for (const [id, e] of this.#early) if (e.ext < limit) this.#early.delete(id);
  }
}
