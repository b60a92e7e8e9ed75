// Control datagrams between a client and a server (docs/transport.md): the handshake, acks,
// keepalives and goodbyes that travel beside the engine's game packets.
// Browser-safe: imports nothing from Node.

import { PROTOCOL_VERSION, protocolHash } from '../config.js';
import type { PacketLayoutConfig } from '../decode.js';
import { SightlineError, describe, isUint8Array } from '../errors.js';

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

/** Lowest type byte reserved for control messages. */
export const CONTROL_FIRST = 0xa0;
/** Highest type byte reserved for control messages. */
export const CONTROL_LAST = 0xaf;

/** HELLO magic: the ASCII bytes "SLTN", read as a little-endian u32. */
export const NET_MAGIC = 0x4e544c53;

/**
 * HELLO size, bytes: every HELLO is padded with zeros to this length, so a server never answers an
 * unconnected address with more bytes than it received (REFUSE and WELCOME are shorter).
 */
export const HELLO_BYTES = 128;
/** WELCOME size, bytes. */
export const WELCOME_BYTES = 28;
/** REFUSE size without its text, bytes. */
export const REFUSE_HEADER_BYTES = 11;
/** Longest REFUSE text, UTF-8 bytes: a REFUSE is never longer than a HELLO. */
export const REFUSE_TEXT_MAX_BYTES = HELLO_BYTES - REFUSE_HEADER_BYTES;
/** ACK size, bytes. */
export const ACK_BYTES = 7;
/** BYE size, bytes. */
export const BYE_BYTES = 2;
/** PING size, bytes. */
export const PING_BYTES = 1;
/** Longest control message, bytes (a HELLO). A longer datagram to a server is malformed. */
export const MAX_CONTROL_BYTES = HELLO_BYTES;

/** Why a server refused a HELLO (REFUSE code byte). */
export const RefuseCode = Object.freeze({
  /** The HELLO's protocol version is not the server's; detail = the server's version. */
  VERSION: 1,
  /** The HELLO's protocol hash is not the server's; detail = the server's hash. */
  PROTOCOL_HASH: 2,
  /** The server holds its maximum number of clients; detail = that maximum. */
  SERVER_FULL: 3,
  /** The game refused the connection (its onConnect threw); detail = 0. */
  REJECTED: 4,
  /** The server is shutting down; detail = 0. */
  CLOSING: 5,
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
});

/** A client's request to join. */
export interface HelloMessage {
  readonly type: typeof MSG_HELLO;
  /** Game-packet protocol version the client decodes (u8; 1 today). */
  readonly version: number;
  /** The client's protocol hash (u32; `WorldConfig.protocolHash`). */
  readonly protocolHash: number;
  /** Client-chosen u32 echoed in the answer, to match it to this HELLO. */
  readonly nonce: number;
}

/**
 * The server's acceptance: the client's avatar and the packet layout. The layout travels with the
 * hash it must produce, so a client that knows only the hash can decode.
 */
export interface WelcomeMessage {
  readonly type: typeof MSG_WELCOME;
  /** The HELLO's nonce (u32). */
  readonly nonce: number;
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
  /** Sequence of the newest game packet received (u16). */
  readonly ack: number;
  /** Bit i (0..31) set: packet sequence (ack - 1 - i) mod 65536 was received (u32). */
  readonly ackBits: number;
}

/** The end of a session, from either side. */
export interface ByeMessage {
  readonly type: typeof MSG_BYE;
  /** A {@link ByeReason} (u8; unknown reasons are passed through). */
  readonly reason: number;
}

/** A keepalive: refreshes the receiver's timeout, expects no answer. */
export interface PingMessage {
  readonly type: typeof MSG_PING;
}

/** Any control message. */
export type ControlMessage = HelloMessage | WelcomeMessage | RefuseMessage | AckMessage | ByeMessage | PingMessage;

/** What a datagram's first byte says it is. */
export type DatagramKind = 'game' | 'control' | 'unknown';

