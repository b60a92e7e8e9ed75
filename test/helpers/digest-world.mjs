// One seeded world (a crowd in one cell and a sparse rest, moving, spawning and despawning, viewers
// with and without acknowledgements, small payloads so that the choice of updates has to choose)
// run for 150 ticks on 2 threads. Prints, as one JSON line, the kernels in use, whether the addon
// is the profile-guided build, the packet and record counts, and a SHA-256 of every packet's bytes
// in order. Two builds or kernel sets that agree on the digest wrote the same bytes.
//
//   node test/helpers/digest-world.mjs <path of sightline's dist/lib/index.js>
//
// Used by test/kernels.test.ts (vector against portable kernels) and scripts/check-pack.sh (the
// packed profile-guided prebuild against the plain build).
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node test/helpers/digest-world.mjs <path of sightline\'s dist/lib/index.js>\n');
  process.exit(2);
}
const { World, WorldConfig, kernels, profileGuided } = await import(pathToFileURL(resolve(entry)).href);
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
console.log(JSON.stringify({ kernels, profileGuided, packets, records: chosen, digest: hash.digest('hex') }));
