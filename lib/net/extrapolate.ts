// Dead reckoning on the client: where a held entity probably is now, from its two newest updates.
// Browser-safe: imports nothing from Node.
import { SightlineError, describe } from '../errors.js';
import { RAW_PER_METER } from '../fixed.js';

/**
 * Options of {@link ClientWorld}'s extrapolation (`new ClientWorld(layout, { extrapolate })`).
 * `true` takes every default.
 */
export interface ExtrapolationOptions {
  /**
   * Furthest ahead of an entity's newest update a prediction goes, in server ticks: past it the
   * prediction stays where this horizon left it. 0 to 10,000. Default 20 (a second at 20 Hz): a
   * guess, not a measurement; the quality harness (`sightline quality`) reports the error it gives.
   */
  maxTicks?: number;
  /**
   * Largest believable move per tick, m (the world's maxSpeed / tickHz is a good value): two
   * updates further apart than this per tick are a jump (a teleport), not motion, and give no
   * velocity. > 0. Default Infinity (every move is motion).
   */
  maxStep?: number;
}

/** Options of {@link ExtrapolationOptions}, validated and in raw units. */
export interface Extrapolation {
  readonly maxTicks: number;
  /** maxStep in raw units per tick (Infinity when unbounded). */
  readonly maxStepRaw: number;
}

/**
 * Reads `extrapolate` of ClientWorldOptions: undefined or false (off: null), true (the defaults)
 * or an {@link ExtrapolationOptions} object.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT for anything else, or a field out of range.
 */
export function readExtrapolation(value: unknown): Extrapolation | null {
  if (value === undefined || value === false) return null;
  const o = (value === true ? {} : value) as ExtrapolationOptions;
  if (typeof o !== 'object' || o === null) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `extrapolate must be true, false or { maxTicks, maxStep }, received ${describe(value)}`);
  }
  for (const k of Object.keys(o)) {
    if (k !== 'maxTicks' && k !== 'maxStep') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `extrapolate has no option ${JSON.stringify(k)} (valid: maxTicks, maxStep)`);
    }
  }
  const maxTicks = o.maxTicks ?? 20;
  if (typeof maxTicks !== 'number' || !(maxTicks >= 0 && maxTicks <= 10_000)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `extrapolate.maxTicks must be a number from 0 to 10000 (ticks), received ${describe(maxTicks)}`);
  }
  const maxStep = o.maxStep ?? Infinity;
  if (typeof maxStep !== 'number' || !(maxStep > 0)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `extrapolate.maxStep must be a number > 0 (m per tick) or Infinity, received ${describe(maxStep)}`);
  }
  return { maxTicks, maxStepRaw: maxStep * RAW_PER_METER };
}

/**
 * One axis of a prediction: the position at server tick `at` of an entity whose newest update put
 * it at `last` on tick `lastTick` and the one before at `prev` on tick `prevTick` (raw units;
 * prevTick < 0: no earlier update). Linear: last + (last − prev) × min(at − lastTick, maxTicks) /
 * (lastTick − prevTick). No prediction (last) without an earlier update, for `at` not after
 * lastTick, or when `jump` (the caller found the two updates too far apart: see
 * {@link isJump}). Fractional: the result is not rounded.
 */
export function extrapolateAxis(prev: number, prevTick: number, last: number, lastTick: number, at: number, maxTicks: number, jump: boolean): number {
  if (jump || prevTick < 0 || lastTick <= prevTick) return last;
  const ahead = Math.min(at - lastTick, maxTicks);
  if (!(ahead > 0)) return last;
  return last + ((last - prev) * ahead) / (lastTick - prevTick);
}

/**
 * Whether two updates of one entity (raw positions, `ticks` server ticks apart) moved it further
 * than maxStepRaw per tick on some axis: a jump, not motion.
 */
export function isJump(dx: number, dy: number, dz: number, ticks: number, maxStepRaw: number): boolean {
  if (maxStepRaw === Infinity) return false;
  const limit = maxStepRaw * ticks;
  return Math.abs(dx) > limit || Math.abs(dy) > limit || Math.abs(dz) > limit;
}
