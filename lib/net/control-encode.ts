// Control-message encoders (docs/control-messages.md has every layout and its test vector).
// Browser-safe: imports nothing from Node.

import { PROTOCOL_VERSION } from '../wire.js';
import { SightlineError, describe, isUint8Array } from '../errors.js';
import { checkBytes, checkFields, checkToken, checkUint, putU16, putU32 } from './bytes.js';
import { layoutProblem } from './control-layout.js';
import {
  ACK_BYTES,
  BYE_BYTES,
  ByeReason,
  CHALLENGE_BYTES,
  CONNECT_TOKEN_MAX_BYTES,
  COOKIE_BYTES,
  HELLO_HEADER_BYTES,
  HELLO_MIN_BYTES,
  INPUT_HEADER_BYTES,
  INPUT_MAX_BYTES,
  MSG_ACK,
  MSG_BYE,
  MSG_CHALLENGE,
  MSG_HELLO,
  MSG_INPUT,
  MSG_PING,
  MSG_REFUSE,
  MSG_WELCOME,
  NET_MAGIC,
  NET_VERSION,
  PING_BYTES,
  REFUSE_HEADER_BYTES,
  REFUSE_TEXT_MAX_BYTES,
  TOKEN_BYTES,
  WELCOME_BYTES,
  type WelcomeMessage,
} from './control-types.js';

const utf8Encoder = new TextEncoder();

/** Size of a HELLO carrying a connect token of `tokenBytes` bytes: max(128, 33 + tokenBytes). */
export function helloBytes(tokenBytes: number): number {
  return Math.max(HELLO_MIN_BYTES, HELLO_HEADER_BYTES + tokenBytes);
}

/**
 * Encodes a HELLO: {@link helloBytes} bytes, zero-padded.
 * @param fields protocolHash (u32), nonce (u32), cookie (16 bytes, or null / absent before the
 *   CHALLENGE), connectToken (0 to 1,024 bytes, default none), version (u8, default
 *   {@link PROTOCOL_VERSION}), netVersion (u8, default {@link NET_VERSION})
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (a field out of range, a cookie not of 16 bytes, a
 *   connect token over 1,024 bytes or not a Uint8Array).
 */
export function encodeHello(fields: {
  protocolHash: number;
  nonce: number;
  cookie?: Uint8Array | null;
  connectToken?: Uint8Array;
  version?: number;
  netVersion?: number;
}): Uint8Array {
  checkFields('fields', fields);
  const netVersion = checkUint('netVersion', fields.netVersion ?? NET_VERSION, 0xff);
  const version = checkUint('version', fields.version ?? PROTOCOL_VERSION, 0xff);
  const hash = checkUint('protocolHash', fields.protocolHash, 0xffffffff);
  const nonce = checkUint('nonce', fields.nonce, 0xffffffff);
  const cookie = fields.cookie === undefined || fields.cookie === null ? null : checkBytes('cookie', fields.cookie, COOKIE_BYTES);
  const token = fields.connectToken ?? new Uint8Array(0);
  if (!isUint8Array(token) || token.length > CONNECT_TOKEN_MAX_BYTES) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `connectToken must be a Uint8Array of at most ${CONNECT_TOKEN_MAX_BYTES} bytes, received ${describe(token)}`,
    );
  }
  const b = new Uint8Array(helloBytes(token.length));
  b[0] = MSG_HELLO;
  putU32(b, 1, NET_MAGIC);
  b[5] = netVersion;
  b[6] = version;
  putU32(b, 7, hash);
  putU32(b, 11, nonce);
  if (cookie !== null) b.set(cookie, 15);
  putU16(b, 31, token.length);
  b.set(token, HELLO_HEADER_BYTES);
  return b;
}

/**
 * Encodes a CHALLENGE ({@link CHALLENGE_BYTES} bytes).
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (nonce not a u32, cookie not 16 bytes).
 */
export function encodeChallenge(fields: { nonce: number; cookie: Uint8Array }): Uint8Array {
  checkFields('fields', fields);
  const nonce = checkUint('nonce', fields.nonce, 0xffffffff);
  const cookie = checkBytes('cookie', fields.cookie, COOKIE_BYTES);
  const b = new Uint8Array(CHALLENGE_BYTES);
  b[0] = MSG_CHALLENGE;
  putU32(b, 1, nonce);
  b.set(cookie, 5);
  return b;
}

/**
 * Encodes a WELCOME ({@link WELCOME_BYTES} bytes). The layout must be consistent with the hash.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (a field out of range, a token not of 8 bytes, a layout
 *   the hash does not match).
 */
