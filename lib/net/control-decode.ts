// Control-message decoding: strict, length-checked before every read, coded errors.
// Browser-safe: imports nothing from Node.

import { PROTOCOL_VERSION } from '../wire.js';
import { SightlineError, describe, isUint8Array } from '../errors.js';
import { getU16, getU32, hex32 } from './bytes.js';
import { helloBytes } from './control-encode.js';
import { layoutProblem } from './control-layout.js';
import {
  ACK_BYTES,
  BYE_BYTES,
  CHALLENGE_BYTES,
  CONNECT_TOKEN_MAX_BYTES,
  CONTROL_FIRST,
  CONTROL_LAST,
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
  PING_BYTES,
  REFUSE_HEADER_BYTES,
  REFUSE_TEXT_MAX_BYTES,
  TOKEN_BYTES,
  WELCOME_BYTES,
  type ControlMessage,
  type InputKind,
  type WelcomeMessage,
} from './control-types.js';

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

const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function fail(code: string, message: string): never {
  throw new SightlineError(code, message);
}

function exactLength(name: string, bytes: Uint8Array, expected: number): void {
  if (bytes.length < expected)
    fail('ERR_SIGHTLINE_NET_TRUNCATED', `${name} is ${bytes.length} bytes, shorter than its ${expected} bytes`);
  if (bytes.length > expected)
    fail('ERR_SIGHTLINE_NET_OVERSIZED', `${name} is ${bytes.length} bytes, longer than its ${expected} bytes`);
}

/** A copy of bytes[from, to) as a plain Uint8Array (a Node Buffer's slice would be a Buffer). */
function copy(bytes: Uint8Array, from: number, to: number): Uint8Array {
  return new Uint8Array(bytes.subarray(from, to));
}

function token(bytes: Uint8Array): Uint8Array {
  return copy(bytes, 1, 1 + TOKEN_BYTES);
}

/**
 * Decodes one control message. Reads no byte before checking the length covers it. Byte arrays in
 * the result (cookie, token, connect token) are copies, except an INPUT's payload (a view).
 *
 * @param bytes the whole datagram
 * @throws SightlineError with one of:
 *   `ERR_SIGHTLINE_NET_NOT_BYTES` (not a Uint8Array),
 *   `ERR_SIGHTLINE_NET_TRUNCATED` (empty, or shorter than its type's length),
 *   `ERR_SIGHTLINE_NET_OVERSIZED` (longer than its type's length; a HELLO's connect token or an
 *   INPUT's payload over 1,024 bytes),
 *   `ERR_SIGHTLINE_NET_UNKNOWN_TYPE` (first byte is not a control type defined here),
 *   `ERR_SIGHTLINE_NET_BAD_MAGIC` (a HELLO without the "SLTN" magic),
 *   `ERR_SIGHTLINE_NET_INPUT_KIND` (an INPUT whose kind is neither 0 nor 1),
 *   `ERR_SIGHTLINE_NET_MALFORMED` (nonzero HELLO padding, a REFUSE text length that disagrees with
 *   the datagram or is not UTF-8, a WELCOME whose layout is impossible or does not match its hash
 *   or whose maxInputBytes is over 1,024).
 */
