// Control messages (docs/control-messages.md): type bytes, sizes, codes and the decoded shapes.
// Browser-safe: imports nothing from Node.

/** Type byte of a client's HELLO. */
export const MSG_HELLO = 0xa0;
/** Type byte of a server's WELCOME. */
export const MSG_WELCOME = 0xa1;
/** Type byte of a server's REFUSE. */
export const MSG_REFUSE = 0xa2;
/** Type byte of a client's ACK. */
export const MSG_ACK = 0xa3;
/** Type byte of a BYE (either direction). */
export const MSG_BYE = 0xa4;
/** Type byte of a PING (either direction; never answered). */
export const MSG_PING = 0xa5;
/** Type byte of a server's CHALLENGE (the cookie a HELLO must bring back). */
export const MSG_CHALLENGE = 0xa6;
/** Type byte of a client's INPUT. */
export const MSG_INPUT = 0xa7;

/** Lowest type byte reserved for control messages. */
export const CONTROL_FIRST = 0xa0;
/** Highest type byte reserved for control messages (0xA8..0xAF are unassigned). */
export const CONTROL_LAST = 0xaf;

/** HELLO magic: the ASCII bytes "SLTN", read as a little-endian u32. */
export const NET_MAGIC = 0x4e544c53;
/**
 * Revision of the control messages, carried in every HELLO (byte 5). Revision 1 had no cookie,
 * tokens or input; a server refuses any revision but its own (REFUSE NET_VERSION).
 */
export const NET_VERSION = 2;

/** Session token size, bytes (64 random bits from node:crypto, chosen by the server). */
export const TOKEN_BYTES = 8;
/** Cookie size, bytes: the first 16 bytes of an HMAC-SHA-256 (docs/transport.md). */
export const COOKIE_BYTES = 16;
/** Largest connect token a HELLO carries, bytes (netcode.io's connect tokens are 1,024 bytes too). */
export const CONNECT_TOKEN_MAX_BYTES = 1024;
/** HELLO bytes before its connect token. */
export const HELLO_HEADER_BYTES = 33;
/**
 * Shortest HELLO, bytes: a HELLO is zero-padded to at least this length, so a server never
 * answers an address it has not verified with more bytes than it received (CHALLENGE, WELCOME and
 * REFUSE are at most this long).
 */
export const HELLO_MIN_BYTES = 128;
/** Longest HELLO, bytes (a maximal connect token). */
export const HELLO_MAX_BYTES = HELLO_HEADER_BYTES + CONNECT_TOKEN_MAX_BYTES;
/** CHALLENGE size, bytes. */
export const CHALLENGE_BYTES = 21;
/** WELCOME size, bytes. */
export const WELCOME_BYTES = 38;
/** REFUSE size without its text, bytes. */
export const REFUSE_HEADER_BYTES = 11;
/** Longest REFUSE text, UTF-8 bytes: a REFUSE is never longer than the shortest HELLO. */
export const REFUSE_TEXT_MAX_BYTES = HELLO_MIN_BYTES - REFUSE_HEADER_BYTES;
/** ACK size, bytes. */
export const ACK_BYTES = 15;
/** BYE size, bytes. */
export const BYE_BYTES = 10;
/** PING size, bytes. */
export const PING_BYTES = 9;
/** INPUT bytes before its payload. */
export const INPUT_HEADER_BYTES = 12;
/** Largest INPUT payload the protocol allows, bytes (a server may set a lower `maxInputBytes`). */
export const INPUT_MAX_BYTES = 1024;
/** Longest message a client sends, bytes: a datagram to a server longer than this is malformed. */
export const MAX_CLIENT_MESSAGE_BYTES = Math.max(HELLO_MAX_BYTES, INPUT_HEADER_BYTES + INPUT_MAX_BYTES);
/**
 * Reliable inputs a server holds ahead of the next one it expects: what the 16 bits of a game
 * packet's `ackBits` can describe. A reliable input further ahead is dropped (the client resends it).
 */
