// setViewerSettings' arguments (world-viewers.ts): many viewers' send periods, packet sizes and
// view radii, read into the typed arrays the engine's batched change takes.
import type { WorldConfig } from './config.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { toMeters } from './fixed.js';
import { CHANGE, viewRadiusRaw } from './interest.js';

/** Settings for many viewers: element i of each array given is viewer i's (see World.setViewerSettings). */
export interface ViewerSettingsBatch {
  /** Send periods, ticks: integers from 1 to 65535. */
  sendPeriod?: ArrayLike<number>;
  /** Packet sizes, bytes, header included: integers from config.minPayloadBytes (28 + eventReserveBytes, more with fields or attributes) to 65,507. */
  payloadBytes?: ArrayLike<number>;
  /** View radii, meters: more than 0, at most the config's viewRadius. */
  viewRadius?: ArrayLike<number>;
}

/** The engine's arguments: what each viewer changes (CHANGE bits) and the values; viewRadius raw, and in `meters` the same radius in meters (rounded to raw units, as the engine holds it). */
export interface ReadBatch {
  what: Uint8Array;
  sendPeriod: Float64Array;
  payloadBytes: Float64Array;
  viewRadius: Float64Array;
  meters: Float64Array;
}

const FIELDS = ['sendPeriod', 'payloadBytes', 'viewRadius'] as const;

/**
 * Reads and checks setViewerSettings' arguments (the engine checks the values' ranges, viewers
 * and output room).
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT, ERR_SIGHTLINE_UNKNOWN_OPTION, ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
 */
export function readViewerBatch(config: WorldConfig, viewers: unknown, settings: unknown): ReadBatch {
  if (!(viewers instanceof Uint32Array)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `viewers must be a Uint32Array of viewer ids, received ${describe(viewers)}`);
  }
  if (settings === undefined || settings === null) throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `setViewerSettings needs a settings object, received ${describe(settings)}`);
  const o = readOptions('setViewerSettings', settings, FIELDS);
  const n = viewers.length;
  const out: ReadBatch = {
    what: new Uint8Array(n),
    sendPeriod: new Float64Array(n),
    payloadBytes: new Float64Array(n),
    viewRadius: new Float64Array(n),
    meters: new Float64Array(n),
  };
  let what = 0;
  for (const name of FIELDS) {
    const a = o[name];
    if (a === undefined) continue;
    if (typeof a !== 'object' || a === null || typeof (a as ArrayLike<number>).length !== 'number' || (a as ArrayLike<number>).length !== n) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `settings.${name} must be an array of ${n} numbers (one a viewer), received ${describe(a)}`);
    }
    const values = a as ArrayLike<unknown>;
    const to = name === 'viewRadius' ? out.meters : out[name];
    for (let i = 0; i < n; i++) {
      const x = values[i];
      if (typeof x !== 'number') throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `settings.${name}[${i}] must be a number, received ${describe(x)}`);
      to[i] = x;
    }
    if (name === 'viewRadius') {
      for (let i = 0; i < n; i++) {
        try {
          out.viewRadius[i] = viewRadiusRaw(config, out.meters[i]);
          out.meters[i] = toMeters(out.viewRadius[i]);  // as the engine holds it, for the shedding's base
        } catch (e) {
          throw e instanceof SightlineError ? new SightlineError(e.code, `settings.viewRadius[${i}]: ${e.message}`) : e;
        }
      }
    }
    what |= CHANGE[name];
  }
  out.what.fill(what);
  return out;
}
