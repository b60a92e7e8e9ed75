// What a tick governor level change costs the JavaScript thread: the crowd-50k herd (50,000
// entities, 8,192 viewers), one tick run, then GovernorLevers.apply through levels 1 to 5 and
// back to 0, again and again. A level change is applied before a tick's step, so its time is
// time that tick starts late. Each round is a fresh process (a new world): its first sweep of
// levels is the cold cost (the first level change of a new world, with its code not yet
// optimized), the sweeps after it the warm cost. Several builds (--dist, comma-separated) are
// measured in turn, round by round (A B A B ...), so that a noisy machine weighs on each alike:
//
//   node bench/governor-levers.mjs [--dist dist[,other-dist]] [--rounds 3] [--sweeps 5] [--json]
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, Option } from 'commander';
import { integerOption } from '../dist/tools/cli/util.js';
import { median } from './measure.mjs';

const o = new Command('governor-levers')
  .description('time GovernorLevers.apply on the crowd-50k herd, level by level, cold and warm')
  .option('--dist <dirs>', 'the builds to load (their lib/ and tools/), comma-separated', 'dist')
  .addOption(new Option('--rounds <n>', 'fresh processes a build').argParser(integerOption(1, 100)).default(3))
  .addOption(new Option('--sweeps <n>', 'warm sweeps of levels 1, 2, 3, 4, 5, 0 after the first').argParser(integerOption(1, 1000)).default(5))
  .option('--json', 'one JSON object on stdout', false)
  .addOption(new Option('--child').hideHelp())
  .parse()
  .opts();
const LEVELS = [1, 2, 3, 4, 5, 0];
const round2 = (x) => +x.toFixed(2);

if (o.child) {
  const dist = resolve(o.dist);
  const lib = (p) => import(pathToFileURL(resolve(dist, p)).href);
  const { World, WorldConfig, GovernorLevers, readGovernor } = await lib('lib/index.js');
  const { createHerd } = await lib('tools/herd/index.js');
  const world = new World(WorldConfig.build(), { capacity: 50_000, threads: 2 });
  const herd = createHerd(world, { scenario: 'crowd-50k', seed: 1 });
  herd.step();
  const last = await world.tick();
  const levers = new GovernorLevers(world, readGovernor(undefined, 20));
  const sweeps = [];
  for (let r = 0; r <= o.sweeps; r++) {
    const times = [];
    for (const level of LEVELS) {
      const t = performance.now();
      levers.apply(level, last);
      times.push(performance.now() - t);
    }
    sweeps.push(times);
  }
  // The settings served after the last sweep (level 0: the game's own), a check that both builds did the same.
  const settings = Array.from(world.viewerIds().slice(0, 4), (v) => world.servedSettings(v).sendPeriod);
  const viewers = world.viewerCount;
  world.close();
  console.log(JSON.stringify({ viewers, sweeps, settings }));
} else {
  const dists = o.dist.split(',');
  const runs = new Map(dists.map((d) => [d, []]));
  for (let r = 0; r < o.rounds; r++) {
    for (const d of dists) {
      const c = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', '--dist', resolve(d), '--sweeps', String(o.sweeps)], { encoding: 'utf8' });
      if (c.status !== 0) throw new Error(`${d} round ${r + 1} failed: ${c.stderr}`);
      runs.get(d).push(JSON.parse(c.stdout));
    }
  }
  const results = dists.map((d) => {
    const rs = runs.get(d);
    const level = (i) => ({
      coldMs: round2(median(rs.map((x) => x.sweeps[0][i]))),
      warmMs: round2(median(rs.map((x) => median(x.sweeps.slice(1).map((s) => s[i]))))),
    });
    return { dist: d, rounds: o.rounds, sweeps: o.sweeps, levels: Object.fromEntries(LEVELS.map((l, i) => [`to ${l}`, level(i)])) };
  });
  if (o.json) console.log(JSON.stringify(results));
  else {
    console.log(`GovernorLevers.apply, crowd-50k (8,192 viewers), ${o.rounds} fresh processes a build (in turn), ms per level change, median:`);
    dists.forEach((d, i) => console.log(`  build ${String.fromCharCode(65 + i)}: ${d}`));
    console.log(`  ${'level change'.padEnd(14)}${dists.map((_, i) => `${String.fromCharCode(65 + i)} cold`.padStart(10) + `${String.fromCharCode(65 + i)} warm`.padStart(10)).join('')}`);
    for (const l of LEVELS) {
      const k = `to ${l}`;
      console.log(`  ${k.padEnd(14)}${results.map((r) => String(r.levels[k].coldMs).padStart(10) + String(r.levels[k].warmMs).padStart(10)).join('')}`);
    }
  }
}