export const INPUT_WINDOW = 16;

/** What an INPUT carries (its kind byte). */
export const InputKind = Object.freeze({
  /** Unreliable, sequenced: the server passes on only inputs newer than every one before (latest wins). */
  UNRELIABLE: 0,
  /** Reliable, ordered: each passed on exactly once, in order; resent until acknowledged. */
  RELIABLE: 1,
} as const);
export type InputKind = (typeof InputKind)[keyof typeof InputKind];

/** Why a server refused a HELLO (REFUSE code byte). */
export const RefuseCode = Object.freeze({
  /** The HELLO's game-packet protocol version is not the server's; detail = the server's version. */
  VERSION: 1,
  /** The HELLO's protocol hash is not the server's; detail = the server's hash. */
  PROTOCOL_HASH: 2,
  /** The server holds its maximum number of clients; detail = that maximum. */
  SERVER_FULL: 3,
  /** The game refused the connection (its onConnect threw); detail = 0. */
  REJECTED: 4,
  /** The server is shutting down; detail = 0. */
  CLOSING: 5,
  /** The HELLO's control-message revision is not the server's; detail = the server's ({@link NET_VERSION}). */
  NET_VERSION: 6,
} as const);
export type RefuseCode = (typeof RefuseCode)[keyof typeof RefuseCode];

/** Why a BYE was sent (BYE reason byte). */
export const ByeReason = Object.freeze({
  /** The sender closed the connection. */
  CLOSED: 0,
  /** The server heard nothing from the client within its timeout. */
  TIMEOUT: 1,
  /** The server's game disconnected the client. */
  KICKED: 2,
  /** The server is shutting down. */
  SHUTDOWN: 3,
  /** A new HELLO from the same address replaced this session. */
  REPLACED: 4,
} as const);
export type ByeReason = (typeof ByeReason)[keyof typeof ByeReason];

/** Error code a client raises for each refuse code (unknown codes: `ERR_SIGHTLINE_NET_REFUSED`). */
export const REFUSE_ERROR_CODES: Readonly<Record<number, string>> = Object.freeze({
  [RefuseCode.VERSION]: 'ERR_SIGHTLINE_NET_REFUSED_VERSION',
  [RefuseCode.PROTOCOL_HASH]: 'ERR_SIGHTLINE_NET_REFUSED_PROTOCOL_HASH',
  [RefuseCode.SERVER_FULL]: 'ERR_SIGHTLINE_NET_REFUSED_SERVER_FULL',
  [RefuseCode.REJECTED]: 'ERR_SIGHTLINE_NET_REFUSED_REJECTED',
  [RefuseCode.CLOSING]: 'ERR_SIGHTLINE_NET_REFUSED_CLOSING',
  [RefuseCode.NET_VERSION]: 'ERR_SIGHTLINE_NET_REFUSED_NET_VERSION',
});

/** A client's request to join: sent first without a cookie, then again with the CHALLENGE's. */
export interface HelloMessage {
  readonly type: typeof MSG_HELLO;
  /** Control-message revision (u8; {@link NET_VERSION}). */
  readonly netVersion: number;
  /** Game-packet protocol version the client decodes (u8). */
  readonly version: number;
  /** The client's protocol hash (u32; `WorldConfig.protocolHash`). */
  readonly protocolHash: number;
  /** Client-chosen u32 echoed in the answer, to match it to this HELLO. */
  readonly nonce: number;
  /** The CHALLENGE's cookie ({@link COOKIE_BYTES} bytes), or null (all zero on the wire): none yet. */
  readonly cookie: Uint8Array | null;
  /** Opaque bytes from the game's backend (0 to {@link CONNECT_TOKEN_MAX_BYTES}); empty when none. */
  readonly connectToken: Uint8Array;
}