/**
 * Classifies a datagram by its first byte: `'game'` for the engine's packets (byte 0 is
 * {@link PROTOCOL_VERSION}), `'control'` for 0xA0..0xAF, `'unknown'` otherwise (including empty).
 * @throws ERR_SIGHTLINE_NET_NOT_BYTES (not a Uint8Array).
 */
export function datagramKind(bytes: Uint8Array): DatagramKind {
  if (!isUint8Array(bytes)) throw new SightlineError('ERR_SIGHTLINE_NET_NOT_BYTES', `datagram must be a Uint8Array, received ${describe(bytes)}`);
  if (bytes.length === 0) return 'unknown';
  const b = bytes[0];
  if (b === PROTOCOL_VERSION) return 'game';
  if (b >= CONTROL_FIRST && b <= CONTROL_LAST) return 'control';
  return 'unknown';
}

// ---------------------------------------------------------------------------------------------
// Encoding.

function checkFields(name: string, value: unknown): void {
  if (typeof value !== 'object' || value === null) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be an object, received ${describe(value)}`);
  }
}

function checkUint(name: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be an integer from 0 to ${max}, received ${describe(value)}`);
  }
  return value;
}

function putU16(b: Uint8Array, i: number, v: number): void {
  b[i] = v & 0xff;
  b[i + 1] = (v >>> 8) & 0xff;
}

function putU32(b: Uint8Array, i: number, v: number): void {
  b[i] = v & 0xff;
  b[i + 1] = (v >>> 8) & 0xff;
  b[i + 2] = (v >>> 16) & 0xff;
  b[i + 3] = (v >>> 24) & 0xff;
}

function getU16(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8);
}

function getU32(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Encodes a HELLO: {@link HELLO_BYTES} bytes, zero-padded.
 * @param fields protocolHash (u32), nonce (u32), version (u8, default {@link PROTOCOL_VERSION})
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (a field out of range).
 */
export function encodeHello(fields: { protocolHash: number; nonce: number; version?: number }): Uint8Array {
  checkFields('fields', fields);
  const version = checkUint('version', fields.version ?? PROTOCOL_VERSION, 0xff);
  const hash = checkUint('protocolHash', fields.protocolHash, 0xffffffff);
  const nonce = checkUint('nonce', fields.nonce, 0xffffffff);
  const b = new Uint8Array(HELLO_BYTES);
  b[0] = MSG_HELLO;
  putU32(b, 1, NET_MAGIC);
  b[5] = version;
  putU32(b, 6, hash);
  putU32(b, 10, nonce);
  return b;
}

/**
 * Encodes a WELCOME ({@link WELCOME_BYTES} bytes). The layout must be consistent with the hash.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (a field out of range, or a layout the hash does not match).
 */
export function encodeWelcome(fields: Omit<WelcomeMessage, 'type'>): Uint8Array {
  checkFields('fields', fields);
  const nonce = checkUint('nonce', fields.nonce, 0xffffffff);
  const avatar = checkUint('avatar', fields.avatar, 0xffffffff);
  const hash = checkUint('protocolHash', fields.protocolHash, 0xffffffff);
  const regionRaw = checkUint('regionRaw', fields.regionRaw, 0xffffffff);
  const verticalRaw = checkUint('verticalRaw', fields.verticalRaw, 0xffffffff);
  const quantShift = checkUint('quantShift', fields.quantShift, 0xff);
  const payloadBytes = checkUint('payloadBytes', fields.payloadBytes, 0xffff);
  const tickMicros = checkUint('tickMicros', fields.tickMicros, 0xffffffff);
  const problem = layoutProblem(hash, regionRaw, verticalRaw, quantShift);
  if (problem !== undefined) throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `WELCOME layout: ${problem}`);
  const b = new Uint8Array(WELCOME_BYTES);
  b[0] = MSG_WELCOME;
  putU32(b, 1, nonce);
  putU32(b, 5, avatar);
  putU32(b, 9, hash);
  putU32(b, 13, regionRaw);
  putU32(b, 17, verticalRaw);
  b[21] = quantShift;
  putU16(b, 22, payloadBytes);
  putU32(b, 24, tickMicros);
  return b;
}

