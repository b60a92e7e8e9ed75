// JS heap over 10,000 warm ticks: reads every packet each tick, as a server would, and compares
// the heap after a full GC at tick 1,000 and at tick 10,000. Run: node --expose-gc bench/memory.mjs
// (after npm run build). Prints one JSON object.
import { World, WorldConfig } from '../dist/lib/index.js';
import { createHerd } from '../dist/tools/herd/index.js';

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc bench/memory.mjs');
  process.exit(2);
}
const ticks = Number(process.argv[2] ?? 10_000);
if (!Number.isInteger(ticks) || ticks <= 1000) {
  console.error(`usage: node --expose-gc bench/memory.mjs [ticks]: ticks must be an integer above 1000 (the heap is compared at tick 1,000 and at the last), received ${process.argv[2]}`);
  process.exit(2);
}
const world = new World(WorldConfig.build(), { capacity: 4096, threads: 2 });
const herd = createHerd(world, { scenario: 'uniform', entities: 4000, viewers: 1000, seed: 3 });
let bytes = 0;
const heap = [];
for (let t = 1; t <= ticks; t++) {
  herd.step();
  const r = await world.tick();
  for (let i = 0; i < r.count; i++) bytes += r.bytesAt(i).length;
  if (t === 1000 || t === ticks) {
    globalThis.gc();
    heap.push(process.memoryUsage());
  }
  if (t % 1000 === 0) process.stderr.write(`tick ${t}/${ticks}\r`);
}
process.stderr.write('\n'); // end the progress line before the JSON
const [a, b] = heap;
console.log(
  JSON.stringify({
    ticks,
    viewers: 1000,
    entities: 4000,
    heapUsedAt1000: a.heapUsed,
    heapUsedAtEnd: b.heapUsed,
    heapGrowthBytes: b.heapUsed - a.heapUsed,
    heapGrowthPerTickBytes: (b.heapUsed - a.heapUsed) / (ticks - 1000),
    rssGrowthBytes: b.rss - a.rss,
    externalGrowthBytes: b.external - a.external,
    bytesRead: bytes,
  }),
);
