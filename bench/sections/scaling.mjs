// The per-viewer cost against viewer count: uniform, entities = viewers, 1 thread, in the fixed
// region and at constant density.
import { cpuLine, fmt, ms, table } from '../format.mjs';
import { measureWorlds } from '../worlds.mjs';

export async function measure(run) {
  const { P } = run;
  const fixed = [];
  for (const n of P.scaling) {
    fixed.push(...(await measureWorlds(run, { section: 'scaling', scenario: 'uniform', entities: n, viewers: n, threadsList: [1], warmup: P.warmup, ticks: P.ticks })));
  }
  // Same density as 8,192 entities in 4,096 m: region side ∝ √n (powers of two).
  const density = [];
  for (const n of P.density) {
    const regionSize = 4096 * Math.sqrt(n / 8192);
    density.push(
      ...(await measureWorlds(run, { section: 'scaling', scenario: 'uniform', entities: n, viewers: n, threadsList: [1], regionSize, warmup: P.warmup, ticks: P.ticks })),
    );
  }
  return { fixed, density };
}

export function markdown(scaling) {
  const out = ['', `## Per-viewer cost against viewer count`, '', cpuLine(scaling), ''];
  out.push(
    'Uniform scenario, entities = viewers, 1 thread. In the fixed 4,096 m region the density grows with the count (candidates per viewer ' +
      'grow until the walk cap); in the second table the region grows with √count so the density stays that of 8,192 in 4,096 m.',
  );
  const sc = (list) =>
    table(
      ['Viewers (= entities)', 'Region (m)', 'Pass median (ms)', 'Pass p99 (ms)', 'Per viewer (µs)', 'Candidates / viewer', 'Examined / viewer', 'Other processes (cores)'],
      list.map((x) => [fmt(x.viewers), fmt(x.regionSize), ms(x.passMedianUs), ms(x.passP99Us), fmt(x.perViewerUs, 2), fmt(x.candidatesPerViewer, 0), fmt(x.examinedPerViewer, 0), fmt(x.otherCores, 2)]),
    );
  out.push('', '**Fixed region (4,096 m)**', '', sc(scaling.fixed));
  out.push('', '**Constant density**', '', sc(scaling.density));
  return out;
}

/** Summary rows on stdout: [label, value]. */
export function summary(scaling) {
  return scaling.fixed.map((x) => [`per viewer, uniform ${fmt(x.viewers)} viewers, µs (1 thread)`, fmt(x.perViewerUs, 2)]);
}