/**
 * Encodes a REFUSE. Text longer than {@link REFUSE_TEXT_MAX_BYTES} UTF-8 bytes is cut at a
 * character boundary.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (nonce or detail not a u32, code not a u8, text not a string).
 */
export function encodeRefuse(fields: { nonce: number; code: number; detail?: number; text: string }): Uint8Array {
  checkFields('fields', fields);
  const nonce = checkUint('nonce', fields.nonce, 0xffffffff);
  const code = checkUint('code', fields.code, 0xff);
  const detail = checkUint('detail', fields.detail ?? 0, 0xffffffff);
  if (typeof fields.text !== 'string') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `text must be a string, received ${describe(fields.text)}`);
  }
  let text = utf8Encoder.encode(fields.text);
  if (text.length > REFUSE_TEXT_MAX_BYTES) {
    let end = REFUSE_TEXT_MAX_BYTES;
    while (end > 0 && (text[end] & 0xc0) === 0x80) end--; // never split a multi-byte character
    text = text.subarray(0, end);
  }
  const b = new Uint8Array(REFUSE_HEADER_BYTES + text.length);
  b[0] = MSG_REFUSE;
  putU32(b, 1, nonce);
  b[5] = code;
  putU32(b, 6, detail);
  b[10] = text.length;
  b.set(text, REFUSE_HEADER_BYTES);
  return b;
}

/**
 * Encodes an ACK ({@link ACK_BYTES} bytes), into `out` (at offset 0) when given.
 * @param ack newest game-packet sequence received, u16
 * @param ackBits bit i set: sequence (ack - 1 - i) mod 65536 received, u32
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (ack not a u16, ackBits not a u32, `out` shorter than 7 bytes).
 */
export function encodeAck(ack: number, ackBits: number, out?: Uint8Array): Uint8Array {
  checkUint('ack', ack, 0xffff);
  checkUint('ackBits', ackBits, 0xffffffff);
  if (out !== undefined && !(out instanceof Uint8Array && out.length >= ACK_BYTES)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `out must be a Uint8Array of at least ${ACK_BYTES} bytes, received ${describe(out)}`);
  }
  const b = out ?? new Uint8Array(ACK_BYTES);
  b[0] = MSG_ACK;
  putU16(b, 1, ack);
  putU32(b, 3, ackBits);
  return b;
}

/**
 * Encodes a BYE ({@link BYE_BYTES} bytes).
 * @param reason a {@link ByeReason} (u8), default CLOSED
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (reason not a u8).
 */
export function encodeBye(reason: number = ByeReason.CLOSED): Uint8Array {
  checkUint('reason', reason, 0xff);
  return Uint8Array.of(MSG_BYE, reason);
}

/** Encodes a PING ({@link PING_BYTES} byte). */
export function encodePing(): Uint8Array {
  return Uint8Array.of(MSG_PING);
}

// ---------------------------------------------------------------------------------------------
// Decoding.

function fail(code: string, message: string): never {
  throw new SightlineError(code, message);
}

function exactLength(name: string, bytes: Uint8Array, expected: number): void {
  if (bytes.length < expected)
    fail('ERR_SIGHTLINE_NET_TRUNCATED', `${name} is ${bytes.length} bytes, shorter than its ${expected} bytes`);
  if (bytes.length > expected)
    fail('ERR_SIGHTLINE_NET_OVERSIZED', `${name} is ${bytes.length} bytes, longer than its ${expected} bytes`);
}

