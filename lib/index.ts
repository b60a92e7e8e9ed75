// sightline: interest management with a priority accumulator for Node.js game servers.
export { World, TickResult } from './world.js';
export type { EventRecipients, EntityId, Vec3, PositionInput, WorldOptions, ViewerOptions, Positions, Packet, TickStats, GatherResult, GhostTableView } from './world.js';
export * from './config.js';
export { SightlineError } from './errors.js';
export { kernels, profileGuided } from './world.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from './fixed.js';
export { decodePacket, decodePacketRaw, createRawPacket } from './decode.js';
export type { DecodedPacket, RawPacket, PacketHeader, PacketUpdate, PacketEvent, PacketLayoutConfig } from './decode.js';
export type { HerdReport } from './cli.js';
export { run, runLoop, OVERRUN_POLICIES } from './loop.js';
export type { LoopOptions, LoopReport, LoopSummary, LoopHandle, OverrunPolicy, LoopEndReason } from './loop.js';
export { createHerd, herdDefaults, HERD_SCENARIOS } from './herd.js';
export type { Herd, HerdOptions, HerdScenario, HerdCounts } from './herd.js';
export { TickMetrics, createPrometheusRegistry, TARGETS } from './metrics.js';
export type { MetricsReport, MetricsOptions, PrometheusOptions, PrometheusMetrics } from './metrics.js';
export { runQuality, formatQualityReport, QUALITY_STRATEGIES } from './quality.js';
export type { QualityOptions, QualityReport, QualityStrategy } from './quality.js';
