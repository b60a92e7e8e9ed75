import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { mulberry32 as rng } from '../lib/random.js';

import { WorldConfig, type WorldConfigInput } from '../lib/config.js';
import { createRawPacket, decodePacket, decodePacketRaw } from '../lib/decode.js';
import { SightlineError } from '../lib/errors.js';
import { encode as encodePacket, expectedRaw, fromHex, toHex, type WireLayout } from './helpers/wire.js';

interface VectorUpdate {
  id: number;
  x: number;
  y: number;
  z: number;
  xRaw: number;
  yRaw: number;
  zRaw: number;
  fields?: Record<string, number>;
  fieldsRaw?: number[];
  kind?: number;
}

interface VectorConfig {
  name: string;
  input: WorldConfigInput;
  regionRaw: number;
  regionShift: number;
  verticalRaw: number;
  zBits: number;
  quantShift: number;
  recordBytes: number;
  fields: { name: string; bits: number; min: number; max: number }[];
  attributeBytes: number;
  protocolHash: number;
  packets: Array<{
    name: string;
    bytes: number;
    hex: string;
    expected: {
      version: number;
      flags: number;
      sequence: number;
      tick: number;
      ack: number;
      ackBits: number;
      events: { sequence: number; hex: string }[];
      despawns: number[];
      updates: VectorUpdate[];
      attributes: { id: number; version: number; hex: string }[];
    };
  }>;
  rejects: Array<{ name: string; bytes: number; hex: string; code: string }>;
}

const vectors = JSON.parse(readFileSync(new URL('./vectors/packets.json', import.meta.url), 'utf8')) as { configs: VectorConfig[] };
const config = WorldConfig.build();
const defaults = vectors.configs[0];

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof SightlineError) return e.code;
    throw e;
  }
  return 'no error';
}

function errorOf(fn: () => unknown): SightlineError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SightlineError) return e;
    throw e;
  }
  throw new Error('expected a SightlineError');
}

interface Update {
  id: number;
  x: number;
  y: number;
  z: number;
}

// The v1-era shape of the tests below: positions only.
function encode(c: WireLayout, h: { sequence: number; tick: number; flags?: number; version?: number }, despawns: number[], updates: Update[]): Uint8Array {
  return encodePacket(c, { ...h, despawns, updates });
}

// ---------------------------------------------------------------------------------------------

