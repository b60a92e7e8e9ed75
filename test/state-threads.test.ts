// The same seeded world with fields, kinds and attributes in use (a crowd, movement, churn,
// viewers with and without acks) writes the same packets, byte for byte, on 1, 2 and 8 threads.
import { createHash } from 'node:crypto';
import { describe, it, expect } from 'vitest';
import { World, WorldConfig } from '../lib/index.js';
import { randInt, rng } from './helpers/model.js';

interface Run {
  digest: string;
  packets: number;
  records: number;
  kinds: number;
  attributes: number;
}

async function run(threads: number): Promise<Run> {
  const r = rng(99);
  const c = WorldConfig.build({
    regionSize: 1024,
    viewRadius: 90,
    ghostCap: 96,
    walkCap: 120,
    fields: [{ name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI }, { name: 'anim', bits: 6 }, { name: 'health', bits: 8 }],
    attributeBytes: 32,
    attributeRepeatPasses: 7,
  });
  const w = new World(c, { capacity: 2000, threads });
  const live: number[] = [];
  const name = (k: number) => new TextEncoder().encode(`entity ${k}`.repeat(1 + (k % 3)).slice(0, 32));
  const spawn = (x: number, y: number) => w.spawn({ x, y }, { kind: randInt(r, 0, 4), attributes: r() < 0.8 ? name(randInt(r, 0, 1e6)) : undefined });
  for (let i = 0; i < 1600; i++) {
    const crowd = i < 800;
    live.push(spawn(crowd ? 500 + r() * 60 : r() * 1024, crowd ? 500 + r() * 60 : r() * 1024));
  }
  const viewers: number[] = [];
  for (let i = 0; i < 300; i++) {
    w.addViewer(live[i * 3], { acks: i % 2 === 0, payloadBytes: i % 3 === 0 ? 400 : 1200 });
    viewers.push(live[i * 3]);
  }
  // Viewers with acks acknowledge every third packet, one tick late (some never reach them).
  let acks: [number, number][] = [];
  const hash = createHash('sha256');
  let packets = 0;
  let records = 0;
  let kinds = 0;
  let attributes = 0;
  for (let t = 0; t < 80; t++) {
    for (const id of live) {
      const s = w.slotOf(id);
      if (r() < 0.5) w.positions.x[s] += randInt(r, -1000, 1000);
      if (r() < 0.1) w.fields.yaw[s] = randInt(r, 0, 1023);
      if (r() < 0.05) w.fields.anim[s] = randInt(r, 0, 63);
      if (r() < 0.02) w.fields.health[s] = randInt(r, -5, 300);
      if (r() < 0.005) w.setKind(id, randInt(r, 0, 4));
      if (r() < 0.01) w.setAttributes(id, name(randInt(r, 0, 1e6)));
    }
    for (let k = 0; k < 3; k++) {
      const i = 1000 + randInt(r, 0, live.length - 1000);
      w.despawn(live[i]);
      live[i] = spawn(r() * 1024, r() * 1024);
    }
    for (const [v, seq] of acks) if (w.hasViewer(v)) w.acknowledge(v, seq, 0xffffffff);
    acks = [];
    const res = await w.tick();
    records += res.stats.records;
    kinds += res.stats.kinds;
    attributes += res.stats.attributes;
    for (const p of res.packets) {
      hash.update(Uint32Array.of(p.viewer));
      hash.update(p.bytes);
      packets++;
      const seq = p.bytes[2] | (p.bytes[3] << 8);
      if (viewers.indexOf(p.viewer) % 2 === 0 && seq % 3 === 0) acks.push([p.viewer, seq]);
    }
  }
  expect(viewers.length).toBe(300);
  w.close();
  return { digest: hash.digest('hex'), packets, records, kinds, attributes };
}

describe('packets with state beyond positions', () => {
  it('are byte-identical for 1, 2 and 8 threads', async () => {
    const one = await run(1);
    expect(one.packets).toBeGreaterThan(20_000);
    expect(one.records).toBeGreaterThan(100_000);
    expect(one.kinds).toBeGreaterThan(1_000);
    expect(one.attributes).toBeGreaterThan(10_000);
    expect(await run(2)).toEqual(one);
    expect(await run(8)).toEqual(one);
  });
});
