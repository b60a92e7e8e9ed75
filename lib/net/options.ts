// Option checks shared by the transports and the client world, and their clock.
// Browser-safe: imports nothing from Node.
import { SightlineError, describe, isPlainObject } from '../errors.js';

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
 * Options that double as a listener (a server's, a client's, a link's): an ordinary object (not
 * an array, a Date, a Map or another built-in that keeps its data elsewhere), whose callbacks
 * named in `callbacks` are functions where given (own or inherited). A plain object (an object
 * literal) may hold no other key than those in `valid`, so a misspelt option is an error rather
 * than a silently kept default; an instance of a class (a listener object with fields of its own)
 * is not held to that.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (not an ordinary object, a callback that is not a
 *   function), ERR_SIGHTLINE_UNKNOWN_OPTION (a key of a plain object that is not in `valid`).
 */
export function checkListenerOptions(what: string, options: unknown, valid: readonly string[], callbacks: readonly string[]): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options) || Object.prototype.toString.call(options) !== '[object Object]') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${what} options must be an object, received ${describe(options)}`);
  }
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
