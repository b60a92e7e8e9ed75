// Over 500 lines as one file: one concept (building a WorldConfig), case tables of defaults, overrides and rejections.
import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';

import {
  BAND_COUNT,
  CONFIG_FIELDS,
  DESPAWN_RECORD_BYTES,
  HEADER_BYTES,
  MAX_CELL_RADIUS,
  MAX_CELLS_PER_AXIS,
  MAX_PAYLOAD_BYTES,
  MAX_REGION_METERS,
  PROTOCOL_VERSION,
  RECORD_BYTES,
  UNCAPPED_WALK,
  WorldConfig,
  defaultBandWeights,
  protocolHash,
} from '../lib/config.js';
import type { WorldConfigInput } from '../lib/config.js';
import { SightlineError } from '../lib/errors.js';

const vectors = JSON.parse(readFileSync(new URL('./vectors/packets.json', import.meta.url), 'utf8')) as {
  configs: { input: WorldConfigInput; protocolHash: number }[];
};
const vectorConfig = vectors.configs[0];

function ones(n: number, last?: unknown): unknown[] {
  const a: unknown[] = new Array(n).fill(1);
  if (last !== undefined) a[n - 1] = last;
  return a;
}

// Builds a config that must fail; returns the error after checking its class and code.
function rejection(input: unknown, code: string): SightlineError {
  let caught: unknown;
  try {
    WorldConfig.build(input as WorldConfigInput);
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected ${code}`).toBeInstanceOf(SightlineError);
  const err = caught as SightlineError;
  expect(err.code).toBe(code);
  expect(err.name).toBe('SightlineError');
  return err;
}

describe('constants', () => {
  it('match native/core/config.h', () => {
    expect(PROTOCOL_VERSION).toBe(2);
    expect(HEADER_BYTES).toBe(16);
    expect(RECORD_BYTES).toBe(12);
    expect(DESPAWN_RECORD_BYTES).toBe(4);
    expect(MAX_CELL_RADIUS).toBe(8);
    expect(MAX_CELLS_PER_AXIS).toBe(1024);
    expect(MAX_REGION_METERS).toBe(65536);
    expect(MAX_PAYLOAD_BYTES).toBe(65507);
    expect(BAND_COUNT).toBe(64);
    expect(UNCAPPED_WALK).toBe(2147483647);
  });
});

describe('WorldConfig.build defaults', () => {
  const c = WorldConfig.build();

  it('derives every field', () => {
    expect(c.regionRaw).toBe(4194304);
    expect(c.regionShift).toBe(22);
    expect(c.verticalRaw).toBe(1048576);
    expect(c.zBits).toBe(20);
    expect(c.viewRadiusRaw).toBe(262144);
    expect(c.viewRadiusSq).toBe(262144 * 262144);
    expect(c.cellRaw).toBe(131072);
    expect(c.cellSize).toBe(128);
    expect(c.cellShift).toBe(17);
    expect(c.cellsPerAxis).toBe(32);
    expect(c.cellCount).toBe(1024);
    expect(c.cellRadius).toBe(2);
    expect(c.maxMovePerTickRaw).toBe(2048);
    expect(c.payloadBytes).toBe(1200);
    expect(c.eventReserveBytes).toBe(0);
    expect(c.slotsPerPacket).toBe(98);
    expect(c.walkCap).toBe(256);
    expect(c.ghostCap).toBe(256);
    expect(c.ghostTableCapacity).toBe(512);
    expect(c.graceTicks).toBe(10);
    expect(c.denseCellThreshold).toBe(512);
    expect(c.subGridDivisions).toBe(8);
    expect(c.subShift).toBe(14);
    expect(c.newDriftRaw).toBe(262144);
    expect(c.newDrift).toBe(256);
    expect([c.regionSize, c.verticalExtent, c.viewRadius, c.maxSpeed, c.tickHz, c.cellSize]).toEqual([4096, 1024, 256, 40, 20, 128]);
    expect(c.quantShift).toBe(0);
    expect(c.bandWeights).toEqual(defaultBandWeights());
    expect(c.protocolHash).toBe(vectorConfig.protocolHash);
  });

  it('fills the authored values', () => {
    expect(c.input).toEqual({
      regionSize: 4096,
      verticalExtent: 1024,
      viewRadius: 256,
      maxSpeed: 40,
      tickHz: 20,
      cellSize: 128,
      payloadBytes: 1200,
      eventReserveBytes: 0,
      walkCap: 256,
      ghostCap: 256,
      graceTicks: 10,
      denseCellThreshold: 512,
      subGridDivisions: 8,
      newDrift: 256,
      bandWeights: undefined,
      fields: [],
      attributeBytes: 0,
      attributeRepeatPasses: 20,
      attributeShare: 0.25,
    });
    expect(Object.keys(c.input)).toEqual([...CONFIG_FIELDS]);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.input)).toBe(true);
    expect(Object.isFrozen(c.bandWeights)).toBe(true);
  });

  it('treats undefined, cellSize 0, newDrift -1 and an empty or null bandWeights as defaults', () => {
    expect(WorldConfig.build({ regionSize: undefined, cellSize: 0, newDrift: -1, bandWeights: [] })).toEqual(c);
    expect(WorldConfig.build({ bandWeights: null })).toEqual(c);
    expect(WorldConfig.build({ bandWeights: undefined })).toEqual(c);
    expect(() => WorldConfig.build({ walkCap: -Infinity })).toThrow(
      expect.objectContaining({ code: 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', message: expect.stringContaining('or Infinity (uncapped)') }),
    );
  });

  it('passes the filled input back unchanged', () => {
    expect(WorldConfig.build(c.input)).toEqual(c);
  });

  it('returns a built WorldConfig given as input as it is', () => {
    expect(WorldConfig.build(c)).toBe(c);
    const custom = WorldConfig.build({ regionSize: 1024, viewRadius: 100 });
    expect(WorldConfig.build(custom)).toBe(custom);
  });
});

describe('defaultBandWeights', () => {
  const w = defaultBandWeights();

  it('is 1/d: 2^31 / 2^(b/2), rounded, at least 1', () => {
    expect(w).toHaveLength(64);
    const known: Record<number, number> = {
      0: 2147483648,
      1: 1518500250,
      2: 1073741824,
      3: 759250125,
      5: 379625062,
      7: 189812531,
      31: 46341,
      33: 23170,
      45: 362,
      57: 6,
      59: 3,
      60: 2,
      61: 1,
      62: 1,
      63: 1,
    };
    for (const [b, v] of Object.entries(known)) expect(w[Number(b)], `band ${b}`).toBe(v);
    for (let b = 0; b < 64; b += 2) expect(w[b]).toBe(2 ** (31 - b / 2));
  });

  it('never increases and stays within u32', () => {
    for (let b = 1; b < 64; b++) expect(w[b]).toBeLessThanOrEqual(w[b - 1]);
    for (const v of w) {
      expect(Number.isInteger(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(1);
      expect(v).toBeLessThanOrEqual(0xffffffff);
    }
  });
});

describe('WorldConfig.build overrides', () => {
  it('uses an authored cell size', () => {
    const c = WorldConfig.build({ cellSize: 64 });
    expect(c.cellRaw).toBe(65536);
    expect(c.cellShift).toBe(16);
    expect(c.cellsPerAxis).toBe(64);
    expect(c.cellRadius).toBe(4);
    expect(c.subShift).toBe(13);
    expect(c.input.cellSize).toBe(64);
  });

  it('derives the cell from the view radius', () => {
    // 100 m radius: half is 50 m; the largest power of two <= 51200 raw is 32768 (32 m).
    const c = WorldConfig.build({ viewRadius: 100 });
    expect(c.cellRaw).toBe(32768);
    expect(c.cellSize).toBe(32);
    expect(c.cellRadius).toBe(4);
    expect(c.newDriftRaw).toBe(102400);
    expect(c.newDrift).toBe(100);
    expect(c.input.newDrift).toBe(100);
  });

  it('maps walkCap Infinity to the uncapped value', () => {
    const c = WorldConfig.build({ walkCap: Infinity });
    expect(c.walkCap).toBe(2147483647);
    expect(c.input.walkCap).toBe(Infinity);
  });

  it('subtracts the event reserve from the slots', () => {
    expect(WorldConfig.build({ eventReserveBytes: 100 }).slotsPerPacket).toBe(90);
    expect(WorldConfig.build({ payloadBytes: 28 }).slotsPerPacket).toBe(1);
    expect(WorldConfig.build({ payloadBytes: 65507 }).slotsPerPacket).toBe(5457);
  });

  it('quantizes positions when they do not fit 64 bits', () => {
    // 2 * 26 + 20 - 64 = 8 excess bits: q = ceil(8 / 3) = 3.
    expect(WorldConfig.build({ regionSize: 65536 }).quantShift).toBe(3);
    // 2 * 26 + 26 - 64 = 14: q = 5.
    const big = WorldConfig.build({ regionSize: 65536, verticalExtent: 65536 });
    expect(big.quantShift).toBe(5);
    expect(big.zBits).toBe(26);
    // 2 * 23 + 20 - 64 = 2: q = 1.
    expect(WorldConfig.build({ regionSize: 8192 }).quantShift).toBe(1);
    expect(WorldConfig.build({ regionSize: 4096, verticalExtent: 2048 }).quantShift).toBe(1);
  });

  it('rounds the vertical extent to raw units, ties away from zero', () => {
    const c = WorldConfig.build({ verticalExtent: 1000.0004882812 });
    expect(c.verticalRaw).toBe(1024000);
    expect(WorldConfig.build({ verticalExtent: 2.5 / 1024 }).verticalRaw).toBe(3);
    expect(WorldConfig.build({ verticalExtent: 2 / 1024 }).zBits).toBe(1);
    expect(WorldConfig.build({ verticalExtent: 1000 }).zBits).toBe(20);
  });

  it('accepts the smallest region', () => {
    const c = WorldConfig.build({ regionSize: 1, viewRadius: 0.25, maxSpeed: 0.001 });
    expect(c.regionRaw).toBe(1024);
    expect(c.regionShift).toBe(10);
    expect(c.cellRaw).toBe(128);
    expect(c.cellsPerAxis).toBe(8);
    expect(c.maxMovePerTickRaw).toBe(1);
  });

  it('accepts the range limits', () => {
    const c = WorldConfig.build({
      walkCap: 2147483647,
      ghostCap: 16384,
      graceTicks: 0,
      denseCellThreshold: 2 ** 30,
      subGridDivisions: 16,
    });
    expect(c.ghostTableCapacity).toBe(32768);
    expect(c.subShift).toBe(13);
    expect(WorldConfig.build({ subGridDivisions: 2 }).subShift).toBe(16);
  });

  it('copies authored band weights', () => {
    const w = Array.from({ length: 64 }, (_, b) => 64 - b);
    const c = WorldConfig.build({ bandWeights: w });
    expect(c.bandWeights).toEqual(w);
    expect(c.bandWeights).not.toBe(w);
    expect(c.input.bandWeights).toEqual(w);
    w[0] = 1000;
    expect(c.bandWeights[0]).toBe(64);
  });

  it('takes band weights as a typed array, copied into a plain array', () => {
    const w = Uint32Array.from({ length: 64 }, (_, b) => 64 - b);
    const c = WorldConfig.build({ bandWeights: w });
    expect(Array.isArray(c.bandWeights)).toBe(true);
    expect(c.bandWeights).toEqual(Array.from(w));
    expect(Array.isArray(c.input.bandWeights)).toBe(true);
    expect(c).toEqual(WorldConfig.build({ bandWeights: Array.from(w) }));
    w[0] = 1000;
    expect(c.bandWeights[0]).toBe(64);
    expect(WorldConfig.build({ bandWeights: new Float64Array(0) })).toEqual(WorldConfig.build());
  });
});

describe('WorldConfig.build rejections', () => {
  // [input, code, text the message must contain]
  const cases: Array<[string, unknown, string, string[]]> = [
    ['null input', null, 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['null']],
    ['number input', 5, 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['5']],
    ['array input', [], 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['array']],
    // Built-ins whose data is not in own fields: their entries would be ignored, not read.
    ['Map input', new Map([['regionSize', 1024]]), 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['config must be an object', 'Map']],
    ['Date input', new Date(0), 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['Date']],
    ['RegExp input', /x/, 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['RegExp']],
    ['boxed number input', Object(5), 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['Number']],
    ['unknown field', { radius: 5 }, 'ERR_SIGHTLINE_CONFIG_UNKNOWN_FIELD', ['"radius"', 'viewRadius', 'bandWeights']],
    ['NaN', { regionSize: NaN }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['regionSize', 'NaN']],
    ['Infinity', { viewRadius: Infinity }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['viewRadius', 'Infinity']],
    ['string', { payloadBytes: '1200' }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['payloadBytes', '"1200"']],
    ['null field', { tickHz: null }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['tickHz', 'null']],
    ['string cell', { cellSize: 'big' }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['cellSize', '"big"']],
    ['boolean drift', { newDrift: true }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['newDrift', 'true']],
    ['-Infinity walk', { walkCap: -Infinity }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['walkCap', '-Infinity']],
    ['bandWeights string', { bandWeights: 'abc' }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['bandWeights', '"abc"']],
    ['bandWeights DataView', { bandWeights: new DataView(new ArrayBuffer(256)) as never }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['bandWeights', 'DataView']],
    ['bandWeights BigUint64Array', { bandWeights: new BigUint64Array(64).fill(1n) as never }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['bandWeights[0]', '1n']],
    ['63 typed band weights', { bandWeights: new Uint32Array(63).fill(1) }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['bandWeights', '64', '63']],
    ['band weight NaN', { bandWeights: ones(64, NaN) }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['bandWeights[63]', 'NaN']],
    ['band weight string', { bandWeights: ones(64, '1') }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', ['bandWeights[63]', '"1"']],
    ['zero region', { regionSize: 0 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['regionSize', '0']],
    ['negative speed', { maxSpeed: -1 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['maxSpeed', '-1']],
    ['-0 tick rate', { tickHz: -0 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['tickHz', '-0']],
    ['tick rate above 1 kHz', { tickHz: 4294967296 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['tickHz', '1000', '4294967296']],
    ['vertical 0', { verticalExtent: 0 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['verticalExtent', '0']],
    ['radius below 1 raw', { viewRadius: 0.0004 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['viewRadius', '0.0004']],
    ['negative cell', { cellSize: -128 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['cellSize', '-128']],
    ['zero payload', { payloadBytes: 0 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['payloadBytes', '0']],
    ['negative ghost cap', { ghostCap: -5 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['ghostCap', '-5']],
    ['negative drift', { newDrift: -2 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['newDrift', '-2']],
    ['negative band weight', { bandWeights: ones(64, -1) }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE', ['bandWeights[63]', '-1']],
    ['fractional payload', { payloadBytes: 1200.5 }, 'ERR_SIGHTLINE_CONFIG_NOT_INTEGER', ['payloadBytes', '1200.5']],
    ['fractional grace', { graceTicks: -0.5 }, 'ERR_SIGHTLINE_CONFIG_NOT_INTEGER', ['graceTicks', '-0.5']],
    ['fractional walk', { walkCap: 2.5 }, 'ERR_SIGHTLINE_CONFIG_NOT_INTEGER', ['walkCap', '2.5']],
    ['fractional band weight', { bandWeights: ones(64, 1.5) }, 'ERR_SIGHTLINE_CONFIG_NOT_INTEGER', ['bandWeights[63]', '1.5']],
    ['region too large', { regionSize: 131072 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['regionSize', '65536', '131072']],
    ['a tiny viewRadius: the default cell too small', { viewRadius: 0.001 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['derived from viewRadius 0.001 m', 'set cellSize to at least 4 m']],
    ['vertical too large', { verticalExtent: 70000 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['verticalExtent', '70000']],
    ['vertical below 2 raw', { verticalExtent: 0.001 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['verticalExtent', '0.001']],
    ['too many cells', { regionSize: 65536, viewRadius: 64 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['1024', '2048', '32 m']],
    ['payload too large', { payloadBytes: 70000 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['payloadBytes must be at most 65507', '70000']],
    ['payload one too large', { payloadBytes: 65508 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['payloadBytes must be at most 65507', 'received 65508']],
    ['newDrift half a raw unit', { newDrift: 1 / 2048 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['newDrift must be between 1/1024 m', '0.00048828125']],
    ['negative reserve', { eventReserveBytes: -1 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['eventReserveBytes', '-1']],
    ['reserve 1', { eventReserveBytes: 1 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['eventReserveBytes must be 0, or at least 6', 'received 1']],
    ['reserve 5', { eventReserveBytes: 5 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['eventReserveBytes must be 0, or at least 6', 'received 5']],
    ['inherited field', Object.create({ regionSize: 8 }), 'ERR_SIGHTLINE_INVALID_ARGUMENT', ['regionSize', 'inherited', 'own']],
    ['walk too large', { walkCap: 2 ** 31 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['walkCap', '2147483648']],
    ['ghost cap too large', { ghostCap: 16385 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['ghostCap', '16385']],
    ['grace too large', { graceTicks: 30001 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['graceTicks', '30001']],
    ['negative grace', { graceTicks: -1 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['graceTicks', '-1']],
    ['dense too large', { denseCellThreshold: 2 ** 30 + 1 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['denseCellThreshold', '1073741825']],
    ['sub-grid too large', { subGridDivisions: 32 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['subGridDivisions', '32']],
    ['sub-grid 1', { subGridDivisions: 1 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['subGridDivisions', '1']],
    ['sub-grid 6', { subGridDivisions: 6 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['subGridDivisions', '6']],
    ['sub-grid above cell raw', { regionSize: 1, viewRadius: 0.015, maxSpeed: 0.0001, subGridDivisions: 16 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['subGridDivisions', '16']],
    ['drift too large', { newDrift: 5e6 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['newDrift', '5000000']],
    ['drift below 1 raw', { newDrift: 0.0004 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['newDrift', '0.0004']],
    ['63 band weights', { bandWeights: ones(63) }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['bandWeights', '64', '63']],
    ['band weight above u32', { bandWeights: ones(64, 2 ** 32) }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', ['bandWeights[63]', '4294967296']],
    ['region 3000', { regionSize: 3000 }, 'ERR_SIGHTLINE_CONFIG_REGION_NOT_POWER_OF_TWO', ['regionSize', '3000']],
    ['region 4096.5', { regionSize: 4096.5 }, 'ERR_SIGHTLINE_CONFIG_REGION_NOT_POWER_OF_TWO', ['4096.5']],
    ['region 0.5', { regionSize: 0.5 }, 'ERR_SIGHTLINE_CONFIG_REGION_NOT_POWER_OF_TWO', ['0.5']],
    ['radius above region', { regionSize: 1024, viewRadius: 2000 }, 'ERR_SIGHTLINE_CONFIG_RADIUS_EXCEEDS_REGION', ['viewRadius', '1024', '2000']],
    ['cell 100', { cellSize: 100 }, 'ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO', ['cellSize', '100']],
    ['cell above region', { cellSize: 8192 }, 'ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO', ['8192', '4096']],
    ['cell below 1 raw', { cellSize: 0.0001 }, 'ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO', ['0.0001']],
    ['cell radius 16', { cellSize: 16 }, 'ERR_SIGHTLINE_CONFIG_CELL_RADIUS_TOO_LARGE', ['16', '256', '8']],
    ['speed one cell per tick', { maxSpeed: 2560 }, 'ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK', ['2560', '20 Hz', '128 m']],
    ['slow ticks', { tickHz: 0.25 }, 'ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK', ['40 m/s', '0.25 Hz', '160 m per tick']],
    ['payload 27', { payloadBytes: 27 }, 'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL', ['at least 28', '27']],
    ['reserve fills payload', { eventReserveBytes: 1200 }, 'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL', ['1200', 'at least 1228']],
    ['band weight 0', { bandWeights: ones(64, 0) }, 'ERR_SIGHTLINE_CONFIG_BAND_WEIGHT_ZERO', ['bandWeights[63]', '0']],
    ['band weight -0', { bandWeights: ones(64, -0) }, 'ERR_SIGHTLINE_CONFIG_BAND_WEIGHT_ZERO', ['bandWeights[63]']],
  ];

  for (const [name, input, code, texts] of cases) {
    it(`${name}: ${code}`, () => {
      const err = rejection(input, code);
      for (const t of texts) expect(err.message).toContain(t);
    });
  }

  it('reaches every code', () => {
    const codes = new Set(cases.map((c) => c[2]));
    expect([...codes].sort()).toEqual(
      [
        'ERR_SIGHTLINE_CONFIG_BAND_WEIGHT_ZERO',
        'ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO',
        'ERR_SIGHTLINE_CONFIG_CELL_RADIUS_TOO_LARGE',
        'ERR_SIGHTLINE_CONFIG_NOT_FINITE',
        'ERR_SIGHTLINE_CONFIG_NOT_INTEGER',
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE',
        'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE',
        'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL',
        'ERR_SIGHTLINE_CONFIG_RADIUS_EXCEEDS_REGION',
        'ERR_SIGHTLINE_CONFIG_REGION_NOT_POWER_OF_TWO',
        'ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK',
        'ERR_SIGHTLINE_CONFIG_UNKNOWN_FIELD',
      ].sort(),
    );
  });

  it('checks fields in the native order', () => {
    // Unknown fields come before any value check.
    rejection({ regionSize: NaN, colour: 'red' }, 'ERR_SIGHTLINE_CONFIG_UNKNOWN_FIELD');
    // Types (as the addon reads the object) come before values.
    rejection({ regionSize: -1, payloadBytes: 'x' }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE');
    rejection({ regionSize: 3000, bandWeights: [1, 'x'] }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE');
    rejection({ regionSize: 3000, bandWeights: 5 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE');
    // NaN is a number: it fails where the value is checked.
    rejection({ regionSize: -1, payloadBytes: NaN }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE');
    rejection({ payloadBytes: -1, regionSize: NaN }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE');
    // All five positive quantities before the region's power-of-two check.
    rejection({ regionSize: 3000, tickHz: 0 }, 'ERR_SIGHTLINE_CONFIG_NOT_POSITIVE');
    // Cell before speed, speed before payload.
    rejection({ cellSize: 100, maxSpeed: 1e6 }, 'ERR_SIGHTLINE_CONFIG_CELL_NOT_POWER_OF_TWO');
    rejection({ maxSpeed: 1e6, payloadBytes: 1 }, 'ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK');
    // Payload size before the caps; a zero band weight before the length of later entries.
    rejection({ payloadBytes: 20, walkCap: 0 }, 'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL');
    rejection({ bandWeights: [1, 0, NaN, ...ones(61)] }, 'ERR_SIGHTLINE_CONFIG_BAND_WEIGHT_ZERO');
    // A reserve too small for any event before the payload size.
    rejection({ payloadBytes: 20, eventReserveBytes: 4 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE');
    // An inherited field, in field order with the types.
    rejection(Object.assign(Object.create({ payloadBytes: 1200 }), { regionSize: 'x' }), 'ERR_SIGHTLINE_CONFIG_NOT_FINITE');
    rejection(Object.assign(Object.create({ regionSize: 4096 }), { payloadBytes: 'x' }), 'ERR_SIGHTLINE_INVALID_ARGUMENT');
  });

  it('reads own properties only: an inherited field is refused, an own one (enumerable or not) is read', () => {
    const err = rejection(Object.create({ regionSize: 8 }), 'ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(err.message).toBe(
      'config field regionSize is inherited, not an own property of the config; only own properties are read (make it one: { regionSize: config.regionSize, ... }; a spread { ...config } leaves out getters of a class)',
    );
    rejection(Object.create({ bandWeights: null }), 'ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(WorldConfig.build(Object.create(null) as WorldConfigInput).regionRaw).toBe(WorldConfig.build().regionRaw);
    const hidden = Object.defineProperty({}, 'regionSize', { value: 8192, enumerable: false });
    expect(WorldConfig.build(hidden).regionRaw).toBe(8192 * 1024);
  });

  it('an event reserve is 0 or at least 6 bytes', () => {
    expect(WorldConfig.build({ eventReserveBytes: 0 }).eventReserveBytes).toBe(0);
    expect(WorldConfig.build({ eventReserveBytes: 6 }).eventReserveBytes).toBe(6);
    for (let r = 1; r <= 5; r++) rejection({ eventReserveBytes: r }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE');
  });
});

describe('protocolHash', () => {
  const base = WorldConfig.build();

  it('is FNV-1a over the decode-relevant words', () => {
    expect(protocolHash(4194304, 1048576, 0)).toBe(vectorConfig.protocolHash);
    expect(base.protocolHash).toBe(protocolHash(base.regionRaw, base.verticalRaw, base.quantShift));
    expect(Number.isInteger(base.protocolHash)).toBe(true);
    expect(base.protocolHash).toBeGreaterThanOrEqual(0);
    expect(base.protocolHash).toBeLessThanOrEqual(0xffffffff);
  });

  it('changes with every decode-relevant value', () => {
    const hashes = new Set([
      base.protocolHash,
      WorldConfig.build({ regionSize: 2048 }).protocolHash,
      WorldConfig.build({ regionSize: 8192 }).protocolHash,
      WorldConfig.build({ verticalExtent: 512 }).protocolHash,
      WorldConfig.build({ verticalExtent: 1000 }).protocolHash,
      WorldConfig.build({ verticalExtent: 1024 + 1 / 1024 }).protocolHash,
      protocolHash(base.regionRaw, base.verticalRaw, 1),
      WorldConfig.build({ fields: [{ name: 'a', bits: 8 }] }).protocolHash,
      WorldConfig.build({ fields: [{ name: 'b', bits: 8 }] }).protocolHash,
      WorldConfig.build({ fields: [{ name: 'a', bits: 9 }] }).protocolHash,
      WorldConfig.build({ fields: [{ name: 'a', bits: 8, min: -1 }] }).protocolHash,
      WorldConfig.build({ fields: [{ name: 'a', bits: 8, max: 1 }] }).protocolHash,
      WorldConfig.build({ fields: [{ name: 'a', bits: 4 }, { name: 'b', bits: 4 }] }).protocolHash,
      WorldConfig.build({ fields: [{ name: 'b', bits: 4 }, { name: 'a', bits: 4 }] }).protocolHash,
      WorldConfig.build({ attributeBytes: 1 }).protocolHash,
      WorldConfig.build({ attributeBytes: 255 }).protocolHash,
    ]);
    expect(hashes.size).toBe(16);
  });

  it('ignores values that do not affect decoding', () => {
    const same: WorldConfigInput[] = [
      { viewRadius: 100 },
      { maxSpeed: 10 },
      { tickHz: 60 },
      { cellSize: 64 },
      { payloadBytes: 500 },
      { eventReserveBytes: 100 },
      { walkCap: Infinity },
      { ghostCap: 64 },
      { graceTicks: 0 },
      { denseCellThreshold: 64 },
      { subGridDivisions: 4 },
      { newDrift: 10 },
      { bandWeights: ones(64) as number[] },
      { attributeRepeatPasses: 0 },
      { attributeShare: 0.5 },
    ];
    // A field's weight changes what is sent, not how it reads.
    expect(WorldConfig.build({ fields: [{ name: 'a', bits: 8, weight: 3 }] }).protocolHash).toBe(
      WorldConfig.build({ fields: [{ name: 'a', bits: 8 }] }).protocolHash,
    );
    for (const input of same) expect(WorldConfig.build(input).protocolHash, JSON.stringify(input)).toBe(base.protocolHash);
  });
});

describe('fast fields and attributes', () => {
  const schema = [{ name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI }, { name: 'anim', bits: 6 }, { name: 'health', bits: 8, max: 100, weight: 0.5 }];

  it('lay the fields out from bit 0, in order, and size the record from them', () => {
    const c = WorldConfig.build({ fields: schema });
    expect(c.fields.map((f) => [f.name, f.bits, f.offset, f.min, f.max, f.weight, f.weightRaw])).toEqual([
      ['yaw', 10, 0, 0, 2 * Math.PI, 1, 1024],
      ['anim', 6, 10, 0, 63, 1, 1024],
      ['health', 8, 16, 0, 100, 0.5, 512],
    ]);
    expect(c.fieldBits).toBe(24);
    expect(c.fieldBytes).toBe(3);
    expect(c.recordBytes).toBe(15);
    expect(c.slotsPerPacket).toBe(Math.floor(1184 / 15));
    expect(c.input.fields).toEqual([
      { name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI, weight: 1 },
      { name: 'anim', bits: 6, min: 0, max: 63, weight: 1 },
      { name: 'health', bits: 8, min: 0, max: 100, weight: 0.5 },
    ]);
    expect(Object.isFrozen(c.fields) && Object.isFrozen(c.fields[0]) && Object.isFrozen(c.input.fields)).toBe(true);
    expect(WorldConfig.build({ fields: null })).toEqual(WorldConfig.build());
    expect(WorldConfig.build({ fields: [{ name: 'all', bits: 31 }, { name: 'of', bits: 31 }, { name: 'it', bits: 2 }] }).recordBytes).toBe(20);
  });

  it('convert between declared units and raw values, clamping', () => {
    const c = WorldConfig.build({ fields: schema });
    expect(c.fieldToRaw('yaw', Math.PI)).toBe(512);
    expect(c.fieldFromRaw('yaw', 1023)).toBeCloseTo(2 * Math.PI, 12);
    expect(c.fieldToRaw('health', 150)).toBe(255);
    expect(c.fieldToRaw('health', -3)).toBe(0);
    expect(c.fieldToRaw('anim', 17)).toBe(17);
    expect(c.fieldFromRaw('anim', 17)).toBe(17);
    expect(c.fieldToRaw('health', Infinity)).toBe(255);
    expect(c.fieldToRaw('health', -Infinity)).toBe(0);
    for (const bad of [NaN, '1' as never]) expect(() => c.fieldToRaw('health', bad)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    for (const bad of [NaN, -1, 0.5, 256, Infinity]) expect(() => c.fieldFromRaw('health', bad)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(c.fieldFromRaw('health', 255)).toBe(100);
    expect(() => c.fieldToRaw('speed', 1)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT', message: expect.stringContaining('yaw, anim, health') }));
    expect(() => c.fieldToRaw('yaw', '1' as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
  });

  const bad: [string, WorldConfigInput, string, string][] = [
    ['a schema over 64 bits', { fields: [{ name: 'a', bits: 31 }, { name: 'b', bits: 31 }, { name: 'c', bits: 3 }] }, 'ERR_SIGHTLINE_CONFIG_FIELDS_TOO_WIDE', '65 bits'],
    ['a field name twice', { fields: [{ name: 'hp', bits: 8 }, { name: 'hp', bits: 4 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_DUPLICATE', 'fields[1].name "hp"'],
    ['fields not an array', { fields: { name: 'a', bits: 1 } as never }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields must be an array'],
    ['an entry not an object', { fields: [5 as never] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0] must be an object'],
    ['an unknown key', { fields: [{ name: 'a', bits: 1, scale: 2 } as never] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'unknown key "scale"'],
    ['a name not a string', { fields: [{ name: 5, bits: 1 } as never] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0].name must be a string'],
    ['an empty name', { fields: [{ name: '', bits: 1 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0].name'],
    ['a name with a dash', { fields: [{ name: 'a-b', bits: 1 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'letters, digits or underscores'],
    ['a name starting with a digit', { fields: [{ name: '1a', bits: 1 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0].name'],
    ['__proto__', { fields: [JSON.parse('{"name":"__proto__","bits":1}')] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', '__proto__'],
    ['a name of 33 characters', { fields: [{ name: 'a'.repeat(33), bits: 1 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', '1 to 32'],
    ['bits 0', { fields: [{ name: 'a', bits: 0 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0].bits'],
    ['bits 32', { fields: [{ name: 'a', bits: 32 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', '1 to 31, received 32'],
    ['bits 1.5', { fields: [{ name: 'a', bits: 1.5 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0].bits'],
    ['bits missing', { fields: [{ name: 'a' } as never] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'fields[0].bits must be a number'],
    ['min above max', { fields: [{ name: 'a', bits: 4, min: 3, max: 2 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', 'less than .max'],
    ['min NaN', { fields: [{ name: 'a', bits: 4, min: NaN }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', '.min must be a finite'],
    ['max a string', { fields: [{ name: 'a', bits: 4, max: '3' as never }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', '.max must be a number'],
    ['a negative weight', { fields: [{ name: 'a', bits: 4, weight: -1 }] }, 'ERR_SIGHTLINE_CONFIG_FIELD_INVALID', '.weight'],
    ['attributeBytes 256', { attributeBytes: 256 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', 'attributeBytes'],
    ['attributeBytes 1.5', { attributeBytes: 1.5 }, 'ERR_SIGHTLINE_CONFIG_NOT_INTEGER', 'attributeBytes'],
    ['attributeRepeatPasses 65536', { attributeRepeatPasses: 65536 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', 'attributeRepeatPasses'],
    ['attributeShare 1', { attributeShare: 1 }, 'ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE', '1/64 to 63/64'],
    ['attributeShare NaN', { attributeShare: NaN }, 'ERR_SIGHTLINE_CONFIG_NOT_FINITE', 'attributeShare'],
    ['a payload too small for a record with fields', { payloadBytes: 30, fields: [{ name: 'a', bits: 24 }] }, 'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL', '15-byte record'],
    ['a payload too small for the largest attribute', { payloadBytes: 100, attributeBytes: 80 }, 'ERR_SIGHTLINE_CONFIG_PAYLOAD_TOO_SMALL', 'at least 107'],
  ];
  for (const [what, input, code, text] of bad) {
    it(`refuse ${what}: ${code}`, () => {
      expect(() => WorldConfig.build(input)).toThrow(expect.objectContaining({ code, message: expect.stringContaining(text) }));
    });
  }
});
