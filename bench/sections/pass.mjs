// The full pass section: three scenarios at 1 and 2 threads, between two core-contention tests.
import { runCore } from '../core.mjs';
import { cpuLine, fmt, ms, table } from '../format.mjs';
import { log, waitQuiet } from '../measure.mjs';
import { measureWorlds } from '../worlds.mjs';

const SCENARIOS = [
  { scenario: 'uniform', entities: 8192, viewers: 8192, title: 'uniform' },
  { scenario: 'town-square', entities: 8192, viewers: 8192, title: 'town square (one 128 m cell)' },
  { scenario: 'crowd-50k', entities: 50_000, viewers: 8192, title: 'crowd-50k (60% in one cell)' },
];

/**
 * How much the machine's two cores slow each other: bench/core --mode pair (two town-square
 * scenes, one thread each, first one alone, then both at once). Null without bench/core.
 */
async function coreContention(run, section) {
  if (run.ensureCore(section) !== true) return null;
  await waitQuiet(section, run.quietWaitMs);
  const { P } = run;
  const r = runCore(['--mode', 'pair', '--walk', 'wander', '--ticks', String(P.coreTicks), '--warmup', String(P.coreWarmup)]);
  log(section, `core contention (bench/core --mode pair): a 1-thread pass ${fmt(r.aloneMs, 2)} ms alone, ${fmt(r.bothMs, 2)} ms with another on the other core (×${fmt(r.slowdown, 2)})`);
  return r;
}

export async function measure(run) {
  const rows = [];
  const contentionBefore = await coreContention(run, 'pass');
  for (const sc of SCENARIOS) {
    const [one, two] = await measureWorlds(run, { section: 'pass', ...sc, threadsList: [1, 2], warmup: run.P.warmup, ticks: run.P.ticks });
    rows.push({ ...sc, one, two, speedup: one.passMedianUs / two.passMedianUs });
  }
  const contentionAfter = await coreContention(run, 'pass');
  return { rows, contentionBefore, contentionAfter };
}

export function markdown(pass, { P }) {
  const out = ['', `## Full pass`, '', cpuLine(pass), ''];
  out.push(
    `\`stats.passMicros\`: the per-viewer pass on the thread pool, over ${P.ticks} ticks after ${P.warmup} warm-up ticks; p99 is nearest-rank ` +
      `(the largest of ${P.ticks}). Per-viewer = median pass / viewers served. Speed-up = 1-thread median / 2-thread median. ` +
      'The 1- and 2-thread worlds run side by side on identical positions (two herds, one seed), ticking in turn, so load from other ' +
      'processes falls on both alike. ' +
      'Snapshot = `stats.snapshotMicros` (JS thread, before the pass); tick wall = `await world.tick()` as the caller sees it. ' +
      'Pass min = the fastest measured tick: on a shared machine whose speed drifts from second to second (this one varies by up ' +
      'to 1.5× between runs with nothing else running), it shows what the code costs when nothing slows it; the median is what ' +
      'a server would see.',
  );
  out.push('');
  const rows = [];
  for (const row of pass.rows) {
    for (const [th, x] of [
      [1, row.one],
      [2, row.two],
    ]) {
      rows.push([
        th === 1 ? `${row.title}, ${fmt(row.entities)} entities / ${fmt(row.viewers)} viewers` : '',
        String(x.threads),
        ms(x.passMedianUs),
        ms(x.passMinUs),
        ms(x.passP99Us),
        fmt(x.perViewerUs, 2),
        th === 2 ? `${fmt(row.speedup, 2)}× (${fmt(row.one.passMinUs / row.two.passMinUs, 2)}×)` : '',
        fmt(x.snapshotMedianUs, 0),
        ms(x.tickWallMedianUs),
        fmt(x.recordsPerPacket, 1),
        fmt(x.candidatesPerViewer, 0),
        th === 1 ? fmt(x.otherCores, 2) : '',
      ]);
    }
  }
  out.push(
    table(
      ['Scenario', 'Threads', 'Pass median (ms)', 'Pass min (ms)', 'Pass p99 (ms)', 'Per viewer (µs)', '2-thread speed-up (of the mins)', 'Snapshot (µs)', 'Tick wall (ms)', 'Records / packet', 'Candidates / viewer', 'Other processes (cores)'],
      rows,
    ),
  );
  const cb = pass.contentionBefore, ca = pass.contentionAfter;
  if (cb && ca) {
    out.push(
      '',
      `Core contention (bench/core \`--mode pair --walk wander\`: two town-square scenes of ${fmt(8192)} viewers, one thread each, ` +
        `alone and then both at once): a 1-thread pass took ${fmt(cb.aloneMs, 2)} ms alone and ${fmt(cb.bothMs, 2)} ms while another ran ` +
        `on the second core (×${fmt(cb.slowdown, 2)}) before this section, ×${fmt(ca.slowdown, 2)} (${fmt(ca.aloneMs, 2)} / ${fmt(ca.bothMs, 2)} ms) after it. ` +
        'Near ×1 the two cores work independently; toward ×2 they share one physical core (a virtual machine whose two vCPUs are ' +
        'SMT siblings) or the host is busy, and no 2-thread pass can run much faster than a 1-thread one.',
    );
  }
  return out;
}

/** Summary rows on stdout: [label, value]. */
export function summary(pass) {
  const rows = pass.rows.map((row) => [
    `pass ${row.scenario} (${fmt(row.entities)}/${fmt(row.viewers)}), ms median (p99): 1 thread | 2 threads`,
    `${ms(row.one.passMedianUs)} (${ms(row.one.passP99Us)}) | ${ms(row.two.passMedianUs)} (${ms(row.two.passP99Us)}), ×${fmt(row.speedup, 2)}`,
  ]);
  if (pass.contentionBefore && pass.contentionAfter)
    rows.push(['core contention (pair test: both cores busy ÷ one), before | after the passes', `×${fmt(pass.contentionBefore.slowdown, 2)} | ×${fmt(pass.contentionAfter.slowdown, 2)}`]);
  return rows;
}