/** The server's answer to a HELLO without a valid cookie: the cookie to bring back. */
export interface ChallengeMessage {
  readonly type: typeof MSG_CHALLENGE;
  /** The HELLO's nonce (u32). */
  readonly nonce: number;
  /** {@link COOKIE_BYTES} bytes, bound to the client's address, port and nonce. */
  readonly cookie: Uint8Array;
}

/**
 * The server's acceptance: the session token, the client's avatar and the packet layout. The
 * layout travels with the hash it must produce, so a client that knows only the hash can decode.
 */
export interface WelcomeMessage {
  readonly type: typeof MSG_WELCOME;
  /** The HELLO's nonce (u32). */
  readonly nonce: number;
  /** The session token ({@link TOKEN_BYTES} bytes): every later message of the session carries it. */
  readonly token: Uint8Array;
  /** Entity id of the client's avatar: the viewer id its packets are addressed to (u32). */
  readonly avatar: number;
  /** Server protocol hash (u32); equals protocolHash(regionRaw, verticalRaw, quantShift). */
  readonly protocolHash: number;
  /** Region side, raw units (1024 per meter): a power of two from 2^10 to 2^26. */
  readonly regionRaw: number;
  /** Vertical extent, raw units: 2 to 2^26. */
  readonly verticalRaw: number;
  /** Low bits dropped per coordinate on the wire (u8). */
  readonly quantShift: number;
  /** Largest game packet the server sends this client, bytes (u16). */
  readonly payloadBytes: number;
  /** Server tick period, microseconds (u32; 0 when unknown). */
  readonly tickMicros: number;
  /** Largest INPUT payload the server takes, bytes (u16, at most {@link INPUT_MAX_BYTES}). */
  readonly maxInputBytes: number;
}

/** The server's refusal of a HELLO. */
export interface RefuseMessage {
  readonly type: typeof MSG_REFUSE;
  /** The HELLO's nonce (u32). */
  readonly nonce: number;
  /** Why: a {@link RefuseCode} (u8; unknown codes are passed through). */
  readonly code: number;
  /** A number qualifying the code (u32): see {@link RefuseCode}. */
  readonly detail: number;
  /** Human-readable reason, at most {@link REFUSE_TEXT_MAX_BYTES} UTF-8 bytes. */
  readonly text: string;
}

/** A client's acknowledgement of the game packets it received. */
export interface AckMessage {
  readonly type: typeof MSG_ACK;
  /** The session token (8 bytes). */
  readonly token: Uint8Array;
  /** Sequence of the newest game packet received (u16). */
  readonly ack: number;
  /** Bit i (0..31) set: packet sequence (ack - 1 - i) mod 65536 was received (u32). */
  readonly ackBits: number;
}

/** The end of a session, from either side. */
export interface ByeMessage {
  readonly type: typeof MSG_BYE;
  /** The session token (8 bytes). */
  readonly token: Uint8Array;
  /** A {@link ByeReason} (u8; unknown reasons are passed through). */
  readonly reason: number;
}

/** A keepalive: refreshes the receiver's timeout, expects no answer. */
export interface PingMessage {
  readonly type: typeof MSG_PING;
  /** The session token (8 bytes). */
  readonly token: Uint8Array;
}

/** Game input from a client. */
export interface InputMessage {
  readonly type: typeof MSG_INPUT;
  /** The session token (8 bytes). */
  readonly token: Uint8Array;
  /** An {@link InputKind}. */
  readonly kind: InputKind;
  /** Per-kind sequence (u16, wraps): +1 per input of that kind the client sends, from 0. */
  readonly sequence: number;
  /** The game's bytes (0 to {@link INPUT_MAX_BYTES}): a view into the datagram. */
  readonly payload: Uint8Array;
}

/** Any control message. */
export type ControlMessage =
  | HelloMessage
  | ChallengeMessage
  | WelcomeMessage
  | RefuseMessage
  | AckMessage
  | ByeMessage
  | PingMessage
  | InputMessage;