/** Why a WELCOME's layout is impossible or does not produce its hash; undefined when it is sound. */
function layoutProblem(hash: number, regionRaw: number, verticalRaw: number, quantShift: number): string | undefined {
  if (regionRaw < 1024 || regionRaw > 2 ** 26 || (regionRaw & (regionRaw - 1)) !== 0)
    return `regionRaw must be a power of two from 1024 to 2^26, received ${regionRaw}`;
  if (verticalRaw < 2 || verticalRaw > 2 ** 26) return `verticalRaw must be from 2 to 2^26, received ${verticalRaw}`;
  const regionShift = 31 - Math.clz32(regionRaw);
  const zBits = 32 - Math.clz32(verticalRaw - 1);
  const excess = 2 * regionShift + zBits - 64;
  const q = excess <= 0 ? 0 : Math.floor((excess + 2) / 3);
  if (quantShift !== q) return `quantShift must be ${q} for regionRaw ${regionRaw} and verticalRaw ${verticalRaw}, received ${quantShift}`;
  const expected = protocolHash(regionRaw, verticalRaw, quantShift);
  if (hash !== expected)
    return `protocol hash 0x${hex32(hash)} does not match the layout (regionRaw ${regionRaw}, verticalRaw ${verticalRaw}, quantShift ${quantShift} hash to 0x${hex32(expected)})`;
  return undefined;
}

/** A u32 as 8 lowercase hex digits. */
export function hex32(v: number): string {
  return (v >>> 0).toString(16).padStart(8, '0');
}

/**
 * Decodes one control message. Reads no byte before checking the length covers it.
 *
 * @param bytes the whole datagram
 * @throws SightlineError with one of:
 *   `ERR_SIGHTLINE_NET_NOT_BYTES` (not a Uint8Array),
 *   `ERR_SIGHTLINE_NET_TRUNCATED` (empty, or shorter than its type's length),
 *   `ERR_SIGHTLINE_NET_OVERSIZED` (longer than its type's length),
 *   `ERR_SIGHTLINE_NET_UNKNOWN_TYPE` (first byte is not a control type defined here),
 *   `ERR_SIGHTLINE_NET_BAD_MAGIC` (a HELLO without the "SLTN" magic),
 *   `ERR_SIGHTLINE_NET_MALFORMED` (nonzero HELLO padding, a REFUSE text length that disagrees with
 *   the datagram or is not UTF-8, a WELCOME whose layout is impossible or does not match its hash).
 */
