// Argument checks shared by the World API: entity ids, booleans, positions in meters, and the
// mapping of the engine's coded errors onto SightlineError.
import { SightlineError, describe } from './errors.js';
import { metersToRaw } from './fixed.js';
import type { Vec3 } from './world-types.js';

/** The largest entity id (ids are u32). */
export const MAX_ID = 0xffffffff;

export function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_ID;
}

/** Rethrows an engine error as a SightlineError with the same code (others pass through unchanged). */
export function rethrow(e: unknown): never {
  if (e instanceof Error && typeof (e as { code?: unknown }).code === 'string' && !(e instanceof SightlineError)) {
    throw new SightlineError((e as unknown as { code: string }).code, e.message);
  }
  throw e;
}

export function readBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be true or false, received ${describe(value)}`);
  }
  return value;
}

export function checkCoordinate(name: string, meters: unknown): number {
  if (typeof meters !== 'number' || !Number.isFinite(meters)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_POSITION', `${name} must be a finite number of meters, received ${describe(meters)}`);
  }
  const raw = metersToRaw(meters);
  if (raw < -2147483648 || raw > 2147483647) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_POSITION',
      `${name} must be within ±2097152 m (Int32 raw units), received ${describe(meters)}`,
    );
  }
  return raw;
}

export function checkVec3(pos: unknown): [number, number, number] {
  if (typeof pos !== 'object' || pos === null) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_POSITION', `position must be an object { x, y, z } in meters, received ${describe(pos)}`);
  }
  const p = pos as Partial<Vec3>;
  return [checkCoordinate('x', p.x), checkCoordinate('y', p.y), checkCoordinate('z', p.z === undefined ? 0 : p.z)];
}
