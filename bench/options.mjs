// The options of one bench/run.mjs run, handed to every section and writer: --quick, the sizes,
// the seed, the quiet-machine wait, the notes the results carry, and bench/core built once.
import { buildCore } from './core.mjs';
import { log, quietWaitMs } from './measure.mjs';

/**
 * Run sizes. ticks: measured ticks after `warmup` ticks; scaling / density: entity (= viewer)
 * counts of the scaling section; coreTicks after coreWarmup: bench/core's ticks; peerTicks after
 * peerWarmup: the peers section's; sample: viewers the peers serve; microMs: tinybench time per
 * task; jsTicks: measured ticks of each read path of the js section.
 */
export function sizes(quick) {
  return quick
    ? { warmup: 5, ticks: 20, scaling: [1024, 8192], density: [2048, 8192], coreWarmup: 3, coreTicks: 10, peerWarmup: 2, peerTicks: 4, sample: 32, microMs: 100, jsTicks: 20 }
    : { warmup: 20, ticks: 60, scaling: [1024, 8192, 32768], density: [2048, 8192, 32768], coreWarmup: 5, coreTicks: 30, peerWarmup: 3, peerTicks: 20, sample: 128, microMs: 400, jsTicks: 60 };
}

/** Seed of every herd (tools/herd/scenarios.ts): two runs place and move the same entities. */
export const SEED = 1;

/**
 * The run's options. quick: --quick; P: sizes(quick); seed: SEED; quietWaitMs: the longest wait
 * for a quiet machine; notes: lines the results carry (a skipped part says why);
 * ensureCore(section): builds bench/core on the first call (when a source is newer) and returns
 * true when it is built, else the compiler's message (noted once in `notes`).
 */
export function runOptions({ quick }) {
  const notes = [];
  let coreReady;
  const ensureCore = (section) => {
    if (coreReady === undefined) {
      const err = buildCore((m) => log(section, m));
      coreReady = err === null ? true : err;
      if (err !== null) notes.push(`bench/core could not be built, so its sections were skipped: ${err.split('\n')[0]}`);
    }
    return coreReady;
  };
  return { quick, P: sizes(quick), seed: SEED, quietWaitMs: quietWaitMs(quick), notes, ensureCore };
}
