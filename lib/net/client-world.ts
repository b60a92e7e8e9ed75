// The client's view of the world: game packets in, perceived entities and acks out. Tolerates
// loss, reordering and duplication: every entity ends in the state of the newest record about it.
// Browser-safe: imports nothing from Node.

import { checkLayout, createRawPacket, decodePacketRaw, type PacketLayoutConfig, type RawPacket } from '../decode.js';
import { SightlineError, describe, readOptions } from '../errors.js';
import { RAW_PER_METER } from '../fixed.js';
import { extrapolateAxis, isJump, readExtrapolation, type Extrapolation, type ExtrapolationOptions } from './extrapolate.js';
import { encodeAck } from './protocol.js';

/** An entity as the client perceives it: the newest position received. */
export interface ClientEntity {
  /** Entity id (u32), as the server's API returns it. */
  readonly id: number;
  /** Position, m. */
  readonly x: number;
  readonly y: number;
  readonly z: number;
  /** Position, raw units (Int32, 1024 per meter), exactly as decoded. */
  readonly rawX: number;
  readonly rawY: number;
  readonly rawZ: number;
  /** Sequence (u16) of the packet whose record was applied last. */
  readonly sequence: number;
  /** Server tick of that packet (u32). */
  readonly tick: number;
}

/** Where {@link ClientWorld.predict} puts an entity at a given server tick. */
export interface PredictedPosition {
  /** Position, m. */
  x: number;
  y: number;
  z: number;
  /** Position, raw units (1024 per meter), not rounded. */
  rawX: number;
  rawY: number;
  rawZ: number;
}

/** Called when an entity appears (an update for an id the client does not hold). */
export type SpawnListener = (id: number, entity: ClientEntity) => void;
/** Called when a held entity's position changes. */
export type UpdateListener = (id: number, entity: ClientEntity) => void;
/** Called when a held entity is dropped. */
export type DespawnListener = (id: number) => void;
/**
 * Called once per reliable event, in event-sequence order: `sequence` is the event's per-viewer
 * sequence (u16), `bytes` a view into the datagram, valid during the call (copy to keep).
 */
export type EventListener = (sequence: number, bytes: Uint8Array) => void;

export interface ClientWorldOptions {
  /** Largest packet expected, bytes: sizes the decoding scratch (it grows when needed). Default 1200. */
  payloadBytes?: number;
  /**
   * A packet more than this many sequences older than the newest one applied is discarded as
   * stale. 0 to 32767. Default 32, the engine's ack window: a server whose viewer has acks takes a
   * packet left out by an ack more than 32 sequences newer as lost for certain and forgets what it
   * introduced; applying it after that would leave the client holding what the server no longer
   * tracks. For a server without acks, a larger value keeps more late packets.
   */
  maxLateness?: number;
  /**
   * Keep each entity's previous update as well, so that {@link ClientWorld.predict} can
   * extrapolate from the two newest (linear dead reckoning): `true` (the defaults) or
   * {@link ExtrapolationOptions}. Default off: `predict` then gives the newest position.
   */
  extrapolate?: boolean | ExtrapolationOptions;
  onSpawn?: SpawnListener;
  onUpdate?: UpdateListener;
  onDespawn?: DespawnListener;
  onEvent?: EventListener;
}

/** What {@link ClientWorld.receive} did with a datagram. */
export type ReceiveStatus = 'applied' | 'duplicate' | 'stale' | 'malformed';

/** Running totals of a {@link ClientWorld}. */
export interface ClientWorldCounters {
  /** Game packets applied (in order or late). */
  packets: number;
  /** Of those, packets older than the newest already applied. */
  reordered: number;
  /** Packets ignored because that sequence was already applied. */
  duplicates: number;
  /** Packets discarded because they were more than `maxLateness` sequences older than the newest. */
  stale: number;
  /** Datagrams the decoder rejected. */
  malformed: number;
  /** Updates for ids the client did not hold (the wire has no separate spawn record). */
  spawns: number;
  /** Updates of held entities. */
  updates: number;
  /** Despawns of held entities. */
  despawns: number;
  /** Despawns of ids the client did not hold: no-ops. */
  unknownDespawns: number;
  /** Records ignored because a newer record about the same entity had been applied. */
  staleRecords: number;
  /** Reliable events delivered to `onEvent`. */
  events: number;
  /** Event copies ignored: that sequence was delivered already. */
  repeatedEvents: number;
  /** Event sequences never seen that the server stopped sending (it took them as delivered). */
  skippedEvents: number;
}

/** An acknowledgement: the newest sequence received and the 32 before it. */
export interface AckState {
  /** Newest game-packet sequence received, u16. */
  readonly ack: number;
  /** Bit i set: sequence (ack - 1 - i) mod 65536 was received, u32. */
  readonly ackBits: number;
}

interface Held {
  id: number;
  x: number;
  y: number;
  z: number;
  rawX: number;
  rawY: number;
  rawZ: number;
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

const CLIENT_WORLD_OPTIONS: readonly string[] = ['payloadBytes', 'maxLateness', 'extrapolate', 'onSpawn', 'onUpdate', 'onDespawn', 'onEvent'];

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
    events: 0,
    repeatedEvents: 0,
    skippedEvents: 0,
  };
  /** The decoder's error for the last malformed datagram. */
  lastError: SightlineError | undefined;

  readonly #held = new Map<number, Held>();
  // id -> extended sequence of the despawn (applied or not) that last named it.
  readonly #tombs = new Map<number, number>();
  // ring[e & mask] === e: extended sequence e was applied.
  readonly #ring: Float64Array;
  readonly #mask: number;
  #newest = -1;
  #newestTick = 0;
  #sinceSweep = 0;
  // Sequence (u16) of the next reliable event to deliver; -1 before the first.
  #nextEvent = -1;
  #scratch: RawPacket;

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
    checkLayout(layout, 'layout');
    options = readOptions('ClientWorld', options, CLIENT_WORLD_OPTIONS) as ClientWorldOptions;
    for (const key of ['onSpawn', 'onUpdate', 'onDespawn', 'onEvent'] as const) {
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
    for (let i = 0; i < p.updateCount; i++) {
      const id = p.ids[i];
      const rx = p.x[i];
      const ry = p.y[i];
      const rz = p.z[i];
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
        h = { id, x: 0, y: 0, z: 0, rawX: 0, rawY: 0, rawZ: 0, sequence: 0, tick: 0, ext: 0, prevX: 0, prevY: 0, prevZ: 0, prevTick: -1 };
        held.set(id, h);
        spawned = true;
        c.spawns++;
      }
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
      h.sequence = seq;
      h.tick = tick;
      h.ext = ext;
      const fn = spawned ? this.onSpawn : this.onUpdate;
      if (fn !== undefined) {
        try {
          fn(id, h);
        } catch (e) {
          if (!failed) (failed = true), (firstError = e);
        }
      }
    }

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
  }
}
