// Fixed-point positions: the one place in TypeScript that converts between meters and raw units.
// Mirrors native/core/fixed.h. Browser-safe: imports nothing from Node.

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
 * Meters → raw fixed point (Int32 with 10 fractional bits; 1 m = 1024 raw units).
 *
 * Rounded to nearest, ties away from zero, exactly as the native engine's `metersToRaw`
 * (`std::llround(meters * 1024)`). The result is not clamped to the Int32 range, and NaN and
 * ±Infinity pass through unchanged: this is a conversion, not a check (the API methods taking
 * meters refuse them with coded errors).
 */
export function toRaw(meters: number): number {
  return roundHalfAwayFromZero(meters * RAW_PER_METER);
}

/** Raw fixed point (1024 raw units per meter) → meters. Exact for every Int32. */
export function toMeters(raw: number): number {
  return raw / RAW_PER_METER;
}
