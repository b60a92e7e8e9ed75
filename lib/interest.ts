// The arguments of the interest controls (per-viewer radius, runtime viewer settings), checked
// before they reach the engine, which checks them again with the same codes.
import type { WorldConfig } from './config.js';
import { SightlineError, describe } from './errors.js';
import { metersToRaw } from './fixed.js';

/** Field bits of the engine's viewer change (native/core/world.h, ViewerChange::Field). */
export const CHANGE = Object.freeze({ sendPeriod: 1, payloadBytes: 2, viewRadius: 4 });

/**
 * A view radius in meters → raw units: more than 0 and at most the config's viewRadius (after
 * rounding to raw units, at least 1).
 * @throws ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
 */
export function viewRadiusRaw(config: WorldConfig, meters: unknown): number {
  const raw = typeof meters === 'number' && Number.isFinite(meters) ? metersToRaw(meters) : NaN;
  if (!(raw >= 1 && raw <= config.viewRadiusRaw)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_VIEWER_OPTION',
      `viewRadius must be a number of meters from 1/1024 to the config's viewRadius (${config.input.viewRadius}), received ${describe(meters)}`,
    );
  }
  return raw;
}

/** A viewer option that must be a number (the engine checks its range). @throws ERR_SIGHTLINE_INVALID_VIEWER_OPTION. */
export function viewerNumber(name: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `${name} must be a number, received ${describe(value)}`);
  }
  return value;
}
