// The gather-alone section: bench/core --mode gather (C++ only), every viewer's candidate walk
// without scoring or packets, town square and uniform, walk cap 256 and uncapped, 1 thread.
import { runCore } from '../core.mjs';
import { cpuLine, fmt, table } from '../format.mjs';
import { log, waitQuiet } from '../measure.mjs';

export async function measure(run) {
  const core = run.ensureCore('gather');
  if (core !== true) return { skipped: core };
  await waitQuiet('gather', run.quietWaitMs);
  const { P } = run;
  const rows = [];
  for (const scenario of ['town-square', 'uniform']) {
    for (const cap of ['256', 'inf']) {
      log('gather', `${scenario}, 8,192 entities, 8,192 viewers, walk cap ${cap}, 1 thread`);
      const r = runCore(['--mode', 'gather', '--scenario', scenario, '--entities', '8192', '--threads', '1', '--walk-cap', cap, '--ticks', String(P.coreTicks), '--warmup', String(P.coreWarmup)]);
      rows.push({ scenario, cap, ...r });
    }
  }
  return { rows };
}

export function markdown(gather, { P }) {
  const out = ['', `## Gather alone`, '', cpuLine(gather), ''];
  if (gather.skipped) {
    out.push(`Skipped: ${gather.skipped}`);
    return out;
  }
  out.push(
    `\`bench/core --mode gather --threads 1\`: the candidate walk of every viewer (8,192 entities, 8,192 viewers), without scoring, selection ` +
      `or packets; median over ${P.coreTicks} ticks.`,
  );
  out.push('');
  out.push(
    table(
      ['Scenario', 'Walk cap', 'All viewers (ms)', 'Per viewer (µs)', 'Candidates / viewer', 'Examined / viewer'],
      gather.rows.map((x) => [
        x.scenario === 'town-square' ? 'town square' : x.scenario,
        x.cap === 'inf' ? 'uncapped' : x.cap,
        fmt(x.gatherMs, 2),
        fmt(x.gatherPerViewerUs, 2),
        fmt(x.candidatesPerViewer, 0),
        fmt(x.examinedPerViewer, 0),
      ]),
    ),
  );
  return out;
}
