// The snapshot rebuild section: bench/core --mode snapshot (C++ only), 8,192 and 50,000 entities,
// uniform or in one cell, dense-cell subdivision on and off.
import { CORE_BUILD_COMMAND, runCore } from '../core.mjs';
import { cpuLine, fmt, table } from '../format.mjs';
import { log, waitQuiet } from '../measure.mjs';

export async function measure(run) {
  const core = run.ensureCore('snapshot');
  if (core !== true) return { skipped: core };
  await waitQuiet('snapshot', run.quietWaitMs);
  const { P } = run;
  const rows = [];
  for (const entities of [8192, 50_000]) {
    for (const scenario of ['uniform', 'town-square']) {
      for (const dense of ['512', 'inf']) {
        log('snapshot', `${scenario}, ${fmt(entities)} entities, dense threshold ${dense}`);
        const r = runCore(['--mode', 'snapshot', '--scenario', scenario, '--entities', String(entities), '--dense', dense, '--ticks', String(P.coreTicks * 2), '--warmup', String(P.coreWarmup)]);
        rows.push({ entities, scenario, dense, ...r });
      }
    }
  }
  return { rows };
}

export function markdown(snapshot, { P }) {
  const out = ['', `## Snapshot rebuild`, '', cpuLine(snapshot), ''];
  if (snapshot.skipped) {
    out.push(`Skipped: ${snapshot.skipped}`);
    return out;
  }
  out.push(
    `\`bench/core --mode snapshot\` (C++ only, no Node; built with \`${CORE_BUILD_COMMAND}\`): counting sort of every live entity into cells, plus sub-grids for cells at or above the ` +
      `dense threshold (\`denseCellThreshold\`; "off" = 2^30, no subdivision). Random walk of ≤ 77 raw units per axis per tick; ` +
      `median and p90 over ${P.coreTicks * 2} rebuilds. "One cell" puts every entity in the 128 m cell at the region's center.`,
  );
  out.push('');
  out.push(
    table(
      ['Entities', 'Placement', 'Subdivision', 'Median (µs)', 'p90 (µs)'],
      snapshot.rows.map((x) => [
        fmt(x.entities),
        x.scenario === 'uniform' ? 'uniform' : 'one cell',
        x.dense === 'inf' ? 'off' : `on (≥ ${x.dense} per cell)`,
        fmt(x.snapshotUs, 1),
        fmt(x.snapshotP90Us, 1),
      ]),
    ),
  );
  return out;
}
