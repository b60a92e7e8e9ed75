// Argument checks shared by the World API: entity ids, booleans, positions in meters, and the
// mapping of the engine's coded errors onto SightlineError.
import { SightlineError, describe, isUint8Array } from './errors.js';
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

/** A kind: an integer 0 to 65535, else ERR_SIGHTLINE_INVALID_KIND. */
export function checkKind(kind: unknown): number {
  if (typeof kind !== 'number' || !Number.isInteger(kind) || kind < 0 || kind > 0xffff) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_KIND', `kind must be an integer from 0 to 65535, received ${describe(kind)}`);
  }
  return kind;
}

/**
 * Attributes for a world whose config allows `attributeBytes`: a Uint8Array of at most that many
 * bytes. ERR_SIGHTLINE_INVALID_ARGUMENT (not a Uint8Array), ERR_SIGHTLINE_ATTRIBUTES_DISABLED
 * (attributeBytes 0), ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE.
 */
export function checkAttributes(bytes: unknown, attributeBytes: number): Uint8Array {
  if (!isUint8Array(bytes)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `attributes must be a Uint8Array, received ${describe(bytes)}`);
  }
  if (attributeBytes === 0) {
    throw new SightlineError(
      'ERR_SIGHTLINE_ATTRIBUTES_DISABLED',
      "this world has no attributes: its configuration's attributeBytes is 0 (set it to the longest attribute string, up to 255)",
    );
  }
  if (bytes.length > attributeBytes) {
    throw new SightlineError('ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE', `attributes must be at most attributeBytes (${attributeBytes}) bytes, received ${bytes.length}`);
  }
  return bytes;
}

export function checkCoordinate(name: string, meters: unknown): number {
  if (typeof meters !== 'number' || !Number.isFinite(meters)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_POSITION', `${name} must be a finite number of meters, received ${describe(meters)}`);
  }
  const raw = metersToRaw(meters);
  if (raw < -2147483648 || raw > 2147483647) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_POSITION',
      `${name} must be from -2097152 m to just under 2097152 m (the Int32 range of raw units: 2^31 - 1 raw is 2097151.999 m), received ${describe(meters)}`,
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
