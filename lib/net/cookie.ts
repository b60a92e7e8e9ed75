// Stateless cookies and session tokens (docs/transport.md, "Sessions"). A server answers a HELLO
// without a valid cookie with one bound to the sender's address, port and nonce under a rotating
// secret, and keeps nothing; a HELLO that brings it back proves the sender receives at that
// address. Tokens are 64 random bits a session's every message carries.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { COOKIE_BYTES, TOKEN_BYTES } from './control-types.js';
import { getU32 } from './bytes.js';

/** Bytes of each server secret (HMAC-SHA-256 key). */
const SECRET_BYTES = 32;

/** A session token and its two little-endian u32 words (lo = bytes 0..3), for cheap comparison. */
export interface SessionToken {
  readonly bytes: Uint8Array;
  readonly lo: number;
  readonly hi: number;
}

/** A fresh session token: {@link TOKEN_BYTES} bytes from node:crypto's CSPRNG. */
export function newToken(): SessionToken {
  const bytes = new Uint8Array(randomBytes(TOKEN_BYTES));
  return { bytes, lo: getU32(bytes, 0), hi: getU32(bytes, 4) };
}

const COOKIE_FIELDS = Buffer.alloc(10);

/**
 * The cookie for a HELLO from address:port with this nonce and protocol hash under `secret`: the
 * first 16 bytes of HMAC-SHA-256(secret, "sightline-cookie-2" ‖ 0x00 ‖ address (UTF-8, as the
 * socket reports it) ‖ 0x00 ‖ port (u16 LE) ‖ nonce (u32 LE) ‖ protocolHash (u32 LE)).
 */
export function cookieFor(secret: Uint8Array, address: string, port: number, nonce: number, hash: number): Buffer {
  const f = COOKIE_FIELDS;
  f.writeUInt16LE(port & 0xffff, 0);
  f.writeUInt32LE(nonce >>> 0, 2);
  f.writeUInt32LE(hash >>> 0, 6);
  return createHmac('sha256', secret).update('sightline-cookie-2\0').update(address).update('\0').update(f).digest().subarray(0, COOKIE_BYTES);
}

/**
 * Issues and checks cookies ({@link cookieFor}). The secret rotates every `lifetimeMs`; a cookie
 * is accepted under the current secret or the one before, so it stays valid for `lifetimeMs` to
 * 2 × `lifetimeMs` after it was issued.
 */
export class CookieJar {
  readonly #lifetimeMs: number;
  #current: Buffer = randomBytes(SECRET_BYTES);
  #previous: Buffer = randomBytes(SECRET_BYTES);
  readonly #start: number;
  #epoch = 0;

  constructor(lifetimeMs: number, now: number) {
    this.#lifetimeMs = lifetimeMs;
    this.#start = now;
  }

  // Secrets change at whole periods since the jar was made, so a cookie issued in period k is
  // accepted in periods k and k + 1 only.
  #rotate(now: number): void {
    const epoch = Math.floor((now - this.#start) / this.#lifetimeMs);
    const step = epoch - this.#epoch;
    if (step <= 0) return;
    this.#previous = step === 1 ? this.#current : randomBytes(SECRET_BYTES);
    this.#current = randomBytes(SECRET_BYTES);
    this.#epoch = epoch;
  }

  /** The cookie for a HELLO from address:port with this nonce and protocol hash. */
  issue(address: string, port: number, nonce: number, hash: number, now: number): Uint8Array {
    this.#rotate(now);
    return new Uint8Array(cookieFor(this.#current, address, port, nonce, hash));
  }

  /** Whether cookie is one this jar issued (under the current or the previous secret) for these values. */
  verify(cookie: Uint8Array, address: string, port: number, nonce: number, hash: number, now: number): boolean {
    this.#rotate(now);
    if (cookie.length !== COOKIE_BYTES) return false;
    return (
      timingSafeEqual(cookie, cookieFor(this.#current, address, port, nonce, hash)) ||
      timingSafeEqual(cookie, cookieFor(this.#previous, address, port, nonce, hash))
    );
  }
}
