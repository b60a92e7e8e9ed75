// What a new world's first ticks cost: the crowd-50k herd (50,000 entities, 8,192 viewers) made
// in a fresh process, then its first --ticks ticks, each timed from the `world.tick()` call until
// it resolves (the call itself: what the tick allocates on the JavaScript thread before the pass
// starts), with the native pass and the page faults the process took. Each round runs in a child
// process of its own, so every round is a first start. Loads the build in --dist, so the same
// script measures two builds in turn:
//
//   node bench/cold-start.mjs [--dist dist] [--rounds 3] [--ticks 5] [--json]
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, Option } from 'commander';
import { integerOption } from '../dist/tools/cli/util.js';
import { median } from './measure.mjs';

const o = new Command('cold-start')
  .description("time a new crowd-50k world's first ticks, each round in a fresh process")
  .option('--dist <dir>', 'the build to load (its lib/ and tools/)', 'dist')
  .addOption(new Option('--rounds <n>', 'fresh processes').argParser(integerOption(1, 100)).default(3))
  .addOption(new Option('--ticks <n>', 'ticks timed in each').argParser(integerOption(1, 1000)).default(5))
  .option('--json', 'one JSON object on stdout', false)
  .addOption(new Option('--child').hideHelp())
  .parse()
  .opts();
const dist = resolve(o.dist);

if (o.child) {
  const lib = (p) => import(pathToFileURL(resolve(dist, p)).href);
  const { World, WorldConfig } = await lib('lib/index.js');
  const { createHerd } = await lib('tools/herd/index.js');
  const setup0 = performance.now();
  const world = new World(WorldConfig.build(), { capacity: 50_000, threads: 2 });
  const herd = createHerd(world, { scenario: 'crowd-50k', seed: 1 });
  const setupMs = performance.now() - setup0;
  const ticks = [];
  for (let i = 0; i < o.ticks; i++) {
    herd.step();
    const faults0 = process.resourceUsage().minorPageFault;
    const t0 = performance.now();
    const pending = world.tick();
    const callMs = performance.now() - t0;
    const r = await pending;
    const tickMs = performance.now() - t0;
    ticks.push({ tickMs, callMs, passMs: r.stats.passMicros / 1000, pageFaults: process.resourceUsage().minorPageFault - faults0 });
    await new Promise((done) => setTimeout(done, 20));
  }
  world.close();
  console.log(JSON.stringify({ setupMs, ticks }));
} else {
  const runs = [];
  for (let r = 0; r < o.rounds; r++) {
    const c = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', '--dist', dist, '--ticks', String(o.ticks)], { encoding: 'utf8' });
    if (c.status !== 0) throw new Error(`round ${r + 1} failed: ${c.stderr}`);
    runs.push(JSON.parse(c.stdout));
  }
  const at = (i, k) => +median(runs.map((x) => x.ticks[i][k])).toFixed(2);
  const ticks = Array.from({ length: o.ticks }, (_, i) => ({ tick: i, tickMs: at(i, 'tickMs'), callMs: at(i, 'callMs'), passMs: at(i, 'passMs'), pageFaults: at(i, 'pageFaults') }));
  const result = { dist: o.dist, rounds: o.rounds, setupMs: +median(runs.map((x) => x.setupMs)).toFixed(1), ticks };
  if (o.json) console.log(JSON.stringify(result));
  else {
    console.log(`crowd-50k, a new world's first ${o.ticks} ticks, median of ${o.rounds} fresh processes (build ${o.dist}); set-up ${result.setupMs} ms`);
    console.log('tick  tick() until resolved  the call  native pass  page faults');
    for (const t of ticks) console.log(`${String(t.tick).padStart(4)}  ${t.tickMs.toFixed(1).padStart(19)} ms ${t.callMs.toFixed(1).padStart(6)} ms ${t.passMs.toFixed(1).padStart(8)} ms ${String(t.pageFaults).padStart(12)}`);
  }
}
