// Little-endian field access and argument checks shared by the control-message encoders and
// decoders. Browser-safe: imports nothing from Node.
import { SightlineError, describe, isUint8Array } from '../errors.js';
import { TOKEN_BYTES } from './control-types.js';

export function putU16(b: Uint8Array, i: number, v: number): void {
  b[i] = v & 0xff;
  b[i + 1] = (v >>> 8) & 0xff;
}

export function putU32(b: Uint8Array, i: number, v: number): void {
  b[i] = v & 0xff;
  b[i + 1] = (v >>> 8) & 0xff;
  b[i + 2] = (v >>> 16) & 0xff;
  b[i + 3] = (v >>> 24) & 0xff;
}

export function getU16(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8);
}

export function getU32(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

/** A u32 as 8 lowercase hex digits. */
export function hex32(v: number): string {
  return (v >>> 0).toString(16).padStart(8, '0');
}

/** Throws ERR_SIGHTLINE_INVALID_ARGUMENT unless value is an object. */
export function checkFields(name: string, value: unknown): void {
  if (typeof value !== 'object' || value === null) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be an object, received ${describe(value)}`);
  }
}

/** Returns value when it is an integer from 0 to max; throws ERR_SIGHTLINE_INVALID_ARGUMENT otherwise. */
export function checkUint(name: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be an integer from 0 to ${max}, received ${describe(value)}`);
  }
  return value;
}

/** Returns value when it is a Uint8Array of exactly `length` bytes; throws ERR_SIGHTLINE_INVALID_ARGUMENT otherwise. */
export function checkBytes(name: string, value: unknown, length: number): Uint8Array {
  if (!isUint8Array(value) || value.length !== length) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `${name} must be a Uint8Array of ${length} bytes, received ${describe(value)}`,
    );
  }
  return value;
}

/** Throws ERR_SIGHTLINE_INVALID_ARGUMENT unless token is a session token ({@link TOKEN_BYTES} bytes). */
export function checkToken(token: unknown): Uint8Array {
  return checkBytes('token', token, TOKEN_BYTES);
}

/** Whether bytes[at .. at + 8) equal the session token held as two u32 words (lo = bytes 0..3). */
export function tokenMatches(bytes: Uint8Array, at: number, lo: number, hi: number): boolean {
  return getU32(bytes, at) === lo && getU32(bytes, at + 4) === hi;
}
