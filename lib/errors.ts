// Errors raised by sightline: a stable machine-readable code plus a message naming the received
// value and what is valid. Browser-safe: imports nothing from Node.

/**
 * An error raised by sightline.
 *
 * `code` is a stable string of the form `ERR_SIGHTLINE_…`; match on it rather than on the message.
 * Codes raised by the TypeScript layer:
 *
 * - `ERR_SIGHTLINE_INVALID_ARGUMENT`: an argument of the wrong kind (e.g. a config that is not an object).
 * - `ERR_SIGHTLINE_UNKNOWN_OPTION`: an options object with a key the call does not define.
 * - `ERR_SIGHTLINE_CONFIG_*`: `WorldConfig.build` (the same codes the native engine raises
 *   for the same input; see lib/config.ts).
 * - `ERR_SIGHTLINE_PACKET_*`: `decodePacket` / `decodePacketRaw` (see lib/decode.ts).
 *
 * The native engine raises the codes each `World` method documents, and three more:
 * `ERR_SIGHTLINE_OUT_OF_MEMORY` (an allocation failed; the call changed nothing),
 * `ERR_SIGHTLINE_THREADS_UNAVAILABLE` (`new World` could not start its pass threads) and
 * `ERR_SIGHTLINE_INTERNAL` (a pass failed otherwise: a defect).
 */
export class SightlineError extends Error {
  /** Stable error code, `ERR_SIGHTLINE_…`. */
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

Object.defineProperty(SightlineError.prototype, 'name', {
  value: 'SightlineError',
  writable: true,
  enumerable: false,
  configurable: true,
});

// Longest string rendered in full by describe(); longer ones are cut and marked with an ellipsis.
const MAX_STRING_CHARS = 64;

/**
 * Renders a received value for an error message (exported as `describeValue`).
 *
 * Numbers as JavaScript prints them (`NaN`, `Infinity`, `-Infinity`, `-0`), strings quoted,
 * bigints with an `n` suffix, `null` / `undefined` / booleans by name, arrays and typed arrays
 * by kind and length, other objects by type (`an object`, `an instance of Map`).
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint':
      return `${value}n`;
    case 'string': {
      const cut = value.length > MAX_STRING_CHARS ? `${value.slice(0, MAX_STRING_CHARS)}…` : value;
      return JSON.stringify(cut);
    }
    case 'boolean':
      return String(value);
    case 'undefined':
      return 'undefined';
    case 'symbol':
      return value.toString();
    case 'function':
      return value.name ? `function ${value.name}` : 'a function';
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  if (ArrayBuffer.isView(value)) {
    if (tag === 'DataView') return `a DataView of ${value.byteLength} bytes`;
    return `${/^[AEIOU]/.test(tag) ? 'an' : 'a'} ${tag} of length ${(value as unknown as ArrayLike<unknown>).length}`;
  }
  if (tag === 'ArrayBuffer') return `an ArrayBuffer of ${(value as ArrayBuffer).byteLength} bytes`;
  let name: unknown;
  try {
    const proto: unknown = Object.getPrototypeOf(value);
    name = proto === null ? undefined : (proto as { constructor?: { name?: unknown } }).constructor?.name;
  } catch {
    name = undefined;
  }
  if (typeof name !== 'string' || name === '' || name === 'Object') return 'an object';
  return `an instance of ${name}`;
}

/** @internal An object literal (or Object.create(null)): its prototype is null or an Object.prototype (of any realm). */
export function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Reads an options argument the way every sightline call does: `undefined` or `null` is every
 * default; otherwise a plain object whose own keys are all in `valid`. Returns its own keys' values.
 * For tools and games that validate their own options in sightline's style.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (not a plain object, or a valid key that is inherited
 *   rather than own), ERR_SIGHTLINE_UNKNOWN_OPTION (a key not in `valid`; the message lists them).
 */
export function readOptions(what: string, options: unknown, valid: readonly string[]): Record<string, unknown> {
  if (options === undefined || options === null) return {};
  // An ordinary object: not an array, nor a Map, a Date or another built-in that holds its data elsewhere.
  if (typeof options !== 'object' || Array.isArray(options) || Object.prototype.toString.call(options) !== '[object Object]') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${what} options must be an object or undefined, received ${describe(options)}`);
  }
  const own: Record<string, unknown> = {};
  for (const key of Object.keys(options)) {
    if (!valid.includes(key)) {
      throw new SightlineError(
        'ERR_SIGHTLINE_UNKNOWN_OPTION',
        `unknown ${what} option ${describe(key)}; valid options are ${valid.join(', ')}`,
      );
    }
    own[key] = (options as Record<string, unknown>)[key];
  }
  // Own keys only, and an inherited one is refused (as WorldConfig.build does): it would be read
  // by some code paths and not others.
  for (const key of valid) {
    if (!Object.prototype.hasOwnProperty.call(options, key) && key in options) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `${what} option ${key} is inherited, not an own property of the options; only own properties are read (make it one: { ${key}: options.${key}, ... }; a spread { ...options } leaves out getters of a class)`,
      );
    }
  }
  return own;
}

// %TypedArray%.prototype[Symbol.toStringTag]: a getter that reads the internal type of a real
// typed array (any realm, Buffer included) and returns undefined for anything else, unlike
// Object.prototype.toString, which an object's own Symbol.toStringTag can fool.
const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype) as object, Symbol.toStringTag)!
  .get as (this: unknown) => string | undefined;

/** @internal Whether value is a real Uint8Array (a Node Buffer is one), from any realm. */
export function isUint8Array(value: unknown): value is Uint8Array {
  return typedArrayTag.call(value) === 'Uint8Array';
}
