// The server side of a transport: what every adapter (UDP, WebSocket, WebRTC, an in-process test
// link) offers the game loop, and the listener through which it reports sessions and acks.
// Browser-safe: imports nothing from Node.

import { HEADER_BYTES, MAX_PAYLOAD_BYTES, PROTOCOL_VERSION } from '../wire.js';
import { SightlineError, describe, isUint8Array } from '../errors.js';
import type { EntityId } from '../world.js';

/**
 * The packets of one tick as an adapter reads them. A {@link TickResult} qualifies. The bytes
 * are views into a buffer the engine reuses two ticks later: an adapter copies what it cannot send
 * before then.
 */
export interface TickPackets {
  /** Number of packets. */
  readonly count: number;
  /** Viewer (avatar entity id) of packet i, 0 ≤ i < count. */
  viewerAt(i: number): EntityId;
  /** Bytes of packet i, 0 ≤ i < count. */
  bytesAt(i: number): Uint8Array;
}

/** Why a session ended, as reported to {@link TransportListener.onDisconnect}. */
export type DisconnectReason =
  /** The client said BYE. */
  | 'bye'
  /** Nothing was heard from the client within the timeout. */
  | 'timeout'
  /** The game called `disconnect(viewer)`. */
  | 'kicked'
  /** A new HELLO from the same client address replaced the session. */
  | 'replaced'
  /** The transport closed. */
  | 'closed'
  /** A connection-oriented transport (WebSocket) lost the connection without a BYE. */
  | 'disconnected';

/** What a client said when it asked to join. */
export interface ConnectRequest {
  /** The adapter's stable name for the client's address (e.g. `"127.0.0.1:50123"`). */
  readonly clientKey: string;
  /** The client's address (IP literal) and port, as the transport saw them. */
  readonly address: string;
  readonly port: number;
  /** The client's HELLO nonce (u32). */
  readonly nonce: number;
  /**
   * The HELLO's connect token: opaque bytes from the game's own backend (0 to 1,024; empty when
   * the client sent none). The transport only carries it: checking it (a signature, an expiry,
   * single use) is the game's, in onConnect. Read docs/transport.md's threat model first.
   */
  readonly connectToken: Uint8Array;
}

/**
 * Thrown by `onConnect` to refuse a client with a reason meant for it: the message is sent to
 * the client in the REFUSE (cut to 117 bytes). Any other exception from `onConnect` refuses the
 * client with a generic text, and is counted (`listenerErrors`) and passed to `onError`: its
 * message never reaches an unauthenticated peer.
 */
export class ConnectionRefusedError extends SightlineError {
  constructor(message: string) {
    super('ERR_SIGHTLINE_NET_CONNECTION_REFUSED', message);
  }
}

Object.defineProperty(ConnectionRefusedError.prototype, 'name', {
  value: 'ConnectionRefusedError',
  writable: true,
  enumerable: false,
  configurable: true,
});

/**
 * The game's side of a transport. Callbacks run on the adapter's I/O path: keep them short. A
 * callback that throws is counted (`listenerErrors`) and reported to `onError`; the adapter carries on.
 */
export interface TransportListener {
  /**
   * A client passed the handshake checks (protocol version and hash, capacity). Spawn its avatar,
   * call `world.addViewer(avatar, { acks: true })` and return the avatar's id: packets for that
   * viewer go to this client. Throw a {@link ConnectionRefusedError} to refuse it with a reason the
   * client sees; any other exception refuses it with a generic reason (see ConnectionRefusedError).
   * Runs only once the client has proven it receives at its address (the cookie round trip).
   */
  onConnect(clientKey: string, request: ConnectRequest): EntityId;
  /**
   * A session ended, for any reason (once per session, `'kicked'` included). The adapter has
   * already forgotten the client: remove the viewer and despawn the avatar here.
   */
  onDisconnect?(viewer: EntityId, reason: DisconnectReason): void;
  /**
   * The client acknowledged game packets: `ack` is the newest sequence it received (u16), bit i of
   * `ackBits` (u32) says whether sequence (ack - 1 - i) mod 65536 arrived. Called before the
   * adapter forwards the ack to `world.acknowledge` (when there is one).
   */
  onAck?(viewer: EntityId, ack: number, ackBits: number): void;
  /**
   * Input from the viewer's client. `bytes` is a view valid during the call (copy to keep);
   * `kind` 0 (InputKind.UNRELIABLE: only inputs newer than every one before arrive, latest wins)
   * or 1 (InputKind.RELIABLE: each exactly once, in order); `sequence` the input's per-kind
   * sequence (u16). Adapters without input (LossyLink) never call it.
   */
  onInput?(viewer: EntityId, bytes: Uint8Array, kind: 0 | 1, sequence: number): void;
  /** A listener callback threw, or the socket reported an error. */
  onError?(error: unknown): void;
}