for (const vc of vectors.configs) {
  describe(`test vectors: ${vc.name} configuration`, () => {
    const c = WorldConfig.build(vc.input);

    it('describe the configuration they were made for, protocol hash included', () => {
      expect(c.regionRaw).toBe(vc.regionRaw);
      expect(c.regionShift).toBe(vc.regionShift);
      expect(c.verticalRaw).toBe(vc.verticalRaw);
      expect(c.zBits).toBe(vc.zBits);
      expect(c.quantShift).toBe(vc.quantShift);
      expect(c.recordBytes).toBe(vc.recordBytes);
      expect(c.attributeBytes).toBe(vc.attributeBytes);
      expect(c.fields.map((f) => ({ name: f.name, bits: f.bits, min: f.min, max: f.max }))).toEqual(vc.fields);
      expect(c.protocolHash).toBe(vc.protocolHash);
    });

    for (const v of vc.packets) {
      it(`decodes ${v.name}`, () => {
        const bytes = fromHex(v.hex);
        expect(bytes.length).toBe(v.bytes);
        const p = decodePacket(bytes, c);
        const e = v.expected;
        expect(p.version).toBe(e.version);
        expect(p.flags).toBe(e.flags);
        expect(p.sequence).toBe(e.sequence);
        expect(p.tick).toBe(e.tick);
        expect(p.ack).toBe(e.ack);
        expect(p.ackBits).toBe(e.ackBits);
        expect(p.events.map((x) => ({ sequence: x.sequence, hex: toHex(x.bytes) }))).toEqual(e.events);
        expect(p.despawns).toBeInstanceOf(Uint32Array);
        expect(Array.from(p.despawns)).toEqual(e.despawns);
        expect(p.updates).toEqual(
          e.updates.map((u) => ({
            id: u.id,
            x: u.x,
            y: u.y,
            z: u.z,
            ...(u.fields ? { fields: u.fields } : {}),
            ...(u.kind !== undefined ? { kind: u.kind } : {}),
          })),
        );
        expect(p.attributes.map((a) => ({ id: a.id, version: a.version, hex: toHex(a.bytes) }))).toEqual(e.attributes);
      });

      it(`decodes ${v.name} into raw arrays`, () => {
        const r = decodePacketRaw(fromHex(v.hex), c);
        const e = v.expected;
        expect(r.sequence).toBe(e.sequence);
        expect(r.tick).toBe(e.tick);
        expect(r.despawnCount).toBe(e.despawns.length);
        expect(r.updateCount).toBe(e.updates.length);
        expect(Array.from(r.despawns)).toEqual(e.despawns);
        expect(Array.from(r.ids)).toEqual(e.updates.map((u) => u.id));
        expect(Array.from(r.x)).toEqual(e.updates.map((u) => u.xRaw));
        expect(Array.from(r.y)).toEqual(e.updates.map((u) => u.yRaw));
        expect(Array.from(r.z)).toEqual(e.updates.map((u) => u.zRaw));
        expect(r.fieldCount).toBe(vc.fields.length);
        expect(Array.from(r.fields.subarray(0, r.updateCount * r.fieldCount))).toEqual(e.updates.flatMap((u) => u.fieldsRaw ?? []));
        const kinds = e.updates.filter((u) => u.kind !== undefined);
        expect(r.kindCount).toBe(kinds.length);
        expect(Array.from(r.kindIds.subarray(0, r.kindCount))).toEqual(kinds.map((u) => u.id));
        expect(Array.from(r.kinds.subarray(0, r.kindCount))).toEqual(kinds.map((u) => u.kind));
        expect(r.attributeCount).toBe(e.attributes.length);
        expect(Array.from(r.attributeVersions.subarray(0, r.attributeCount))).toEqual(e.attributes.map((a) => a.version));
      });

      it(`throws TRUNCATED for every prefix of ${v.name}`, () => {
        const bytes = fromHex(v.hex);
        for (let len = 0; len < bytes.length; len++) {
          const code = codeOf(() => decodePacket(bytes.subarray(0, len), c));
          if (code !== 'ERR_SIGHTLINE_PACKET_TRUNCATED') expect.fail(`length ${len}: ${code}`);
        }
      });

      it(`throws OVERSIZED for ${v.name} plus one byte`, () => {
        const bytes = fromHex(v.hex);
        const longer = new Uint8Array(bytes.length + 1);
        longer.set(bytes);
        const err = errorOf(() => decodePacket(longer, c));
        expect(err.code).toBe('ERR_SIGHTLINE_PACKET_OVERSIZED');
        expect(err.message).toContain(`${bytes.length + 1} bytes`);
        expect(err.message).toContain('1 trailing byte');
      });
    }

    for (const r of vc.rejects) {
      it(`rejects ${r.name}: ${r.code}`, () => {
        const bytes = fromHex(r.hex);
        expect(bytes.length).toBe(r.bytes);
        expect(codeOf(() => decodePacket(bytes, c))).toBe(r.code);
        expect(codeOf(() => decodePacketRaw(bytes, c, createRawPacket()))).toBe(r.code);
      });
    }
  });
}

