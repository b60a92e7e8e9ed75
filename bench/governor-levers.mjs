// What a tick governor level change costs the JavaScript thread: the crowd-50k herd (50,000
// entities, 8,192 viewers), one tick run, then GovernorLevers.apply through levels 1 to 5 and
// back to 0, again and again. A level change is applied before a tick's step, so its time is
// time that tick starts late. Loads the build in --dist, so the same script measures two builds
// in turn:
//
//   node bench/governor-levers.mjs [--dist dist] [--rounds 5] [--json]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command, Option } from 'commander';
import { integerOption } from '../dist/tools/cli/util.js';
import { median } from './measure.mjs';

const o = new Command('governor-levers')
  .description('time GovernorLevers.apply on the crowd-50k herd, level by level')
  .option('--dist <dir>', 'the build to load (its lib/ and tools/)', 'dist')
  .addOption(new Option('--rounds <n>', 'rounds of levels 1, 2, 3, 4, 5, 0').argParser(integerOption(1, 1000)).default(5))
  .option('--json', 'one JSON object on stdout', false)
  .parse()
  .opts();
const dist = resolve(o.dist);
const lib = (p) => import(pathToFileURL(resolve(dist, p)).href);
const { World, WorldConfig, GovernorLevers, readGovernor } = await lib('lib/index.js');
const { createHerd } = await lib('tools/herd/index.js');

const world = new World(WorldConfig.build(), { capacity: 50_000, threads: 2 });
const herd = createHerd(world, { scenario: 'crowd-50k', seed: 1 });
herd.step();
const last = await world.tick();
const levers = new GovernorLevers(world, readGovernor(undefined, 20));
const LEVELS = [1, 2, 3, 4, 5, 0];
const times = new Map(LEVELS.map((l) => [l, []]));
for (let r = 0; r < o.rounds; r++) {
  for (const level of LEVELS) {
    const t = performance.now();
    levers.apply(level, last);
    times.get(level).push(performance.now() - t);
  }
}
world.close();
const result = { dist: o.dist, viewers: 8192, rounds: o.rounds, medianMs: Object.fromEntries(LEVELS.map((l) => [`to ${l}`, +median(times.get(l)).toFixed(2)])) };
if (o.json) console.log(JSON.stringify(result));
else {
  console.log(`GovernorLevers.apply, crowd-50k (8,192 viewers), ${o.rounds} rounds, median ms per level change (build ${o.dist}):`);
  for (const l of LEVELS) console.log(`  to level ${l}: ${median(times.get(l)).toFixed(2)} ms`);
}