export function decodeControl(bytes: Uint8Array): ControlMessage {
  if (!isUint8Array(bytes))
    fail('ERR_SIGHTLINE_NET_NOT_BYTES', `datagram must be a Uint8Array, received ${describe(bytes)}`);
  const len = bytes.length;
  if (len === 0) fail('ERR_SIGHTLINE_NET_TRUNCATED', 'datagram is empty');
  const type = bytes[0];
  switch (type) {
    case MSG_HELLO: {
      exactLength('HELLO', bytes, HELLO_BYTES);
      const magic = getU32(bytes, 1);
      if (magic !== NET_MAGIC) fail('ERR_SIGHTLINE_NET_BAD_MAGIC', `HELLO magic must be 0x${hex32(NET_MAGIC)} ("SLTN"), received 0x${hex32(magic)}`);
      for (let i = 14; i < HELLO_BYTES; i++) {
        if (bytes[i] !== 0) fail('ERR_SIGHTLINE_NET_MALFORMED', `HELLO padding must be zero, byte ${i} is ${bytes[i]}`);
      }
      return { type: MSG_HELLO, version: bytes[5], protocolHash: getU32(bytes, 6), nonce: getU32(bytes, 10) };
    }
    case MSG_WELCOME: {
      exactLength('WELCOME', bytes, WELCOME_BYTES);
      const msg: WelcomeMessage = {
        type: MSG_WELCOME,
        nonce: getU32(bytes, 1),
        avatar: getU32(bytes, 5),
        protocolHash: getU32(bytes, 9),
        regionRaw: getU32(bytes, 13),
        verticalRaw: getU32(bytes, 17),
        quantShift: bytes[21],
        payloadBytes: getU16(bytes, 22),
        tickMicros: getU32(bytes, 24),
      };
      const problem = layoutProblem(msg.protocolHash, msg.regionRaw, msg.verticalRaw, msg.quantShift);
      if (problem !== undefined) fail('ERR_SIGHTLINE_NET_MALFORMED', `WELCOME layout: ${problem}`);
      return msg;
    }
    case MSG_REFUSE: {
      if (len < REFUSE_HEADER_BYTES)
        fail('ERR_SIGHTLINE_NET_TRUNCATED', `REFUSE is ${len} bytes, shorter than its ${REFUSE_HEADER_BYTES}-byte header`);
      const textLength = bytes[10];
      if (textLength > REFUSE_TEXT_MAX_BYTES)
        fail('ERR_SIGHTLINE_NET_MALFORMED', `REFUSE text length must be at most ${REFUSE_TEXT_MAX_BYTES}, received ${textLength}`);
      exactLength('REFUSE', bytes, REFUSE_HEADER_BYTES + textLength);
      let text: string;
      try {
        text = utf8Decoder.decode(bytes.subarray(REFUSE_HEADER_BYTES));
      } catch {
        fail('ERR_SIGHTLINE_NET_MALFORMED', 'REFUSE text is not valid UTF-8');
      }
      return { type: MSG_REFUSE, nonce: getU32(bytes, 1), code: bytes[5], detail: getU32(bytes, 6), text };
    }
    case MSG_ACK:
      exactLength('ACK', bytes, ACK_BYTES);
      return { type: MSG_ACK, ack: getU16(bytes, 1), ackBits: getU32(bytes, 3) };
    case MSG_BYE:
      exactLength('BYE', bytes, BYE_BYTES);
      return { type: MSG_BYE, reason: bytes[1] };
    case MSG_PING:
      exactLength('PING', bytes, PING_BYTES);
      return { type: MSG_PING };
    default:
      fail('ERR_SIGHTLINE_NET_UNKNOWN_TYPE', `datagram type 0x${type.toString(16).padStart(2, '0')} is not a control message`);
  }
}

/**
 * The packet layout a WELCOME describes, for {@link decodePacketRaw} / {@link ClientWorld}.
 * regionShift = log2(regionRaw), zBits = ceil(log2(verticalRaw)).
 */
export function layoutOf(welcome: Pick<WelcomeMessage, 'regionRaw' | 'verticalRaw' | 'quantShift'>): PacketLayoutConfig {
  checkFields('welcome', welcome);
  return {
    regionRaw: welcome.regionRaw,
    regionShift: 31 - Math.clz32(welcome.regionRaw),
    verticalRaw: welcome.verticalRaw,
    zBits: 32 - Math.clz32(welcome.verticalRaw - 1),
    quantShift: welcome.quantShift,
  };
}

/**
 * The error a client raises for a REFUSE: code from {@link REFUSE_ERROR_CODES}
 * (`ERR_SIGHTLINE_NET_REFUSED` for an unknown refuse code), message naming the server's reason.
 */
export function refuseError(refuse: RefuseMessage, clientHash?: number): SightlineError {
  checkFields('refuse', refuse);
  const code = REFUSE_ERROR_CODES[refuse.code] ?? 'ERR_SIGHTLINE_NET_REFUSED';
  let message = `server refused the connection (code ${refuse.code}): ${refuse.text}`;
  // The hashes, unless the server's text gives them already (a sightline server's does).
  if (refuse.code === RefuseCode.PROTOCOL_HASH && clientHash !== undefined && !refuse.text.includes(`0x${hex32(clientHash)}`)) {
    message += ` (server hash 0x${hex32(refuse.detail)}, client hash 0x${hex32(clientHash)})`;
  }
  return new SightlineError(code, message);
}

/** {@link decodeControl}, or undefined for a malformed datagram (the caller counts it). */
export function tryDecodeControl(bytes: Uint8Array): ControlMessage | undefined {
  try {
    return decodeControl(bytes);
  } catch {
    return undefined;
  }
}
