// The state section: bench/core --mode state (C++ only), the pass with a 24-bit field schema and
// 32-byte attributes on every entity (a tenth of them changing a second) against the position-only
// pass, the two scenes ticked in turn in one run; town square and uniform, 8,192 x 8,192, 2
// threads, viewers without and with acknowledgements. Target: at most 1.15 times the
// position-only pass.
import { runCore } from '../core.mjs';
import { cpuLine, fmt, table } from '../format.mjs';
import { log, waitQuiet } from '../measure.mjs';

/** The state pass's largest ratio to the position-only pass. */
export const STATE_TARGET_RATIO = 1.15;

export async function measure(run) {
  const core = run.ensureCore('state');
  if (core !== true) return { skipped: core };
  await waitQuiet('state', run.quietWaitMs);
  const { P } = run;
  const rows = [];
  for (const scenario of ['town-square', 'uniform']) {
    for (const acks of [false, true]) {
      log('state', `${scenario}, 8,192 entities, 8,192 viewers, 2 threads, ${acks ? 'acks' : 'no acks'}: state and positions in turn`);
      const args = ['--mode', 'state', '--scenario', scenario, '--entities', '8192', '--threads', '2', '--walk', 'wander', '--ticks', String(P.coreTicks)];
      if (acks) args.push('--acks');
      rows.push({ scenario, ...runCore(args) });
    }
  }
  return { rows };
}

export function markdown(state) {
  const out = ['', '## Fields and attributes against positions only', '', cpuLine(state), ''];
  if (state.skipped) {
    out.push(`Skipped: ${state.skipped}`);
    return out;
  }
  out.push(
    '`bench/core --mode state --threads 2 --walk wander`: one scene with positions only and the same scene with a 24-bit field ' +
      'schema (yaw 10, anim 6, health 8, written every tick), 32-byte attributes on every entity and a tenth of them changing ' +
      'a second (20 Hz), ticked in turn (A B B A …) on one pool after 80 warm-up ticks; median pass times. ' +
      `Target: the state pass at most ${STATE_TARGET_RATIO} times the position-only one.`,
  );
  out.push('');
  out.push(
    table(
      ['Scenario', 'Acks', 'Positions (ms)', 'With state (ms)', 'Ratio', 'Records / packet (positions / state)', 'Attribute entries / tick', 'Attribute bytes / packet'],
      state.rows.map((x) => [
        x.scenario === 'town-square' ? 'town square' : x.scenario,
        x.acks ? 'yes' : 'no',
        fmt(x.positionsMs, 2),
        fmt(x.stateMs, 2),
        `×${fmt(x.ratio, 3)}${x.ratio <= STATE_TARGET_RATIO ? ' (met)' : ' (missed)'}`,
        `${fmt(x.recordsPerPacket, 1)} / ${fmt(x.stateRecordsPerPacket, 1)}`,
        fmt(x.attributesPerTick, 0),
        fmt(x.attributeBytesPerTick / x.viewers, 1),
      ]),
    ),
  );
  return out;
}

export function summary(state) {
  if (state.skipped) return [];
  return state.rows.map((x) => [`state / positions, ${x.scenario}, 2 threads${x.acks ? ', acks' : ''}`, `×${fmt(x.ratio, 3)}`]);
}
