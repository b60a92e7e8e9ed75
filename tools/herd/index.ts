// sightline/herd: the load game built on the public library: seeded scenarios that move a World's
// entities, a metrics accumulator for a run (pass times, packet fill, bandwidth, coverage), and the
// whole `sightline herd` run, in process or over UDP to a process of bot clients.
export { createHerd, herdDefaults, HERD_SCENARIOS } from './scenarios.js';
export type { Herd, HerdOptions, HerdScenario, HerdCounts } from './scenarios.js';
export { HERD_STATE_CONFIG, HERD_KIND_PLAYER, HERD_KIND_OTHER, HERD_ANIM, createHerdState } from './state.js';
export type { HerdState } from './state.js';
export { TickMetrics, TARGETS, summarize } from './metrics.js';
export type { MetricsReport, MetricsOptions, Distribution, TargetCheck } from './metrics.js';
export { runHerd, HERD_NETS, HERD_DEFAULT_SECONDS } from './run.js';
export type { HerdReport, HerdCommandOptions, HerdNet, HerdProgress } from './run.js';
export type { NetworkReport } from './net-herd.js';
export { GcMonitor } from './gc.js';
export type { GcReport, GcPauses, HeapAfterGc } from './gc.js';
