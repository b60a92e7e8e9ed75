// The shapes of a ClientWorld (client-world.ts): the entities it holds, its listeners, options and
// counters. Browser-safe.
import type { ExtrapolationOptions } from './extrapolate.js';

/** An entity as the client perceives it: the newest position, fields, kind and attributes received. */
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
  /** The fast fields of the newest record, in their declared units, by name (empty without fields). */
  readonly fields: Readonly<Record<string, number>>;
  /** The fast fields of the newest record, raw (0 to 2^bits − 1), in the layout's field order. */
  readonly rawFields: Int32Array;
  /** The entity's kind (u16): from the kind record of its first sighting or its last change; 0 when none came. */
  readonly kind: number;
  /** The newest attributes received (a copy), or null before any. */
  readonly attributes: Uint8Array | null;
  /** Their version (u32, wrapping; 0: none yet). */
  readonly attributesVersion: number;
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

/**
 * Called when an entity appears (an update for an id the client does not hold), after its packet
 * was applied whole: the entity carries the kind and attributes that came with it.
 */
export type SpawnListener = (id: number, entity: ClientEntity) => void;
/** Called when a held entity's record is applied (position and fields). */
export type UpdateListener = (id: number, entity: ClientEntity) => void;
/** Called when a held entity is dropped. */
export type DespawnListener = (id: number) => void;
/** Called when a held entity's kind changes (not for the kind of a first sighting: see {@link SpawnListener}). */
export type KindListener = (id: number, kind: number, entity: ClientEntity) => void;
/**
 * Called when newer attributes of an entity are applied (the first ones too, after the entity's
 * onSpawn when they came in the same packet). `bytes` is the entity's own copy.
 */
export type AttributesListener = (id: number, bytes: Uint8Array, version: number, entity: ClientEntity) => void;
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
  onKind?: KindListener;
  onAttributes?: AttributesListener;
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
  /** Kind records that changed a held entity's kind. */
  kindChanges: number;
  /** Attribute entries applied (a newer version than the entity held). */
  attributes: number;
  /** Attribute entries ignored: the same or an older version was held, or the entity is not held. */
  staleAttributes: number;
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