export function encodeWelcome(fields: Omit<WelcomeMessage, 'type'>): Uint8Array {
  checkFields('fields', fields);
  const nonce = checkUint('nonce', fields.nonce, 0xffffffff);
  const token = checkToken(fields.token);
  const avatar = checkUint('avatar', fields.avatar, 0xffffffff);
  const hash = checkUint('protocolHash', fields.protocolHash, 0xffffffff);
  const regionRaw = checkUint('regionRaw', fields.regionRaw, 0xffffffff);
  const verticalRaw = checkUint('verticalRaw', fields.verticalRaw, 0xffffffff);
  const quantShift = checkUint('quantShift', fields.quantShift, 0xff);
  const payloadBytes = checkUint('payloadBytes', fields.payloadBytes, 0xffff);
  const tickMicros = checkUint('tickMicros', fields.tickMicros, 0xffffffff);
  const maxInputBytes = checkUint('maxInputBytes', fields.maxInputBytes, INPUT_MAX_BYTES);
  const problem = layoutProblem(hash, regionRaw, verticalRaw, quantShift);
  if (problem !== undefined) throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `WELCOME layout: ${problem}`);
  const b = new Uint8Array(WELCOME_BYTES);
  b[0] = MSG_WELCOME;
  putU32(b, 1, nonce);
  b.set(token, 5);
  putU32(b, 13, avatar);
  putU32(b, 17, hash);
  putU32(b, 21, regionRaw);
  putU32(b, 25, verticalRaw);
  b[29] = quantShift;
  putU16(b, 30, payloadBytes);
  putU32(b, 32, tickMicros);
  putU16(b, 36, maxInputBytes);
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
 * @param token the session token (8 bytes, from the WELCOME)
 * @param ack newest game-packet sequence received, u16
 * @param ackBits bit i set: sequence (ack - 1 - i) mod 65536 received, u32
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (token not 8 bytes, ack not a u16, ackBits not a u32,
 *   `out` shorter than 15 bytes).
 */
export function encodeAck(token: Uint8Array, ack: number, ackBits: number, out?: Uint8Array): Uint8Array {
  checkToken(token);
  checkUint('ack', ack, 0xffff);
  checkUint('ackBits', ackBits, 0xffffffff);
  if (out !== undefined && !(isUint8Array(out) && out.length >= ACK_BYTES)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `out must be a Uint8Array of at least ${ACK_BYTES} bytes, received ${describe(out)}`);
  }
  const b = out ?? new Uint8Array(ACK_BYTES);
  b[0] = MSG_ACK;
  b.set(token, 1);
  putU16(b, 9, ack);
  putU32(b, 11, ackBits);
  return b;
}

/**
 * Encodes a BYE ({@link BYE_BYTES} bytes).
 * @param token the session token (8 bytes)
 * @param reason a {@link ByeReason} (u8), default CLOSED
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (token not 8 bytes, reason not a u8).
 */
export function encodeBye(token: Uint8Array, reason: number = ByeReason.CLOSED): Uint8Array {
  checkToken(token);
  checkUint('reason', reason, 0xff);
  const b = new Uint8Array(BYE_BYTES);
  b[0] = MSG_BYE;
  b.set(token, 1);
  b[1 + TOKEN_BYTES] = reason;
  return b;
}

/**
 * Encodes a PING ({@link PING_BYTES} bytes).
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (token not 8 bytes).
 */
export function encodePing(token: Uint8Array): Uint8Array {
  checkToken(token);
  const b = new Uint8Array(PING_BYTES);
  b[0] = MSG_PING;
  b.set(token, 1);
  return b;
}

/**
 * Encodes an INPUT: {@link INPUT_HEADER_BYTES} + payload.length bytes.
 * @param fields token (8 bytes), kind (an {@link InputKind}), sequence (u16), payload (0 to 1,024 bytes)
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (token not 8 bytes, kind not 0 or 1, sequence not a
 *   u16, payload not a Uint8Array or over 1,024 bytes).
 */
export function encodeInput(fields: { token: Uint8Array; kind: number; sequence: number; payload: Uint8Array }): Uint8Array {
  checkFields('fields', fields);
  const token = checkToken(fields.token);
  const kind = checkUint('kind', fields.kind, 1);
  const sequence = checkUint('sequence', fields.sequence, 0xffff);
  const payload = fields.payload;
  if (!isUint8Array(payload) || payload.length > INPUT_MAX_BYTES) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `payload must be a Uint8Array of at most ${INPUT_MAX_BYTES} bytes, received ${describe(payload)}`,
    );
  }
  const b = new Uint8Array(INPUT_HEADER_BYTES + payload.length);
  b[0] = MSG_INPUT;
  b.set(token, 1);
  b[9] = kind;
  putU16(b, 10, sequence);
  b.set(payload, INPUT_HEADER_BYTES);
  return b;
}
