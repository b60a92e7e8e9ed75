// Pieces the UDP server and client share: address resolution without an event-loop turn, and
// option checks.
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import { SightlineError, describe, isPlainObject } from '../errors.js';

/**
 * dgram `lookup` that answers IP literals synchronously (the default defers every send to the
 * next tick) and resolves names with dns.lookup.
 */
export function lookupLiteral(
  hostname: string,
  options: LookupOneOptions | number,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void {
  const family = isIP(hostname);
  if (family !== 0) {
    callback(null, hostname, family);
    return;
  }
  const opts: LookupOneOptions = typeof options === 'number' ? { family: options } : options;
  dnsLookup(hostname, opts, callback);
}

/** `address:port`, with an IPv6 address in brackets. */
export function endpointKey(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** Checks an integer option; returns it (or the default when undefined). */
export function intOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  const v = value === undefined ? fallback : value;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be an integer from ${min} to ${max}, received ${describe(v)}`);
  }
  return v;
}

/** Milliseconds on a monotonic clock. */
export function nowMs(): number {
  return performance.now();
}

/**
 * The options of a UDP server or client, which double as its listener: the callbacks named in
 * `callbacks` must be functions where given (own or inherited). A plain object (an object literal)
 * may hold no other key than those in `valid`, so a misspelt option is an error rather than a
 * silently kept default; an instance of a class (a listener object with fields of its own) is not
 * held to that.
 * @throws ERR_SIGHTLINE_UNKNOWN_OPTION, ERR_SIGHTLINE_INVALID_ARGUMENT (a callback that is not a function).
 */
export function checkListenerOptions(what: string, options: object, valid: readonly string[], callbacks: readonly string[]): void {
  if (isPlainObject(options)) {
    for (const key of Object.keys(options)) {
      if (!valid.includes(key)) {
        throw new SightlineError('ERR_SIGHTLINE_UNKNOWN_OPTION', `unknown ${what} option ${describe(key)}; valid options are ${valid.join(', ')}`);
      }
    }
  }
  for (const key of callbacks) {
    const fn = (options as Record<string, unknown>)[key];
    if (fn !== undefined && typeof fn !== 'function') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${what} option ${key} must be a function, received ${describe(fn)}`);
    }
  }
}
