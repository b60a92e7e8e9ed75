// Prometheus export of a World run: a prom-client registry with sightline's metrics and the
// function that feeds it one tick at a time (a loop's onTick arguments).
import { createRequire } from 'node:module';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SightlineError, describe, readOptions } from './errors.js';
import type { LoopReport } from './loop.js';
import { TickResult } from './tick-result.js';
import { World } from './world.js';

/** The timing of one tick as a recorder (PrometheusMetrics.record) needs it; a loop's {@link LoopReport} qualifies. */
export type TickTiming = Pick<LoopReport, 'passMs'> & Partial<Pick<LoopReport, 'stepMs' | 'lateness' | 'late' | 'dropped' | 'governor'>>;

const PROMETHEUS_OPTIONS = ['registry', 'prefix', 'defaultMetrics', 'world'] as const;

/**
 * Checks a {@link TickTiming} (times finite and ≥ 0 ms, `dropped` a count, `late` a boolean) and
 * returns it; for code that records ticks as {@link PrometheusMetrics.record} does.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT naming the field.
 */
export function checkTickTiming(timing: unknown): TickTiming {
  if (typeof timing !== 'object' || timing === null) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `record needs a timing { passMs, ... }, received ${describe(timing)}`);
  }
  const t = timing as Record<string, unknown>;
  const num = (k: string, optional: boolean): void => {
    const v = t[k];
    if (v === undefined && optional) return;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `timing.${k} must be a finite number ≥ 0 (ms), received ${describe(v)}`);
    }
  };
  num('passMs', false);
  num('stepMs', true);
  num('lateness', true);
  const dropped = t.dropped;
  if (dropped !== undefined && (typeof dropped !== 'number' || !Number.isInteger(dropped) || dropped < 0)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `timing.dropped must be a count (an integer ≥ 0), received ${describe(dropped)}`);
  }
  if (t.late !== undefined && typeof t.late !== 'boolean') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `timing.late must be true or false, received ${describe(t.late)}`);
  }
  const g = t.governor as Record<string, unknown> | undefined;
  if (g !== undefined) {
    const ok =
      typeof g === 'object' && g !== null && typeof g.enabled === 'boolean' &&
      ['loadFactor', 'level', 'ewmaMs', 'changes'].every((k) => typeof g[k] === 'number' && Number.isFinite(g[k] as number) && (g[k] as number) >= 0);
    if (!ok) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `timing.governor must be a loop report's governor state { enabled, loadFactor, level, ewmaMs, changes }, received ${describe(g)}`);
    }
  }
  return timing as TickTiming;
}


/** Options of {@link createPrometheusRegistry}. */
export interface PrometheusOptions {
  /** Register into this prom-client Registry. Default: a new one. */
  registry?: Registry;
  /** Metric name prefix. Default `'sightline_'`. */
  prefix?: string;
  /** Also collect prom-client's default Node.js metrics (event-loop lag percentiles among them). Default false. */
  defaultMetrics?: boolean;
  /** The world whose ticks are recorded: sets `packet_slots` from its config.slotsPerPacket. */
  world?: World;
}

/** A prom-client registry with sightline's metrics, fed by {@link PrometheusMetrics.record}. */
export interface PrometheusMetrics {
  readonly registry: Registry;
  /** Records one tick (a loop's `onTick` arguments). */
  record(result: TickResult, timing: TickTiming): void;
}

type PromClient = typeof import('prom-client');

function loadPromClient(): PromClient {
  try {
    return createRequire(import.meta.url)('prom-client') as PromClient;
  } catch (e) {
    throw new SightlineError(
      'ERR_SIGHTLINE_MISSING_DEPENDENCY',
      `createPrometheusRegistry needs the prom-client package (npm install prom-client@15): ${(e as Error).message}`,
    );
  }
}

/**
 * Creates prom-client metrics for a World run and a function feeding them. Metric names (with the
 * default prefix `sightline_`):
 *
 * - `tick_duration_seconds` (histogram): pass time, from the `world.tick()` call until it resolved.
 * - `step_duration_seconds` (histogram): the game's step.
 * - `tick_lateness_seconds` (histogram): how far past its deadline each tick started.
 * - `ticks_total`, `late_ticks_total`, `dropped_ticks_total` (counters).
 * - `records_per_packet` (gauge): update records per packet, mean over the last tick;
 *   `packet_slots` (gauge): config.slotsPerPacket, when `options.world` is given.
 * - `candidates_per_viewer` (gauge): last tick's mean.
 * - `bytes_sent_total`, `packets_sent_total` (counters).
 * - `viewers_served`, `entities` (gauges): last tick's.
 * - `governor_load_factor`, `governor_level`, `governor_tick_ewma_seconds` (gauges) and
 *   `governor_level_changes_total` (counter): the tick governor's state, from a loop report's
 *   `governor` (left at 1, 0, 0 when the timing has none or the governor is off).
 *
 * prom-client is loaded on the first call.
 * @throws ERR_SIGHTLINE_MISSING_DEPENDENCY when prom-client cannot be loaded;
 *   ERR_SIGHTLINE_INVALID_METRICS_OPTION for a prefix that is not a valid metric name start, a
 *   registry that is not a prom-client Registry or already holds these metrics under that prefix,
 *   a world that is not a World, or defaultMetrics not a boolean; ERR_SIGHTLINE_UNKNOWN_OPTION.
 */
