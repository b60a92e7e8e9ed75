// The arguments of the interest controls (per-viewer radius, runtime viewer settings, visibility
// groups, priority weights and boosts), checked before they reach the engine, which checks them
// again with the same codes.
import type { WorldConfig } from './config.js';
import { SightlineError, describe } from './errors.js';
import { metersToRaw } from './fixed.js';

/** Field bits of the engine's viewer change (native/core/world.h, ViewerChange::Field). */
export const CHANGE = Object.freeze({ sendPeriod: 1, payloadBytes: 2, viewRadius: 4, groups: 8, boost: 16 });

/** Every group: the default groups of an entity and of a viewer. */
export const ALL_GROUPS = 0xffffffff;
/** The largest priority weight of an entity, and the largest boost factor of a viewer. */
export const MAX_WEIGHT = 16;
/** The most entities a viewer's boost set holds. */
export const MAX_BOOSTED = 64;

// A distance option in meters → raw units, from 1 raw unit (after rounding) to maxRaw.
function distanceRaw(name: string, meters: unknown, maxRaw: number, upTo: string): number {
  const raw = typeof meters === 'number' && Number.isFinite(meters) ? metersToRaw(meters) : NaN;
  if (!(raw >= 1 && raw <= maxRaw)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `${name} must be a number of meters from 1/1024 to ${upTo}, received ${describe(meters)}`);
  }
  return raw;
}

/**
 * A view radius in meters → raw units: more than 0 and at most the config's viewRadius (after
 * rounding to raw units, at least 1).
 * @throws ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
 */
export function viewRadiusRaw(config: WorldConfig, meters: unknown): number {
  return distanceRaw('viewRadius', meters, config.viewRadiusRaw, `the config's viewRadius (${config.input.viewRadius})`);
}

/**
 * A teleport distance in meters → raw units: more than 0 and at most the config's regionSize
 * (after rounding to raw units, at least 1).
 * @throws ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
 */
export function teleportDistanceRaw(config: WorldConfig, meters: unknown): number {
  return distanceRaw('teleportDistance', meters, config.regionRaw, `the config's regionSize (${config.input.regionSize})`);
}

/** A viewer option that must be a number (the engine checks its range). @throws ERR_SIGHTLINE_INVALID_VIEWER_OPTION. */
export function viewerNumber(name: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `${name} must be a number, received ${describe(value)}`);
  }
  return value;
}

/**
 * A visibility-groups mask: an integer from -2^31 to 2^32 - 1, so that JavaScript's bit operators
 * (`1 << 31`, `~0`) may build it; returned as the unsigned 32-bit value.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT.
 */
export function groupsMask(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value > 0xffffffff) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `${name} must be an integer mask of 32 groups (-2^31 to 2^32 - 1, as bit operators make them), received ${describe(value)}`,
    );
  }
  return value >>> 0;
}

/** A priority weight: an integer from 1 to 16. @throws ERR_SIGHTLINE_INVALID_PRIORITY. */
export function priorityWeight(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_WEIGHT) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_PRIORITY', `a priority weight must be an integer from 1 to ${MAX_WEIGHT}, received ${describe(value)}`);
  }
  return value;
}

/**
 * A boost: at most 64 distinct entity ids (an array or iterable of integers 0 to 2^32 - 1;
 * repeats count once) and a factor, an integer from 1 to 16. Returns the distinct ids as a
 * Uint32Array.
 * @throws ERR_SIGHTLINE_INVALID_VIEWER_OPTION (factor, or too many ids), ERR_SIGHTLINE_INVALID_ARGUMENT (ids).
 */
export function boostSet(entities: unknown, factor: unknown): Uint32Array {
  if (typeof factor !== 'number' || !Number.isInteger(factor) || factor < 1 || factor > MAX_WEIGHT) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `a boost factor must be an integer from 1 to ${MAX_WEIGHT}, received ${describe(factor)}`);
  }
  if (typeof entities !== 'object' || entities === null || typeof (entities as Iterable<unknown>)[Symbol.iterator] !== 'function') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `the boosted entities must be an array of entity ids, received ${describe(entities)}`);
  }
  // A set: repeats count once, towards the 64 as well.
  const ids = new Set<number>();
  for (const id of entities as Iterable<unknown>) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `a boosted entity must be an integer entity id from 0 to 4294967295, received ${describe(id)}`);
    }
    ids.add(id);
    if (ids.size > MAX_BOOSTED) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `a boost set holds at most ${MAX_BOOSTED} distinct entities, received more than that`);
    }
  }
  return Uint32Array.from(ids);
}
