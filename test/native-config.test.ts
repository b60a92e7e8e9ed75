import { describe, it, expect } from 'vitest';
import { native } from '../lib/binding.js';
import { WorldConfig, type WorldConfigInput } from '../lib/config.js';
import { rng, withSeed } from './helpers/model.js';

const DERIVED = [
  'regionRaw', 'regionShift', 'verticalRaw', 'zBits', 'viewRadiusRaw', 'cellRaw', 'cellShift', 'cellsPerAxis',
  'cellCount', 'cellRadius', 'maxMovePerTickRaw', 'payloadBytes', 'eventReserveBytes', 'slotsPerPacket', 'walkCap',
  'ghostCap', 'ghostTableCapacity', 'graceTicks', 'denseCellThreshold', 'subGridDivisions', 'subShift', 'newDriftRaw',
  'quantShift', 'protocolHash', 'bandWeights', 'fields', 'fieldBits', 'fieldBytes', 'recordBytes', 'minPayloadBytes',
  'attributeBytes', 'attributeRepeatPasses', 'attributeShareQ16',
] as const;

function outcome(f: () => unknown): { ok: true; value: Record<string, unknown> } | { ok: false; code: string } {
  try {
    return { ok: true, value: f() as Record<string, unknown> };
  } catch (e) {
    return { ok: false, code: (e as { code: string }).code };
  }
}

function compare(input: WorldConfigInput): void {
  const ts = outcome(() => WorldConfig.build(input));
  const cc = outcome(() => native.buildConfig(input));
  if (!ts.ok || !cc.ok) {
    expect({ input, ts: ts.ok ? 'ok' : ts.code }).toEqual({ input, ts: cc.ok ? 'ok' : cc.code });
    return;
  }
  for (const k of DERIVED) expect([k, ts.value[k]]).toEqual([k, cc.value[k]]);
  // The TS config's resolved input builds the same native config.
  const again = native.buildConfig((ts.value as unknown as WorldConfig).input);
  for (const k of DERIVED) expect([k, again[k]]).toEqual([k, cc.value[k]]);
}

