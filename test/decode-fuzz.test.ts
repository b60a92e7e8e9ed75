// Decoder fuzzing, version 2: random and mutated packets either decode or throw a coded
// SightlineError (ERR_SIGHTLINE_PACKET_...), never anything else; a packet that decodes is
// canonical (encoding what was decoded gives back its bytes).
import { describe, it, expect } from 'vitest';
import { WorldConfig } from '../lib/config.js';
import { createRawPacket, decodePacketRaw, type RawPacket } from '../lib/decode.js';
import { SightlineError } from '../lib/errors.js';
import { rng, withSeed } from './helpers/model.js';
import { encode, type WireLayout } from './helpers/wire.js';

const CONFIGS = [
  WorldConfig.build(),
  WorldConfig.build({
    fields: [{ name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI }, { name: 'anim', bits: 5 }, { name: 'health', bits: 8 }],
    attributeBytes: 32,
    eventReserveBytes: 64,
  }),
  WorldConfig.build({ regionSize: 65536, fields: [{ name: 'a', bits: 31 }, { name: 'b', bits: 31 }, { name: 'c', bits: 2 }], attributeBytes: 255 }),
];

// Re-encodes a decoded packet: a canonical packet comes back byte for byte.
function reencode(c: WireLayout, r: RawPacket): Uint8Array {
  const fc = r.fieldCount;
  return encode(c, {
    sequence: r.sequence,
    tick: r.tick,
    ack: r.ack,
    ackBits: r.ackBits,
    flags: r.flags,
    events: r.events.length ? { first: r.events[0].sequence, bytes: r.events.map((e) => e.bytes) } : undefined,
    despawns: Array.from(r.despawns.subarray(0, r.despawnCount)),
    updates: Array.from({ length: r.updateCount }, (_, i) => ({
      id: r.ids[i],
      x: r.x[i],
      y: r.y[i],
      z: r.z[i],
      fields: Array.from(r.fields.subarray(i * fc, i * fc + fc)),
    })),
    kinds: Array.from({ length: r.kindCount }, (_, i): [number, number] => [r.kindIds[i], r.kinds[i]]),
    attributes: Array.from({ length: r.attributeCount }, (_, i): [number, number, Uint8Array] => [r.attributeIds[i], r.attributeVersions[i], r.attributes[i]]),
  });
}

// A valid packet of config c, random in every section.
function validPacket(c: WorldConfig, r: () => number): Uint8Array {
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const ids = new Set<number>();
  const fresh = () => {
    for (;;) {
      const id = int(0, 0xffffffff);
      if (!ids.has(id)) return ids.add(id), id;
    }
  };
  const zHalf = Math.floor(c.verticalRaw / 2);
  const despawns = Array.from({ length: int(0, 6) }, fresh);
  const updates = Array.from({ length: int(0, 8) }, () => ({
    id: fresh(),
    x: int(0, c.regionRaw - 1),
    y: int(0, c.regionRaw - 1),
    z: int(0, c.verticalRaw - 1) - zHalf,
    fields: c.fields.map((f) => int(0, 2 ** f.bits - 1)),
  }));
  const kinds = updates.filter(() => r() < 0.3).map((u): [number, number] => [u.id, int(0, 65535)]);
  const attributes =
    c.attributeBytes === 0
      ? []
      : [...updates.filter(() => r() < 0.3).map((u) => u.id), ...Array.from({ length: int(0, 2) }, fresh)].map(
          (id): [number, number, Uint8Array] => [id, int(1, 0xffffffff), Uint8Array.from({ length: int(0, Math.min(8, c.attributeBytes)) }, () => int(0, 255))],
        );
  const events = r() < 0.3 ? { first: int(0, 65535), bytes: Array.from({ length: int(1, 3) }, () => Uint8Array.from({ length: int(1, 5) }, () => int(0, 255))) } : undefined;
  return encode(c, { sequence: int(0, 65535), tick: int(0, 0xffffffff), events, despawns, updates, kinds, attributes });
}

function attempt(bytes: Uint8Array, c: WorldConfig, out: RawPacket, counts: { ok: number; codes: Map<string, number> }): void {
  let r: RawPacket;
  try {
    r = decodePacketRaw(bytes, c, out);
  } catch (e) {
    if (!(e instanceof SightlineError) || !e.code.startsWith('ERR_SIGHTLINE_PACKET_')) throw e;
    counts.codes.set(e.code, (counts.codes.get(e.code) ?? 0) + 1);
    return;
  }
  counts.ok++;
  expect(Array.from(reencode(c, r))).toEqual(Array.from(bytes));
}

describe('decoder fuzzing (version 2)', () => {
  it('random packets after a version 2 header: a coded error or a canonical packet, never a crash', async () => {
    await withSeed(2020, (seed) => {
      const r = rng(seed);
      const out = createRawPacket();
      const counts = { ok: 0, codes: new Map<string, number>() };
      for (let i = 0; i < 20_000; i++) {
        const c = CONFIGS[i % CONFIGS.length];
        const len = Math.floor(r() * 80);
        const bytes = Uint8Array.from({ length: len }, () => Math.floor(r() * 256));
        if (len > 0 && r() < 0.9) bytes[0] = 2;
        if (len > 1 && r() < 0.7) bytes[1] &= 7;
        // Small counts, so that some of them fit.
        if (len > 15 && r() < 0.7) (bytes[12] %= 4), (bytes[13] = 0), (bytes[14] %= 4), (bytes[15] = 0);
        attempt(bytes, c, out, counts);
      }
      expect(counts.codes.size).toBeGreaterThanOrEqual(3);
    });
  });

  it('mutated valid packets (a byte changed, cut, inserted or removed): a coded error or a canonical packet', async () => {
    await withSeed(2021, (seed) => {
      const r = rng(seed);
      const out = createRawPacket(16);
      const counts = { ok: 0, codes: new Map<string, number>() };
      for (let i = 0; i < 5_000; i++) {
        const c = CONFIGS[i % CONFIGS.length];
        const good = validPacket(c, r);
        attempt(good, c, out, counts);  // the unmutated one decodes
        expect(counts.ok).toBeGreaterThan(0);
        for (let m = 0; m < 4; m++) {
          let bytes = good.slice();
          const at = Math.floor(r() * bytes.length);
          const kind = Math.floor(r() * 4);
          if (kind === 0) bytes[at] ^= 1 << Math.floor(r() * 8);
          else if (kind === 1) bytes = bytes.subarray(0, at);
          else if (kind === 2) bytes = Uint8Array.from([...bytes.subarray(0, at), Math.floor(r() * 256), ...bytes.subarray(at)]);
          else bytes = Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)]);
          attempt(bytes, c, out, counts);
        }
      }
      for (const code of ['ERR_SIGHTLINE_PACKET_TRUNCATED', 'ERR_SIGHTLINE_PACKET_OVERSIZED', 'ERR_SIGHTLINE_PACKET_INCONSISTENT', 'ERR_SIGHTLINE_PACKET_VERSION'])
        expect(counts.codes.get(code) ?? 0).toBeGreaterThan(0);
    });
  });
});
