// The state section: bench/core --mode state (C++ only), the pass with a 24-bit field schema and
// 32-byte attributes on every entity (a tenth of them changing a second) against the position-only
// pass, the two scenes ticked in turn in one run; town square and uniform, 8,192 x 8,192, 2
// threads, viewers without and with acknowledgements. Target: at most 1.15 times the
// position-only pass.
import { World, WorldConfig } from '../../dist/lib/index.js';
import { HERD_STATE_CONFIG, createHerd, createHerdState } from '../../dist/tools/herd/index.js';
import { runCore } from '../core.mjs';
import { cpuLine, fmt, ms, table } from '../format.mjs';
import { log, median, now, waitQuiet } from '../measure.mjs';

// The JavaScript side of a tick with and without state, two herds ticked in turn: the tick()
// call (odometer, fields, snapshot), the JS thread's busy time while awaiting the result, reading
// every packet through result.packets.
async function handoff(run) {
  const { P } = run;
  const make = (state) => {
    const config = WorldConfig.build(state ? HERD_STATE_CONFIG : {});
    const world = new World(config, { capacity: 8192, threads: 2 });
    const herd = createHerd(world, { scenario: 'uniform', entities: 8192, viewers: 8192, seed: run.seed });
    const st = state ? createHerdState(world, herd, run.seed) : undefined;
    return { world, step: () => (herd.step(), st?.step()), call: [], receive: [], read: [], sync: [] };
  };
  const sides = [make(false), make(true)];
  const elu = () => performance.eventLoopUtilization().active;
  let checksum = 0;
  for (let t = 0; t < P.warmup + P.jsTicks; t++) {
    for (const side of t % 2 === 0 ? sides : [...sides].reverse()) {
      side.step();
      const t0 = now();
      const promise = side.world.tick();
      const t1 = now();
      const a1 = elu();
      const r = await promise;
      const a2 = elu();
      const t2 = now();
      for (const p of r.packets) checksum += p.bytes[0] + p.bytes.length;
      const t3 = now();
      if (t < P.warmup) continue;
      side.call.push((t1 - t0) * 1000);
      side.sync.push(r.stats.odometerMicros + r.stats.snapshotMicros);
      side.receive.push((a2 - a1) * 1000);
      side.read.push((t3 - t2) * 1000);
    }
  }
  for (const s of sides) s.world.close();
  const summarize = (s) => ({ callUs: median(s.call), syncUs: median(s.sync), receiveUs: median(s.receive), readUs: median(s.read) });
  return { positions: summarize(sides[0]), state: summarize(sides[1]), ticks: P.jsTicks, checksum };
}

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
  log('state', 'JavaScript side: uniform herds of 8,192 with and without state, ticked in turn');
  const js = await handoff(run);
  log('state', `  tick() call ${ms(js.positions.callUs, 3)} / ${ms(js.state.callUs, 3)} ms, receive ${ms(js.positions.receiveUs, 3)} / ${ms(js.state.receiveUs, 3)} ms`);
  return { rows, js };
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
  const j = state.js;
  if (j) {
    out.push('');
    out.push(
      `The JavaScript side of those ticks, two uniform herds of 8,192 (one with \`--state\`'s fields, kinds and names) on 2 threads, ticked in turn, ${j.ticks} ticks each; medians, ms:`,
    );
    out.push('');
    out.push(
      table(
        ['World', 'tick() call', 'of which odometer + snapshot', 'JS busy while awaiting', 'Read 8,192 packets'],
        [
          ['positions only', ms(j.positions.callUs, 3), ms(j.positions.syncUs, 3), ms(j.positions.receiveUs, 3), ms(j.positions.readUs, 3)],
          ['with state', ms(j.state.callUs, 3), ms(j.state.syncUs, 3), ms(j.state.receiveUs, 3), ms(j.state.readUs, 3)],
        ],
      ),
    );
  }
  return out;
}

export function summary(state) {
  if (state.skipped) return [];
  return state.rows.map((x) => [`state / positions, ${x.scenario}, 2 threads${x.acks ? ', acks' : ''}`, `×${fmt(x.ratio, 3)}`]);
}