/** Running totals every adapter keeps. Bytes are payload bytes (no IP/UDP headers). */
export interface TransportCounters {
  /** Game packets handed to the socket. */
  packetsSent: number;
  /** Game packets not handed to the socket: the send cap was reached. */
  packetsDropped: number;
  /** Game packets for viewers without a connected client (skipped). */
  packetsUnrouted: number;
  /** Game-packet bytes handed to the socket. */
  bytesSent: number;
  /** Sends the socket reported as failed. */
  sendErrors: number;
  /** Datagrams received. */
  datagramsReceived: number;
  /** Bytes received. */
  bytesReceived: number;
  /**
   * Received datagrams that were not a well-formed message (truncated, oversized, garbage, a
   * message of a kind the server never receives): dropped. Adapters with sessions also tally them
   * by decoder error code (`malformedCodes`).
   */
  malformed: number;
  /** Well-formed datagrams from addresses without a session (other than HELLO): dropped. */
  strays: number;
  /**
   * Acks whose sequence is ahead of the newest packet sent to that client (dropped, not passed on),
   * and acks passed on that `world.acknowledge` refused as invalid (ERR_SIGHTLINE_INVALID_ACK: a
   * sequence the viewer was never sent, e.g. one from before it was added).
   */
  badAcks: number;
  /**
   * Acks passed on (to `onAck` and `world.acknowledge`), whatever the world then made of them: of
   * these, `acksUnused` and some of `badAcks` were refused, the rest applied.
   */
  acks: number;
  /**
   * Acks `world.acknowledge` refused because the viewer was added without `{ acks: true }` or is
   * no longer a viewer (ERR_SIGHTLINE_ACKS_DISABLED, ERR_SIGHTLINE_UNKNOWN_VIEWER): not errors.
   */
  acksUnused: number;
  /** Sessions opened (WELCOME sent). */
  connects: number;
  /** Sessions ended, for any reason. */
  disconnects: number;
  /** Sessions ended by timeout. */
  timeouts: number;
  /** HELLOs refused (REFUSE sent). */
  refused: number;
  /** Listener callbacks (or `world.acknowledge`) that threw. */
  listenerErrors: number;
}

/**
 * Counters of an adapter with sessions (UdpServer, WsServer): the handshake, the session checks
 * and client input. Every drop is counted once, in the first check it fails.
 */
export interface SessionCounters extends TransportCounters {
  /** CHALLENGEs sent: answers to HELLOs without a valid cookie (nothing is kept for them). */
  challenges: number;
  /** HELLOs whose cookie did not verify (another address, port or nonce, or expired): answered with a new CHALLENGE. */
  badCookies: number;
  /** Session messages (ACK, BYE, PING, INPUT) from a session's address without its token: dropped. */
  badTokens: number;
  /** Acks dropped because the client sent more acks than it was sent packets (see docs/transport.md). */
  acksThrottled: number;
  /** Inputs passed to `onInput`, both kinds. */
  inputs: number;
  /** Of those, reliable ones. */
  inputsReliable: number;
  /** Unreliable inputs not newer than the newest passed on: dropped. */
  inputsStale: number;
  /** Reliable inputs already passed on or already held: dropped (the header acknowledges them again). */
  inputsRepeated: number;
  /** Reliable inputs held for order (a gap before them), not yet passed on when they arrived. */
  inputsHeld: number;
  /** Reliable inputs more than 16 ahead of the one expected: dropped (the client resends them). */
  inputsAhead: number;
  /** Inputs with a payload over the server's `maxInputBytes`: dropped. */
  inputsOversized: number;
  /** Inputs over the client's rate (`inputRate`, `inputBurst`): dropped. */
  inputsThrottled: number;
}

/** Fresh zeroed {@link SessionCounters}. */
export function zeroSessionCounters(): SessionCounters {
  return {
    ...zeroCounters(),
    challenges: 0,
    badCookies: 0,
    badTokens: 0,
    acksThrottled: 0,
    inputs: 0,
    inputsReliable: 0,
    inputsStale: 0,
    inputsRepeated: 0,
    inputsHeld: 0,
    inputsAhead: 0,
    inputsOversized: 0,
    inputsThrottled: 0,
  };
}

