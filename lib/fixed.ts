// Fixed-point positions: the one place in TypeScript that converts between meters and raw units.
// Mirrors native/core/fixed.h. Browser-safe: imports nothing from Node.
import { SightlineError, describe } from './errors.js';

/** Fractional bits of a raw coordinate: a raw value is an Int32 with 10 fractional bits. */
export const FRAC_BITS = 10;

/** Raw units per meter: 2^FRAC_BITS = 1024, so one raw unit is 1/1024 m (about 0.98 mm). */
export const RAW_PER_METER = 1 << FRAC_BITS;

/**
 * Rounds to the nearest integer, ties away from zero (C++ `std::llround`).
 *
 * `Math.round` breaks ties toward +Infinity (`Math.round(-2.5) === -2`); this returns -3.
 * Never returns -0. NaN and ±Infinity are returned unchanged.
 */
export function roundHalfAwayFromZero(value: number): number {
  if (value < 0) {
    const r = -Math.round(-value);
    return r === 0 ? 0 : r;
  }
  // Math.round is exact for positive values: ties go up, i.e. away from zero.
  return Math.round(value) + 0;
}

/**
 * Meters → raw fixed point, unchecked: `std::llround(meters * 1024)`, exactly as the native
 * engine's `metersToRaw`. Not clamped; NaN and ±Infinity pass through. For the library's own use
 * on values it has checked already; the public conversion is {@link toRaw}.
 */
export function metersToRaw(meters: number): number {
  return roundHalfAwayFromZero(meters * RAW_PER_METER);
}

/** The largest distance a raw coordinate can hold: (2^31 − 1) / 1024 m, about 2,097,152 m. */
const MAX_RAW = 2147483647;

/**
 * Meters → raw fixed point (Int32 with 10 fractional bits; 1 m = 1024 raw units), for writing
 * into `world.positions`: `x[slot] = (x[slot] ?? 0) + toRaw(1.5)`.
 *
 * Rounded to nearest, ties away from zero, exactly as the native engine's `metersToRaw`
 * (`std::llround(meters * 1024)`).
 *
 * @throws SightlineError `ERR_SIGHTLINE_INVALID_ARGUMENT` when `meters` is not a finite number
 *   (undefined, a string, NaN, ±Infinity...) or its raw value is outside the Int32 range
 *   (±2,097,152 m): written into an `Int32Array`, such a value would silently become 0 or wrap.
 */
export function toRaw(meters: number): number {
  if (typeof meters !== 'number' || !Number.isFinite(meters)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `toRaw: meters must be a finite number, received ${describe(meters)}`);
  }
  const raw = roundHalfAwayFromZero(meters * RAW_PER_METER);
  if (raw > MAX_RAW || raw < -MAX_RAW - 1) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `toRaw: meters must be from -2097152 m to just under 2097152 m (the Int32 range of raw units: 2^31 - 1 raw is 2097151.999 m), received ${describe(meters)}`,
    );
  }
  return raw;
}

/**
 * Raw fixed point (1024 raw units per meter) → meters. Exact for every Int32.
 *
 * @throws SightlineError `ERR_SIGHTLINE_INVALID_ARGUMENT` when `raw` is not a finite number.
 */
export function toMeters(raw: number): number {
  if (typeof raw !== 'number' || !Number.isFinite(raw)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `toMeters: raw must be a finite number, received ${describe(raw)}`);
  }
  return raw / RAW_PER_METER;
}
