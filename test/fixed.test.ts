import { describe, it, expect } from 'vitest';

import { FRAC_BITS, RAW_PER_METER, metersToRaw, roundHalfAwayFromZero, toMeters, toRaw } from '../lib/fixed.js';

describe('fixed point', () => {
  it('has 10 fractional bits', () => {
    expect(FRAC_BITS).toBe(10);
    expect(RAW_PER_METER).toBe(1024);
  });

  it('converts whole and fractional meters', () => {
    expect(toRaw(0)).toBe(0);
    expect(toRaw(1)).toBe(1024);
    expect(toRaw(-1)).toBe(-1024);
    expect(toRaw(4096)).toBe(4194304);
    expect(toRaw(0.5)).toBe(512);
    expect(toRaw(1 / 1024)).toBe(1);
    expect(toRaw(-512)).toBe(-524288);
    expect(toRaw(511.9990234375)).toBe(524287);
    expect(toRaw(0.001)).toBe(1);
    expect(toRaw(0.0004)).toBe(0);
  });

  it('rounds halves away from zero', () => {
    expect(toRaw(0.5 / 1024)).toBe(1);
    expect(toRaw(-0.5 / 1024)).toBe(-1);
    expect(toRaw(1.5 / 1024)).toBe(2);
    expect(toRaw(-1.5 / 1024)).toBe(-2);
    expect(toRaw(2.5 / 1024)).toBe(3);
    expect(toRaw(-2.5 / 1024)).toBe(-3);
    expect(toRaw(1000.5 / 1024)).toBe(1001);
    expect(toRaw(-1000.5 / 1024)).toBe(-1001);
    expect(roundHalfAwayFromZero(-2.5)).toBe(-3);
    expect(roundHalfAwayFromZero(2.5)).toBe(3);
    expect(roundHalfAwayFromZero(-0.5)).toBe(-1);
    expect(roundHalfAwayFromZero(0.5)).toBe(1);
  });

  it('rounds non-halves to nearest', () => {
    expect(roundHalfAwayFromZero(2.4999999999999996)).toBe(2);
    expect(roundHalfAwayFromZero(-2.4999999999999996)).toBe(-2);
    expect(roundHalfAwayFromZero(0.49999999999999994)).toBe(0);
    expect(roundHalfAwayFromZero(-0.49999999999999994)).toBe(0);
    expect(roundHalfAwayFromZero(-2.6)).toBe(-3);
    expect(roundHalfAwayFromZero(2 ** 52 + 1)).toBe(2 ** 52 + 1);
    expect(roundHalfAwayFromZero(-(2 ** 52) - 1)).toBe(-(2 ** 52) - 1);
  });

  it('never returns -0', () => {
    expect(Object.is(toRaw(-0), 0)).toBe(true);
    expect(Object.is(toRaw(-0.0001), 0)).toBe(true);
    expect(Object.is(roundHalfAwayFromZero(-0.2), 0)).toBe(true);
  });

  it('converts raw to meters exactly', () => {
    expect(toMeters(1024)).toBe(1);
    expect(toMeters(1)).toBe(1 / 1024);
    expect(toMeters(-524288)).toBe(-512);
    expect(toMeters(524287)).toBe(511.9990234375);
    for (const r of [0, 1, -1, 12345, -98765, 2 ** 31 - 1, -(2 ** 31)]) expect(toRaw(toMeters(r))).toBe(r);
  });

  it('refuses what is not a finite number, and meters outside the Int32 range of raw units, with a coded error', () => {
    const invalid = expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' });
    for (const bad of [undefined, null, '3', [2], {}, NaN, Infinity, -Infinity, 10n]) {
      expect(() => toRaw(bad as never), String(bad)).toThrow(invalid);
      expect(() => toMeters(bad as never), String(bad)).toThrow(invalid);
    }
    expect(() => toRaw(undefined as never)).toThrow(/toRaw: meters must be a finite number, received undefined/);
    // The edges: (2^31 - 1) / 1024 and -2^31 / 1024 m are the last meters a raw Int32 holds.
    expect(toRaw((2 ** 31 - 1) / 1024)).toBe(2 ** 31 - 1);
    expect(toRaw(-(2 ** 31) / 1024)).toBe(-(2 ** 31));
    for (const far of [2 ** 31 / 1024, (-(2 ** 31) - 1) / 1024, 1e300]) expect(() => toRaw(far), String(far)).toThrow(/from -2097152 m to just under 2097152 m/);
    // The library's own unchecked conversion agrees wherever toRaw answers, and passes the rest through.
    for (const m of [0, 1.5, -2.5 / 1024, 4096, 1e-9]) expect(metersToRaw(m)).toBe(toRaw(m));
    expect(metersToRaw(NaN)).toBeNaN();
    expect(toMeters(2 ** 40)).toBe(2 ** 30);
  });
});
