// Worlds under a herd (bench/run.mjs's pass and scaling sections): pass, snapshot and tick wall
// times over the measured ticks.
import { World, WorldConfig } from '../dist/lib/index.js';
import { createHerd } from '../dist/tools/herd/index.js';
import { fmt, ms } from './format.mjs';
import { cpuWindow, log, median, now, quantile, waitQuiet } from './measure.mjs';

/**
 * Runs a herd scenario on one new World per entry of `threadsList` and measures `ticks` ticks
 * after `warmup`. The worlds' herds share a seed (run.seed), so every world sees the same
 * positions; the worlds tick in turn within each tick, so background load falls on all of them
 * alike. Returns one result per thread count. Times in µs; perViewerUs = median pass / viewers
 * served.
 */
export async function measureWorlds(run, { section, scenario, entities, viewers, threadsList, regionSize, warmup, ticks }) {
  const config = WorldConfig.build(regionSize ? { regionSize } : undefined);
  const runs = threadsList.map((threads) => {
    const world = new World(config, { capacity: entities, threads });
    const herd = createHerd(world, { scenario, entities, viewers, seed: run.seed });
    return { world, herd, pass: [], snap: [], wall: [], sum: { served: 0, records: 0, candidates: 0, examined: 0, bytes: 0 } };
  });
  const label = `${scenario}, ${fmt(entities)} entities, ${fmt(viewers)} viewers, threads ${runs.map((r) => r.world.threads).join(' and ')}${regionSize ? `, region ${regionSize} m` : ''}`;
  await waitQuiet(section, run.quietWaitMs);
  log(section, `${label}: ${warmup} + ${ticks} ticks`);
  const cpu = cpuWindow();
  for (let t = 0; t < warmup + ticks; t++) {
    for (const r of runs) {
      r.herd.step();
      const t0 = now();
      const result = await r.world.tick();
      const t1 = now();
      if (t < warmup) continue;
      const s = result.stats;
      r.pass.push(s.passMicros);
      r.snap.push(s.snapshotMicros);
      r.wall.push((t1 - t0) * 1000);
      r.sum.served += s.served;
      r.sum.records += s.records;
      r.sum.candidates += s.candidates;
      r.sum.examined += s.examined;
      r.sum.bytes += s.bytes;
    }
  }
  const otherCores = cpu();
  const results = runs.map(({ world, pass, snap, wall, sum }) => {
    const out = {
      otherCores,
      scenario,
      entities,
      viewers,
      threads: world.threads,
      regionSize: config.input.regionSize,
      ticks,
      passMedianUs: median(pass),
      passP99Us: quantile(pass, 0.99),
      passMinUs: Math.min(...pass),
      snapshotMedianUs: median(snap),
      tickWallMedianUs: median(wall),
      perViewerUs: median(pass) / (sum.served / ticks),
      recordsPerPacket: sum.records / sum.served,
      candidatesPerViewer: sum.candidates / sum.served,
      examinedPerViewer: sum.examined / sum.served,
      bytesPerPacket: sum.bytes / sum.served,
    };
    log(section, `  ${out.threads} thread${out.threads === 1 ? '' : 's'}: pass median ${ms(out.passMedianUs)} ms, p99 ${ms(out.passP99Us)} ms, ${fmt(out.perViewerUs, 2)} µs/viewer; other processes ${fmt(otherCores, 2)} cores`);
    return out;
  });
  // Released now, not when the collector gets to them: a later section would pay for that.
  for (const r of runs) r.world.close();
  return results;
}