export function createPrometheusRegistry(prometheusOptions: PrometheusOptions = {}): PrometheusMetrics {
  const options = readOptions('createPrometheusRegistry', prometheusOptions, PROMETHEUS_OPTIONS) as PrometheusOptions;
  const { prefix = 'sightline_', defaultMetrics = false } = options;
  if (typeof defaultMetrics !== 'boolean') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `defaultMetrics must be true or false, received ${describe(defaultMetrics)}`);
  }
  if (options.world !== undefined && !(options.world instanceof World)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `world must be a World, received ${describe(options.world)}`);
  }
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_METRICS_OPTION',
      `prefix must match [a-zA-Z_:][a-zA-Z0-9_:]* (or be empty), received ${describe(prefix)}`,
    );
  }
  const prom = loadPromClient();
  if (options.registry !== undefined && !(options.registry instanceof prom.Registry)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `registry must be a prom-client Registry, received ${describe(options.registry)}`);
  }
  const registry = options.registry ?? new prom.Registry();
  // prom-client refuses a second metric of one name in a registry: say which call made it.
  if (registry.getSingleMetric(`${prefix}tick_duration_seconds`) !== undefined) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_METRICS_OPTION',
      `the registry already holds sightline's metrics under the prefix ${describe(prefix)}: create them once per registry, or give another prefix`,
    );
  }
  if (defaultMetrics && registry.getSingleMetric('process_cpu_user_seconds_total') !== undefined) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_METRICS_OPTION',
      "defaultMetrics: the registry already collects Node's default metrics: leave defaultMetrics out",
    );
  }
  if (defaultMetrics) prom.collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const histogram = (name: string, help: string, buckets: number[]): Histogram =>
    new prom.Histogram({ name: prefix + name, help, buckets, registers });
  const counter = (name: string, help: string): Counter => new prom.Counter({ name: prefix + name, help, registers });
  const gauge = (name: string, help: string): Gauge => new prom.Gauge({ name: prefix + name, help, registers });

  const tickDuration = histogram(
    'tick_duration_seconds',
    'Pass time: from the world.tick() call until it resolved, seconds.',
    [0.002, 0.004, 0.006, 0.008, 0.01, 0.012, 0.016, 0.02, 0.03, 0.05, 0.1, 0.25],
  );
  const stepDuration = histogram('step_duration_seconds', "The game's step before each tick, seconds.", [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
  ]);
  const lateness = histogram('tick_lateness_seconds', 'How far past its deadline each tick started, seconds.', [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1,
  ]);
  const ticks = counter('ticks_total', 'Ticks run.');
  const lateTicks = counter('late_ticks_total', 'Ticks that started past their deadline by more than the loop tolerance.');
  const droppedTicks = counter('dropped_ticks_total', 'Deadlines skipped under the drop policy.');
  const recordsPerPacket = gauge('records_per_packet', 'Update records per packet, mean over the last tick.');
  const packetSlots = gauge('packet_slots', 'Update record slots per packet with the event reserve in use (config.slotsPerPacket).');
  const candidatesPerViewer = gauge('candidates_per_viewer', 'Candidates per served viewer, mean over the last tick.');
  const bytesSent = counter('bytes_sent_total', 'Packet bytes produced for clients.');
  const packetsSent = counter('packets_sent_total', 'Packets produced for clients.');
  const viewersServed = gauge('viewers_served', 'Viewers served by the last tick.');
  const entities = gauge('entities', 'Entities in the last tick’s snapshot.');
  const loadFactor = gauge('governor_load_factor', 'The tick governor’s load factor (1: nothing shed).');
  const level = gauge('governor_level', 'The tick governor’s shedding level in force (0: nothing shed).');
  const tickEwma = gauge('governor_tick_ewma_seconds', 'The tick governor’s EWMA of the tick’s wall time, seconds.');
  const levelChanges = counter('governor_level_changes_total', 'Shedding level changes of the tick governor.');
  loadFactor.set(1);
  level.set(0);
  tickEwma.set(0);

  if (options.world) packetSlots.set(options.world.config.slotsPerPacket);
  let droppedSeen = 0;
  let changesSeen = 0;
  return {
    registry,
    record(result: TickResult, timing: TickTiming): void {
      // Every check first: a refused call records nothing.
      if (!(result instanceof TickResult)) {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `record needs a TickResult, received ${describe(result)}`);
      }
      checkTickTiming(timing);
      const s = result.stats;
      tickDuration.observe(timing.passMs / 1000);
      if (timing.stepMs !== undefined) stepDuration.observe(timing.stepMs / 1000);
      if (timing.lateness !== undefined) lateness.observe(timing.lateness / 1000);
      ticks.inc();
      if (timing.late) lateTicks.inc();
      if (timing.dropped !== undefined && timing.dropped > droppedSeen) {
        droppedTicks.inc(timing.dropped - droppedSeen);
        droppedSeen = timing.dropped;
      }
      recordsPerPacket.set(result.count > 0 ? s.records / result.count : 0);
      candidatesPerViewer.set(s.served > 0 ? s.candidates / s.served : 0);
      bytesSent.inc(s.bytes);
      packetsSent.inc(result.count);
      viewersServed.set(s.served);
      entities.set(s.entities);
      const g = timing.governor;
      if (g !== undefined && g.enabled) {
        loadFactor.set(g.loadFactor);
        level.set(g.level);
        tickEwma.set(g.ewmaMs / 1000);
        if (g.changes > changesSeen) {
          levelChanges.inc(g.changes - changesSeen);
          changesSeen = g.changes;
        }
      }
    },
  };
}