/**
 * Throws `ERR_SIGHTLINE_INVALID_ARGUMENT` unless result is a {@link TickPackets}: an object with
 * an integer count ≥ 0 and viewerAt and bytesAt functions.
 */
export function checkTickPackets(result: unknown): asserts result is TickPackets {
  const r = result as Partial<Record<keyof TickPackets, unknown>> | null;
  if (
    typeof r !== 'object' ||
    r === null ||
    typeof r.count !== 'number' ||
    !Number.isInteger(r.count) ||
    r.count < 0 ||
    typeof r.viewerAt !== 'function' ||
    typeof r.bytesAt !== 'function'
  ) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `result must be a TickResult (an object with an integer count, viewerAt(i) and bytesAt(i)), received ${describe(result)}`,
    );
  }
}

/** Fresh zeroed {@link TransportCounters}. */
export function zeroCounters(): TransportCounters {
  return {
    packetsSent: 0,
    packetsDropped: 0,
    packetsUnrouted: 0,
    bytesSent: 0,
    sendErrors: 0,
    datagramsReceived: 0,
    bytesReceived: 0,
    malformed: 0,
    strays: 0,
    badAcks: 0,
    acks: 0,
    acksUnused: 0,
    connects: 0,
    disconnects: 0,
    timeouts: 0,
    refused: 0,
    listenerErrors: 0,
  };
}

/**
 * The server side of a transport.
 *
 * ```ts
 * const result = await world.tick();
 * transport.sendTick(result);
 * ```
 */
export interface Transport {
  /**
   * Sends each packet of a tick to its viewer's client, skipping viewers without one. Never
   * queues beyond the adapter's cap: what cannot be issued now is dropped and counted. Returns
   * the number of packets issued.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (result not a {@link TickPackets}; see {@link checkTickPackets}).
   */
  sendTick(result: TickPackets): number;
  /** Sends one game packet (copied) to a viewer's client. False when not issued (no client, or capped). */
  send(viewer: EntityId, bytes: Uint8Array): boolean;
  /** Ends a viewer's session (the client is told, `onDisconnect(viewer, 'kicked')` runs). False when none. */
  disconnect(viewer: EntityId): boolean;
  /** Whether a client is connected for this viewer. */
  has(viewer: EntityId): boolean;
  /** Connected clients. */
  readonly clientCount: number;
  /** Running totals (a live object: read fields when needed). */
  readonly counters: Readonly<TransportCounters>;
  /** Ends every session (`onDisconnect(viewer, 'closed')`) and releases the transport. */
  close(): Promise<void>;
}

/** The engine's ack entry point, once it has one. */
export type AcknowledgeFn = (viewer: EntityId, ack: number, ackBits: number) => void;

/** How an adapter files an error thrown by `world.acknowledge`. */
export function classifyAckError(e: unknown): 'unused' | 'bad' | 'error' {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  if (code === 'ERR_SIGHTLINE_ACKS_DISABLED' || code === 'ERR_SIGHTLINE_UNKNOWN_VIEWER') return 'unused';
  if (code === 'ERR_SIGHTLINE_INVALID_ACK') return 'bad';
  return 'error';
}

/**
 * `target.acknowledge` bound to target when it is a function (the engine's World once it takes
 * acks), else undefined. Checked once, when a transport is built.
 */
export function acknowledgeOf(target: object | undefined): AcknowledgeFn | undefined {
  if (target === undefined || target === null) return undefined;
  const fn = (target as { acknowledge?: unknown }).acknowledge;
  return typeof fn === 'function' ? (fn as AcknowledgeFn).bind(target) : undefined;
}

/** Throws ERR_SIGHTLINE_INVALID_ARGUMENT unless bytes is a game packet's: 16 to 65,507 bytes, version byte first. */
export function checkPacketBytes(bytes: unknown): asserts bytes is Uint8Array {
  if (!isUint8Array(bytes) || bytes.length < HEADER_BYTES || bytes.length > MAX_PAYLOAD_BYTES || bytes[0] !== PROTOCOL_VERSION) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `bytes must be a packet: a Uint8Array of ${HEADER_BYTES} to ${MAX_PAYLOAD_BYTES} bytes starting with version ${PROTOCOL_VERSION}, received ${describe(bytes)}` +
        (isUint8Array(bytes) ? ` (${bytes.length} bytes, version byte ${bytes[0]})` : ''),
    );
  }
}