describe('TypeScript and native configuration agree', () => {
  it('on the defaults and on hand-picked edge cases, field by field and error code by error code', () => {
    const cases: WorldConfigInput[] = [
      {},
      { regionSize: 8192 },
      { regionSize: 65536, viewRadius: 1024, maxSpeed: 10 },
      { regionSize: 65536, verticalExtent: 65536 },
      { regionSize: 1024, viewRadius: 100 },
      { viewRadius: 300, cellSize: 64 },
      { viewRadius: 256, cellSize: 16 }, // cell radius 16: too large
      { viewRadius: 5000 }, // beyond the region
      { viewRadius: 4096.0000001 }, // a rounding above the region: the region
      { regionSize: 1024, viewRadius: 1024.00000001 },
      { regionSize: 1024, viewRadius: 1024.0005 }, // one raw unit above: refused
      { maxSpeed: 2560 }, // 128 m per tick: crosses a cell
      { maxSpeed: 2559.9 },
      { regionSize: 3000 },
      { cellSize: 100 },
      { cellSize: 0.5, viewRadius: 1, maxSpeed: 1 },
      { payloadBytes: 28 },
      { payloadBytes: 27 },
      { payloadBytes: 1200, eventReserveBytes: 1172 },
      { payloadBytes: 1200, eventReserveBytes: 1173 },
      { walkCap: Infinity },
      { walkCap: 0 },
      { ghostCap: 16384 },
      { ghostCap: 16385 },
      { graceTicks: 0 },
      { subGridDivisions: 3 },
      { subGridDivisions: 16 },
      { newDrift: 0.001 },
      { newDrift: 0 },
      { tickHz: NaN },
      { tickHz: -20 },
      { verticalExtent: Infinity },
      { bandWeights: new Array(64).fill(1) },
      { bandWeights: [...new Array(63).fill(1), 0] },
      { bandWeights: new Array(10).fill(1) },
      { bandWeights: Uint32Array.from({ length: 64 }, (_, b) => b + 1) },
      { bandWeights: new Float64Array(64).fill(0.5) },
      { bandWeights: new Uint8Array(63).fill(1) },
      { bandWeights: new BigInt64Array(64) as never },
      { bandWeights: new DataView(new ArrayBuffer(64)) as never },
      { maxSpeed: 1e300 },
      { tickHz: 1e-300 },
      { tickHz: 1000 },
      { tickHz: 1000.5 },
      { tickHz: 1e308 },
      { viewRadius: 1e300 },
      { newDrift: 4194303.9 },
      { newDrift: 1 / 2048 },
      { newDrift: 1 / 1024 },
      { newDrift: 0.0009 },
      { newDrift: 4194304 },
      { fields: [{ name: 'yaw', bits: 10, min: 0, max: 6.283185307179586 }, { name: 'anim', bits: 6 }, { name: 'health', bits: 8, max: 100, weight: 0.5 }] },
      { fields: [{ name: 'a', bits: 31 }, { name: 'b', bits: 31 }, { name: 'c', bits: 2 }] },
      { fields: [{ name: 'a', bits: 31 }, { name: 'b', bits: 31 }, { name: 'c', bits: 3 }] },
      { fields: [{ name: 'a', bits: 8 }, { name: 'a', bits: 8 }] },
      { fields: [{ name: 'a', bits: 8 }, { name: 'a', bits: 40 }] },
      { fields: [{ name: 'a', bits: 40 }, { name: 'a', bits: 40 }] },
      { fields: [{ name: '', bits: 8 }] },
      { fields: [{ name: '9a', bits: 8 }] },
      { fields: [{ name: 'a'.repeat(32), bits: 8 }] },
      { fields: [{ name: 'a'.repeat(33), bits: 8 }] },
      { fields: [JSON.parse('{"name":"__proto__","bits":1}')] },
      { fields: [{ name: 'é', bits: 8 }] },
      { fields: [{ name: 'a', bits: 0 }] },
      { fields: [{ name: 'a', bits: 32 }] },
      { fields: [{ name: 'a', bits: NaN }] },
      { fields: [{ name: 'a', bits: 2.5 }] },
      { fields: [{ name: 'a', bits: 8, min: 5, max: 5 }] },
      { fields: [{ name: 'a', bits: 8, min: -Infinity }] },
      { fields: [{ name: 'a', bits: 8, max: 1e308 }] },
      { fields: [{ name: 'a', bits: 8, min: -1e308, max: 1e308 }] },
      { fields: [{ name: 'a', bits: 8, weight: 0 }] },
      { fields: [{ name: 'a', bits: 8, weight: 4194303.9990234375 }] },
      { fields: [{ name: 'a', bits: 8, weight: 4194304 }] },
      { fields: [{ name: 'a', bits: 8, weight: 0.0004 }] },
      { fields: [{ name: 'a', bits: 8, min: undefined, max: undefined, weight: undefined }] },
      { fields: [{ name: 'a', bits: 8, extra: 1 } as never] },
      { fields: [{ bits: 8 } as never] },
      { fields: [{ name: 'a', bits: '8' } as never] },
      { fields: [{ name: 'a', bits: 8, min: '0' } as never] },
      { fields: [null as never] },
      { fields: [[1] as never] },
      { fields: [new Map() as never] },
      { fields: {} as never },
      { fields: 'yaw' as never },
      { fields: null },
      { fields: [] },
      { regionSize: 3000, fields: [{ name: 'a', bits: 99 }] },
      { fields: [{ name: 'a', bits: 99 }], attributeBytes: 300 },
      { attributeBytes: 255 },
      { attributeBytes: 256 },
      { attributeBytes: -1 },
      { attributeBytes: 0.5 },
      { attributeRepeatPasses: 0 },
      { attributeRepeatPasses: 65535 },
      { attributeRepeatPasses: 65536 },
      { attributeShare: 1 / 64 },
      { attributeShare: 63 / 64 },
      { attributeShare: 0.01 },
      { attributeShare: 0.99 },
      { attributeShare: 1 / 3 },
      { attributeShare: Infinity },
      { attributeShare: 'x' as never },
      { payloadBytes: 30, fields: [{ name: 'a', bits: 24 }] },
      { payloadBytes: 31, fields: [{ name: 'a', bits: 24 }] },
      { payloadBytes: 106, attributeBytes: 80 },
      { payloadBytes: 107, attributeBytes: 80 },
      { payloadBytes: 27, fields: [{ name: 'a', bits: 24 }] },
    ];
    for (const c of cases) compare(c);
  });

  it('on randomized inputs', async () => {
    await withSeed(4242, () => {
      const r = rng(4242);
      const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
      for (let i = 0; i < 2000; i++) {
        const input: WorldConfigInput = {};
        if (r() < 0.7) input.regionSize = pick([512, 1000, 1024, 2048, 4096, 16384, 65536, 131072]);
        if (r() < 0.7) input.viewRadius = pick([1, 10, 64, 100, 128, 200.5, 256, 300, 1000, 5000]);
        if (r() < 0.5) input.maxSpeed = pick([1, 10, 40, 100, 500, 1e4]);
        if (r() < 0.5) input.tickHz = pick([1, 10, 20, 30, 60, 0.5]);
        if (r() < 0.3) input.cellSize = pick([1, 8, 32, 64, 128, 256, 96]);
        if (r() < 0.3) input.verticalExtent = pick([1, 100, 1024, 4096.5, 65536]);
        if (r() < 0.3) input.payloadBytes = pick([20, 28, 100, 576, 1200, 9000, 65507, 65508]);
        if (r() < 0.2) input.eventReserveBytes = pick([0, 4, 100, 500]);
        if (r() < 0.3) {
          const n = Math.floor(r() * 5);
          input.fields = Array.from({ length: n }, (_, k) => ({
            name: pick([`f${k}`, `f${k}`, 'dup', 'bad-name']),
            bits: pick([1, 5, 8, 16, 31, 32, 0]),
            ...(r() < 0.3 ? { min: pick([-10, 0, 3.5]) } : {}),
            ...(r() < 0.3 ? { max: pick([1, 100, 1e6]) } : {}),
            ...(r() < 0.3 ? { weight: pick([0, 0.25, 1, 10, -1]) } : {}),
          }));
        }
        if (r() < 0.2) input.attributeBytes = pick([0, 1, 32, 255, 256]);
        if (r() < 0.1) input.attributeShare = pick([0.1, 0.25, 0.5, 0, 1]);
        compare(input);
      }
    });
  });

  it('both refuse a field inherited through the prototype chain', () => {
    const inherited = Object.create({ regionSize: 8192 }) as WorldConfigInput;
    expect(() => WorldConfig.build(inherited)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => native.buildConfig(inherited)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
  });

  it('both refuse an input that is not an ordinary object (a Map, a Date, an array, a boxed number)', () => {
    for (const input of [new Map([['regionSize', 1024]]), new Date(0), [], Object(5)]) {
      expect(() => WorldConfig.build(input as WorldConfigInput)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
      expect(() => native.buildConfig(input as object)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    // An object without a prototype is ordinary.
    const bare = Object.assign(Object.create(null), { regionSize: 1024 }) as WorldConfigInput;
    expect(WorldConfig.build(bare).input.regionSize).toBe(1024);
    expect(native.buildConfig(bare).regionRaw).toBe(WorldConfig.build(bare).regionRaw);
  });

  it('the protocol hash changes when a decode-relevant field changes, and only then', () => {
    const base = WorldConfig.build();
    expect(native.buildConfig({}).protocolHash).toBe(base.protocolHash);
    for (const changed of [{ regionSize: 8192 }, { verticalExtent: 512 }, { regionSize: 65536, verticalExtent: 65536 }]) {
      const c = WorldConfig.build(changed);
      expect(c.protocolHash).not.toBe(base.protocolHash);
      expect(native.buildConfig(changed).protocolHash).toBe(c.protocolHash);
    }
    for (const changed of [{ fields: [{ name: 'a', bits: 3 }] }, { attributeBytes: 16 }, { fields: [{ name: 'a', bits: 3, min: 1 }] }]) {
      expect(native.buildConfig(changed).protocolHash).toBe(WorldConfig.build(changed).protocolHash);
      expect(WorldConfig.build(changed).protocolHash).not.toBe(base.protocolHash);
    }
    for (const same of [{ viewRadius: 100 }, { payloadBytes: 600 }, { maxSpeed: 10 }, { ghostCap: 64 }]) {
      expect(WorldConfig.build(same).protocolHash).toBe(base.protocolHash);
    }
  });
});
