// sightline: interest management with a priority accumulator for Node.js game servers.
// The library a game imports. The tools built on it (the herd, the quality harness, the CLI) live
// in tools/ and import this entry point like any user's program.
export { World, TickResult } from './world.js';
export type { EventRecipients, EntityId, Vec3, PositionInput, WorldOptions, ViewerOptions, ViewerSettings, Positions, Packet, TickStats, GatherResult, GhostTableView } from './world.js';
export * from './config.js';
export { SightlineError, describe as describeValue, readOptions } from './errors.js';
export { kernels, profileGuided } from './world.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from './fixed.js';
export { mulberry32 } from './random.js';
export { decodePacket, decodePacketRaw, createRawPacket } from './decode.js';
export type { DecodedPacket, RawPacket, PacketHeader, PacketUpdate, PacketEvent, PacketLayoutConfig } from './decode.js';
export { run, runLoop, OVERRUN_POLICIES } from './loop.js';
export type { LoopOptions, LoopReport, LoopSummary, LoopHandle, OverrunPolicy, LoopEndReason } from './loop.js';
export { createPrometheusRegistry, checkTickTiming } from './prometheus.js';
export type { PrometheusOptions, PrometheusMetrics, TickTiming } from './prometheus.js';
export { TickGovernor, GOVERNOR_LEVELS, levelOf, readGovernor } from './governor.js';
export type { GovernorOptions, GovernorState, GovernorSettings } from './governor.js';
export { GovernorLevers, shedAt } from './governor-levers.js';
export type { GovernorShed } from './governor-levers.js';
export type { CongestionOptions, CongestionStats } from './congestion.js';
export type { ViewerSettingsBatch } from './viewer-batch.js';