export function decodeControl(bytes: Uint8Array): ControlMessage {
  if (!isUint8Array(bytes))
    fail('ERR_SIGHTLINE_NET_NOT_BYTES', `datagram must be a Uint8Array, received ${describe(bytes)}`);
  const len = bytes.length;
  if (len === 0) fail('ERR_SIGHTLINE_NET_TRUNCATED', 'datagram is empty');
  const type = bytes[0];
  switch (type) {
    case MSG_HELLO: {
      if (len < HELLO_MIN_BYTES) fail('ERR_SIGHTLINE_NET_TRUNCATED', `HELLO is ${len} bytes, shorter than the ${HELLO_MIN_BYTES} bytes of the shortest`);
      const magic = getU32(bytes, 1);
      if (magic !== NET_MAGIC) fail('ERR_SIGHTLINE_NET_BAD_MAGIC', `HELLO magic must be 0x${hex32(NET_MAGIC)} ("SLTN"), received 0x${hex32(magic)}`);
      const n = getU16(bytes, 31);
      if (n > CONNECT_TOKEN_MAX_BYTES)
        fail('ERR_SIGHTLINE_NET_OVERSIZED', `HELLO connect token is ${n} bytes, longer than the ${CONNECT_TOKEN_MAX_BYTES} allowed`);
      exactLength(`HELLO with a ${n}-byte connect token`, bytes, helloBytes(n));
      for (let i = HELLO_HEADER_BYTES + n; i < len; i++) {
        if (bytes[i] !== 0) fail('ERR_SIGHTLINE_NET_MALFORMED', `HELLO padding must be zero, byte ${i} is ${bytes[i]}`);
      }
      let cookie: Uint8Array | null = null;
      for (let i = 15; i < 15 + COOKIE_BYTES; i++) {
        if (bytes[i] !== 0) {
          cookie = copy(bytes, 15, 15 + COOKIE_BYTES);
          break;
        }
      }
      return {
        type: MSG_HELLO,
        netVersion: bytes[5],
        version: bytes[6],
        protocolHash: getU32(bytes, 7),
        nonce: getU32(bytes, 11),
        cookie,
        connectToken: copy(bytes, HELLO_HEADER_BYTES, HELLO_HEADER_BYTES + n),
      };
    }
    case MSG_CHALLENGE:
      exactLength('CHALLENGE', bytes, CHALLENGE_BYTES);
      return { type: MSG_CHALLENGE, nonce: getU32(bytes, 1), cookie: copy(bytes, 5, 5 + COOKIE_BYTES) };
    case MSG_WELCOME: {
      exactLength('WELCOME', bytes, WELCOME_BYTES);
      const msg: WelcomeMessage = {
        type: MSG_WELCOME,
        nonce: getU32(bytes, 1),
        token: copy(bytes, 5, 5 + TOKEN_BYTES),
        avatar: getU32(bytes, 13),
        protocolHash: getU32(bytes, 17),
        regionRaw: getU32(bytes, 21),
        verticalRaw: getU32(bytes, 25),
        quantShift: bytes[29],
        payloadBytes: getU16(bytes, 30),
        tickMicros: getU32(bytes, 32),
        maxInputBytes: getU16(bytes, 36),
      };
      const problem = layoutProblem(msg.protocolHash, msg.regionRaw, msg.verticalRaw, msg.quantShift);
      if (problem !== undefined) fail('ERR_SIGHTLINE_NET_MALFORMED', `WELCOME layout: ${problem}`);
      if (msg.maxInputBytes > INPUT_MAX_BYTES)
        fail('ERR_SIGHTLINE_NET_MALFORMED', `WELCOME maxInputBytes must be at most ${INPUT_MAX_BYTES}, received ${msg.maxInputBytes}`);
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
      return { type: MSG_ACK, token: token(bytes), ack: getU16(bytes, 9), ackBits: getU32(bytes, 11) };
    case MSG_BYE:
      exactLength('BYE', bytes, BYE_BYTES);
      return { type: MSG_BYE, token: token(bytes), reason: bytes[9] };
    case MSG_PING:
      exactLength('PING', bytes, PING_BYTES);
      return { type: MSG_PING, token: token(bytes) };
    case MSG_INPUT: {
      if (len < INPUT_HEADER_BYTES) fail('ERR_SIGHTLINE_NET_TRUNCATED', `INPUT is ${len} bytes, shorter than its ${INPUT_HEADER_BYTES}-byte header`);
      if (len > INPUT_HEADER_BYTES + INPUT_MAX_BYTES)
        fail('ERR_SIGHTLINE_NET_OVERSIZED', `INPUT payload is ${len - INPUT_HEADER_BYTES} bytes, longer than the ${INPUT_MAX_BYTES} allowed`);
      const kind = bytes[9];
      if (kind > 1) fail('ERR_SIGHTLINE_NET_INPUT_KIND', `INPUT kind must be 0 (unreliable) or 1 (reliable), received ${kind}`);
      return { type: MSG_INPUT, token: token(bytes), kind: kind as InputKind, sequence: getU16(bytes, 10), payload: bytes.subarray(INPUT_HEADER_BYTES) };
    }
    default:
      fail('ERR_SIGHTLINE_NET_UNKNOWN_TYPE', `datagram type 0x${type.toString(16).padStart(2, '0')} is not a control message`);
  }
}

/** {@link decodeControl}, or undefined for a malformed datagram (the caller counts it). */
export function tryDecodeControl(bytes: Uint8Array): ControlMessage | undefined {
  try {
    return decodeControl(bytes);
  } catch {
    return undefined;
  }
}