describe('decodePacketRaw', () => {
  it('reuses the arrays of out', () => {
    const out = createRawPacket();
    expect(out.ids.length).toBe(98);
    expect(out.despawns.length).toBe(296);
    const arrays = [out.despawns, out.ids, out.x, out.y, out.z];
    for (const v of defaults.packets) {
      const r = decodePacketRaw(fromHex(v.hex), config, out);
      expect(r).toBe(out);
      expect([r.despawns, r.ids, r.x, r.y, r.z]).toEqual(arrays);
      expect(r.updateCount).toBe(v.expected.updates.length);
      expect(Array.from(r.x.subarray(0, r.updateCount))).toEqual(v.expected.updates.map((u) => u.xRaw));
      expect(Array.from(r.despawns.subarray(0, r.despawnCount))).toEqual(v.expected.despawns);
    }
  });

  it('createRawPacket refuses a size no packet has', () => {
    for (const bad of [15, 65508, 1e12, NaN, -5, 100.5, '1200' as never]) {
      expect(() => createRawPacket(bad)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(createRawPacket(65507).ids.length).toBe(Math.floor((65507 - 16) / 12));
  });

  it('replaces arrays that are too short', () => {
    const out = createRawPacket(16);
    expect(out.ids.length).toBe(0);
    const v = defaults.packets.find((p) => p.name === 'max-despawns')!;
    const r = decodePacketRaw(fromHex(v.hex), config, out);
    expect(r.ids.length).toBeGreaterThanOrEqual(49);
    expect(r.despawns.length).toBeGreaterThanOrEqual(148);
    expect(Array.from(r.z.subarray(0, r.updateCount))).toEqual(v.expected.updates.map((u) => u.zRaw));
  });

  it('accepts a Node Buffer and a view into a larger buffer', () => {
    const v = defaults.packets.find((p) => p.name === 'despawns-and-updates')!;
    const bytes = fromHex(v.hex);
    expect(decodePacket(Buffer.from(bytes), config).updates).toHaveLength(3);
    const backing = new Uint8Array(bytes.length + 20).fill(0xee);
    backing.set(bytes, 7);
    expect(decodePacket(backing.subarray(7, 7 + bytes.length), config).tick).toBe(1234);
  });
});

describe('rejections', () => {
  const ok = encode(config, { sequence: 1, tick: 2 }, [3], [{ id: 4, x: 5, y: 6, z: 7 }]);

  it('rejects input that is not a Uint8Array', () => {
    // The last two only look like one: a borrowed Symbol.toStringTag, with or without indices.
    const fakes = [
      { [Symbol.toStringTag]: 'Uint8Array', length: 16, 0: 1 },
      Object.assign(Object.create(null), { [Symbol.toStringTag]: 'Uint8Array', length: NaN }),
    ];
    for (const bad of [[1, 0, 0], 'abc', new Uint16Array(16), ok.buffer, null, ...fakes]) {
      const err = errorOf(() => decodePacket(bad as unknown as Uint8Array, config));
      expect(err.code).toBe('ERR_SIGHTLINE_PACKET_NOT_BYTES');
    }
  });

  it('rejects every version but 2', () => {
    for (let version = 0; version < 256; version++) {
      if (version === 2) continue;
      const bytes = ok.slice();
      bytes[0] = version;
      const err = errorOf(() => decodePacket(bytes, config));
      expect(err.code).toBe('ERR_SIGHTLINE_PACKET_VERSION');
      expect(err.message).toContain(String(version));
    }
  });

  it('rejects flags other than events (1), kinds (2) and attributes (4), and attributes where the layout has none', () => {
    for (let flags = 4; flags < 256; flags++) {
      if (flags & 3) continue;
      const bytes = ok.slice();
      bytes[1] = flags;
      expect(codeOf(() => decodePacket(bytes, config))).toBe('ERR_SIGHTLINE_PACKET_INCONSISTENT');
    }
  });

  it('rejects packets longer than 65507 bytes', () => {
    const big = new Uint8Array(65508);
    big[0] = 2;
    expect(codeOf(() => decodePacket(big, config))).toBe('ERR_SIGHTLINE_PACKET_OVERSIZED');
  });

  it('rejects counts larger than the packet', () => {
    const bytes = ok.slice();
    bytes[14] = 0xff;
    bytes[15] = 0xff;
    const err = errorOf(() => decodePacket(bytes, config));
    expect(err.code).toBe('ERR_SIGHTLINE_PACKET_TRUNCATED');
    expect(err.message).toContain('65535 updates');
  });

  it('rejects an id twice in one packet', () => {
    const dup = (despawns: number[], ids: number[]) =>
      encode(config, { sequence: 0, tick: 0 }, despawns, ids.map((id) => ({ id, x: 0, y: 0, z: 0 })));
    for (const bytes of [dup([1, 2, 1], []), dup([], [7, 8, 9, 8]), dup([5], [5]), dup([0xffffffff], [1, 0xffffffff])]) {
      const err = errorOf(() => decodePacket(bytes, config));
      expect(err.code).toBe('ERR_SIGHTLINE_PACKET_INCONSISTENT');
      expect(err.message).toContain('twice');
    }
    // Distinct ids that collide in the id set are fine.
    const many = Array.from({ length: 98 }, (_, i) => i * 65536);
    expect(decodePacket(dup([], many), config).updates).toHaveLength(98);
  });

  it('rejects nonzero bits above the packed position', () => {
    // 2048 m region: x and y take 21 bits, z 20: bits 62 and 63 are unused.
    const c = WorldConfig.build({ regionSize: 2048 });
    const bytes = encode(c, { sequence: 0, tick: 0 }, [], [{ id: 1, x: 0, y: 0, z: 0 }]);
    expect(decodePacket(bytes, c).updates).toHaveLength(1);
    for (const bit of [62, 63]) {
      const bad = bytes.slice();
      bad[16 + 4 + (bit >> 3)] |= 1 << (bit & 7);
      const err = errorOf(() => decodePacket(bad, c));
      expect(err.code).toBe('ERR_SIGHTLINE_PACKET_INCONSISTENT');
      expect(err.message).toContain('bit 62');
    }
  });

  it('rejects z outside the vertical extent', () => {
    // 1000 m: verticalRaw 1024000 takes 20 bits; offsets 1024000 .. 2^20 - 1 are outside.
    const c = WorldConfig.build({ verticalExtent: 1000 });
    const top = encode(c, { sequence: 0, tick: 0 }, [], [{ id: 1, x: 0, y: 0, z: 511999 }]);
    expect(decodePacket(top, c).updates[0].z).toBe(511999 / 1024);
    const bad = top.slice();
    const view = new DataView(bad.buffer);
    view.setBigUint64(20, 1024000n << 44n, true);
    const err = errorOf(() => decodePacket(bad, c));
    expect(err.code).toBe('ERR_SIGHTLINE_PACKET_INCONSISTENT');
    expect(err.message).toContain('512000');
  });

  it('rejects a packet whose position layout disagrees with the configuration', () => {
    const c = WorldConfig.build({ regionSize: 2048 });
    const bytes = encode(config, { sequence: 0, tick: 0 }, [], [{ id: 1, x: 0, y: 0, z: 524287 }]);
    expect(codeOf(() => decodePacket(bytes, c))).toBe('ERR_SIGHTLINE_PACKET_INCONSISTENT');
  });
});

describe('round trip', () => {
  it('decodes what a wire-format encoder writes, for random configurations and packets', () => {
    const seed = Number(process.env.SIGHTLINE_SEED ?? (Date.now() ^ (Math.random() * 2 ** 32)) >>> 0);
    const rand = rng(seed);
    const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
    const out = createRawPacket();
    try {
      for (let round = 0; round < 300; round++) {
        const regionShift = int(10, 26);
        const regionSize = 2 ** (regionShift - 10);
        const verticalRaw = rand() < 0.3 ? 2 ** int(1, 26) : int(2, 2 ** 26);
        // Fields: up to 5 of 1 to 31 bits, at most 64 together; attributes half the time.
        const fields: { name: string; bits: number; min?: number; max?: number }[] = [];
        for (let k = int(0, 5), total = 0; k > 0; k--) {
          const bits = int(1, Math.min(31, 64 - total));
          if (bits < 1 || total + bits > 64) break;
          total += bits;
          fields.push(rand() < 0.5 ? { name: `f${fields.length}`, bits } : { name: `f${fields.length}`, bits, min: -rand() * 100, max: rand() * 1000 + 1 });
        }
        const attributeBytes = rand() < 0.5 ? 0 : int(0, 255);
        const c = WorldConfig.build({
          regionSize,
          verticalExtent: verticalRaw / 1024,
          viewRadius: regionSize / 4,
          maxSpeed: 0.001,
          fields,
          attributeBytes,
          payloadBytes: 65507,
        });
        expect(c.verticalRaw).toBe(verticalRaw);
        const zHalf = Math.floor(verticalRaw / 2);
        const used = new Set<number>();
        const freshId = () => {
          for (;;) {
            const id = rand() < 0.1 ? [0, 1, 0xffffffff, 0x80000000][int(0, 3)] : int(0, 0xffffffff);
            if (!used.has(id)) {
              used.add(id);
              return id;
            }
          }
        };
        const coord = (limit: number) => (rand() < 0.15 ? [0, limit - 1][int(0, 1)] : int(0, limit - 1));
        const despawns = Array.from({ length: int(0, 40) }, freshId);
        const updates = Array.from({ length: int(0, 120) }, () => ({
          id: freshId(),
          x: coord(c.regionRaw),
          y: coord(c.regionRaw),
          // Mostly inside the extent; sometimes outside, where the encoder clamps.
          z: rand() < 0.1 ? int(-zHalf - 5000, verticalRaw - zHalf + 5000) : coord(verticalRaw) - zHalf,
          fields: c.fields.map((f) => (rand() < 0.2 ? [0, 2 ** f.bits - 1][int(0, 1)] : int(0, 2 ** f.bits - 1))),
        }));
        const kinds = updates.filter(() => rand() < 0.2).map((u): [number, number] => [u.id, int(0, 65535)]);
        const attributes =
          attributeBytes === 0
            ? []
            : [...updates.filter(() => rand() < 0.2).map((u) => u.id), ...Array.from({ length: int(0, 5) }, freshId)].map(
                (id): [number, number, Uint8Array] => [id, int(1, 0xffffffff), Uint8Array.from({ length: int(0, attributeBytes) }, () => int(0, 255))],
              );
        const header = { sequence: int(0, 65535), tick: int(0, 0xffffffff) };
        const bytes = encodePacket(c, { ...header, despawns, updates, kinds, attributes });

        const p = decodePacket(bytes, c);
        expect(p.sequence).toBe(header.sequence);
        expect(p.tick).toBe(header.tick);
        expect(Array.from(p.despawns)).toEqual(despawns);
        const want = updates.map((u) => ({ id: u.id, ...expectedRaw(c, u) }));
        const kindOf = new Map(kinds);
        expect(p.updates).toEqual(
          want.map((u, i) => ({
            id: u.id,
            x: u.x / 1024,
            y: u.y / 1024,
            z: u.z / 1024,
            ...(c.fields.length ? { fields: Object.fromEntries(c.fields.map((f, k) => [f.name, c.fieldFromRaw(f.name, updates[i].fields[k])])) } : {}),
            ...(kindOf.has(u.id) ? { kind: kindOf.get(u.id) } : {}),
          })),
        );
        expect(p.attributes.map((a) => [a.id, a.version, Array.from(a.bytes)])).toEqual(attributes.map(([id, v, b]) => [id, v, Array.from(b)]));

        const r = decodePacketRaw(bytes, c, out);
        const n = r.updateCount;
        expect(Array.from(r.ids.subarray(0, n))).toEqual(want.map((u) => u.id));
        expect(Array.from(r.x.subarray(0, n))).toEqual(want.map((u) => u.x));
        expect(Array.from(r.y.subarray(0, n))).toEqual(want.map((u) => u.y));
        expect(Array.from(r.z.subarray(0, n))).toEqual(want.map((u) => u.z));
        expect(Array.from(r.fields.subarray(0, n * c.fields.length))).toEqual(updates.flatMap((u) => u.fields));
        for (let i = 0; i < n; i++) {
          expect(r.z[i]).toBeGreaterThanOrEqual(-zHalf);
          expect(r.z[i]).toBeLessThan(verticalRaw - zHalf);
        }
      }
    } catch (e) {
      throw new Error(`round trip failed with seed ${seed} (rerun with SIGHTLINE_SEED=${seed}): ${(e as Error).message}`, {
        cause: e,
      });
    }
  });
});

describe('arguments', () => {
  const ok = encode(config, { sequence: 1, tick: 2 }, [3], [{ id: 4, x: 5, y: 6, z: 7 }]);
  const layout = { regionRaw: config.regionRaw, regionShift: config.regionShift, verticalRaw: config.verticalRaw, zBits: config.zBits, quantShift: config.quantShift };

  it('a config without the five numeric layout fields is ERR_SIGHTLINE_INVALID_ARGUMENT, never a TypeError', () => {
    const bad: unknown[] = [undefined, null, 5, 'config', {}, { ...layout, zBits: undefined }, { ...layout, quantShift: '0' }, { ...layout, regionShift: NaN }, { ...layout, regionRaw: -1 }, { ...layout, verticalRaw: 1.5 }];
    for (const c of bad) {
      for (const decode of [() => decodePacket(ok, c as never), () => decodePacketRaw(ok, c as never), () => decodePacketRaw(ok, c as never, createRawPacket())]) {
        const err = errorOf(decode);
        expect(err.code).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
        expect(err.message).toMatch(/^config/);
      }
    }
    expect(errorOf(() => decodePacket(ok, {} as never)).message).toBe(
      'config.regionRaw must be an integer from 0 to 2^32 - 1 (a WorldConfig or a packet layout { regionRaw, regionShift, verticalRaw, zBits, quantShift }), received undefined',
    );
    expect(decodePacket(ok, layout).updates).toEqual(decodePacket(ok, config).updates);
  });

  it('a layout whose fields do not relate as a WorldConfig\'s is ERR_SIGHTLINE_INVALID_ARGUMENT', () => {
    const bad = [
      { regionRaw: 1, regionShift: 40, verticalRaw: 1, zBits: 64, quantShift: 99 },
      { ...layout, regionRaw: layout.regionRaw + 1 },
      { ...layout, regionShift: 31, regionRaw: 2 ** 31 },
      { ...layout, verticalRaw: 2 ** layout.zBits + 1 },
      { ...layout, verticalRaw: 0 },
      { ...layout, quantShift: layout.regionShift + 1 },
      { regionRaw: 2 ** 30, regionShift: 30, verticalRaw: 2 ** 30, zBits: 30, quantShift: 0 },
      // Fits 64 bits, but drops bits a WorldConfig with this region and extent keeps.
      { regionRaw: 4194304, regionShift: 22, verticalRaw: 1048576, zBits: 20, quantShift: 5 },
      { ...layout, quantShift: layout.quantShift + 1 },
      // zBits larger than verticalRaw needs.
      { ...layout, zBits: layout.zBits + 1 },
    ];
    for (const c of bad) {
      const err = errorOf(() => decodePacket(ok, c));
      expect(err.code).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      expect(err.message).toMatch(/^config is not a packet layout a WorldConfig builds: /);
    }
    // Every layout a WorldConfig builds passes, the largest ones included.
    for (const input of [{}, { regionSize: 65536, verticalExtent: 65536 }, { regionSize: 64, viewRadius: 32, verticalExtent: 1 / 512 }]) {
      const c = WorldConfig.build(input);
      expect(() => decodePacket(encode(c, { sequence: 1, tick: 2 }, [], []), c)).not.toThrow();
    }
  });

  it('an out that is not a RawPacket is ERR_SIGHTLINE_INVALID_ARGUMENT and is left as it was', () => {
    const good = createRawPacket();
    const bad: Record<string, unknown>[] = [
      {},
      { ...good, events: undefined },
      { ...good, ids: new Int32Array(98) },
      { ...good, x: [0, 0] },
      { ...good, despawns: null },
      { ...good, z: new Float64Array(98) },
    ];
    for (const out of bad) {
      const before = { ...out };
      const err = errorOf(() => decodePacketRaw(ok, config, out as never));
      expect(err.code).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      expect(err.message).toMatch(/^out must be a RawPacket/);
      expect(out).toEqual(before);
    }
    for (const out of [null, 5, 'x']) {
      expect(errorOf(() => decodePacketRaw(ok, config, out as never)).code).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    }
    expect(decodePacketRaw(ok, config, good).updateCount).toBe(1);
  });
});
