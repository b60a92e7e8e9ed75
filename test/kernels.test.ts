import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = pathToFileURL(join(root, 'dist', 'lib', 'index.js')).href;

// One seeded world (a crowd in one cell and a sparse rest, moving, spawning and despawning, viewers
// with and without acknowledgements, small payloads so that the choice of updates has to choose)
// run for 150 ticks on 2 threads; prints the kernels in use and
// a SHA-256 of every packet's bytes in order.
const script = `
import { createHash } from 'node:crypto';
const { World, WorldConfig, kernels } = await import(${JSON.stringify(entry)});
let seed = 7;
const rnd = () => {  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const config = WorldConfig.build({ regionSize: 1024, viewRadius: 90, ghostCap: 96, walkCap: 120 });
const world = new World(config, { capacity: 3000, threads: 2 });
const live = [];
for (let i = 0; i < 2400; i++) {
  const crowd = i < 1200;
  live.push(world.spawn({ x: crowd ? 500 + rnd() * 60 : rnd() * 1024, y: crowd ? 500 + rnd() * 60 : rnd() * 1024, z: 0 }));
}
for (let i = 0; i < 400; i++) world.addViewer(live[i * 3], { acks: i % 2 === 0, payloadBytes: i % 3 === 0 ? 400 : 1200 });
const hash = createHash('sha256');
let packets = 0, chosen = 0;
for (let t = 0; t < 150; t++) {
  const { x, y } = world.positions;
  for (const id of live) {
    if (rnd() < 0.6) {
      const s = world.slotOf(id);
      x[s] += Math.round((rnd() - 0.5) * 2000);
      y[s] += Math.round((rnd() - 0.5) * 2000);
    }
  }
  for (let k = 0; k < 4; k++) {
    const i = 1300 + Math.floor(rnd() * (live.length - 1300));
    world.despawn(live[i]);
    live[i] = world.spawn({ x: rnd() * 1024, y: rnd() * 1024, z: 0 });
  }
  const result = await world.tick();
  chosen += result.stats.records;
  for (const p of result.packets) {
    hash.update(Uint32Array.of(p.viewer));
    hash.update(p.bytes);
    packets++;
  }
}
console.log(JSON.stringify({ kernels, packets, records: chosen, digest: hash.digest('hex') }));
`;

function runWorld(env: Record<string, string | undefined>): { kernels: string; packets: number; records: number; digest: string } {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

describe('vector and portable kernels', () => {
  it('write the same packets, byte for byte; SIGHTLINE_SIMD=off selects the portable ones', () => {
    const portable = runWorld({ SIGHTLINE_SIMD: 'off' });
    const native = runWorld({ SIGHTLINE_SIMD: undefined });
    expect(portable.kernels).toBe('portable');
    // 'avx512' where this CPU has AVX-512; on other CPUs both runs use the portable loops.
    expect(['avx512', 'portable']).toContain(native.kernels);
    expect(portable.packets).toBeGreaterThan(40_000);
    expect(portable.records).toBeGreaterThan(1_000_000);
    expect(native.packets).toBe(portable.packets);
    expect(native.digest).toBe(portable.digest);
  });
});
