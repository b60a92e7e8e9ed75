// Run metrics: an accumulator over ticks (pass times, lateness, packet fill, bandwidth, coverage of
// sampled viewers, event-loop delay). The report's shape is in metrics-report.ts, the coverage
// sampling in coverage.ts; the Prometheus export is the library's (createPrometheusRegistry).
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import {
  DESPAWN_RECORD_BYTES,
  HEADER_BYTES,
  KIND_RECORD_BYTES,
  SightlineError,
  TickResult,
  World,
  checkTickTiming,
  describeValue as describe,
  readOptions,
  type EntityId,
  type LoopSummary,
  type TickTiming,
} from 'sightline';
import { Coverage } from './coverage.js';
import { TARGETS, type CoverageReport, type Distribution, type MetricsReport, type TargetCheck } from './metrics-report.js';

export { TARGETS } from './metrics-report.js';
export type { CoverageReport, Distribution, MetricsReport, TargetCheck } from './metrics-report.js';

// The coverage of a run that recorded no tick.
const EMPTY_COVERAGE: CoverageReport = Object.freeze({
  sampledViewers: 0,
  inRange: 0,
  neverSent: 0,
  neverSentShare: 0,
  eligible: 0,
  eligibleNeverSent: 0,
  eligibleNeverSentShare: 0,
  nearest: 0,
  nearestNeverSent: 0,
  nearestNeverSentShare: 0,
});

// Sampling interval of the event-loop delay monitor, ms.
const EVENT_LOOP_RESOLUTION_MS = 10;

/** Options of {@link TickMetrics}. */
export interface MetricsOptions {
  /**
   * Entities to measure coverage against (ids live for the whole run, e.g. a herd's `ids`). Without
   * them, `coverage` is null.
   */
  entities?: ArrayLike<EntityId>;
  /**
   * Most viewers sampled for coverage, chosen evenly from the world's viewers (`viewerIds()`, the
   * packets' order) when the TickMetrics is made, or from the first tick's packets when it has no
   * viewers then. Default 64; 0 turns coverage off. Fewer are sampled when `maxChecksPerTick`
   * requires it.
   */
  sampleViewers?: number;
  /**
   * Budget of distance checks per tick for coverage: at most max(1, floor(maxChecksPerTick /
   * entities)) viewers are sampled. Default 1,048,576: about 5 ms of JavaScript per tick in
   * crowd-50k (20 sampled viewers; half of it distance checks), which the event-loop delay
   * includes.
   */
  maxChecksPerTick?: number;
  /** Measure event-loop delay with perf_hooks.monitorEventLoopDelay (resolution 10 ms). Default true. */
  eventLoop?: boolean;
}

// Nearest-rank percentile of sorted values.
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

function distribution(values: Float64Array): Distribution {
  if (values.length === 0) return { mean: 0, p50: 0, p99: 0, worst: 0 };
  const sorted = values.slice().sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i];
  return { mean: sum / sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), worst: sorted[sorted.length - 1] };
}

/** Mean, nearest-rank p50 and p99, and the largest of values (all 0 when there are none). */
export function summarize(values: Float64Array): Distribution {
  return distribution(values);
}

// A growable Float64 series.
class Series {
  #data = new Float64Array(256);
  #length = 0;
  push(v: number): void {
    if (this.#length === this.#data.length) {
      const grown = new Float64Array(this.#data.length * 2);
      grown.set(this.#data);
      this.#data = grown;
    }
    this.#data[this.#length++] = v;
  }
  values(): Float64Array {
    return this.#data.subarray(0, this.#length);
  }
}

/**
 * Accumulates per-tick metrics of a World run. Call {@link record} after every tick (a loop's
 * `onTick`), then {@link report}; {@link close} stops the event-loop monitor.
 *
 * Coverage costs, per tick, one decode per sampled viewer and (sampled viewers × entities)
 * distance checks on the JavaScript thread, bounded by `maxChecksPerTick`.
 */
const METRICS_OPTIONS = ['entities', 'sampleViewers', 'maxChecksPerTick', 'eventLoop'] as const;

export class TickMetrics {
  readonly #world: World;
  readonly #entities: ArrayLike<EntityId> | undefined;
  readonly #sampleViewers: number;
  readonly #maxChecks: number;
  readonly #pass = new Series();
  readonly #step = new Series();
  readonly #lateness = new Series();
  readonly #recordHistogram: Float64Array;
  #eventLoop: IntervalHistogram | undefined;
  #coverage: Coverage | undefined;
  #ticks = 0;
  #late = 0;
  #dropped = 0;
  #firstAt = 0;
  #lastAt = 0;
  #served = 0;
  #packets = 0;
  #records = 0;
  #despawns = 0;
  #candidates = 0;
  #examined = 0;
  #eligible = 0;
  #bytes = 0;
  #kinds = 0;
  #attributeBytes = 0;
  #fullPackets = 0;
  #odometerUs = 0;
  #snapshotUs = 0;
  #passUs = 0;
  #entityCount = 0;

  /**
   * @throws ERR_SIGHTLINE_INVALID_METRICS_OPTION for `sampleViewers` not an integer ≥ 0,
   *   `maxChecksPerTick` not a number ≥ 1, `entities` not array-like, or `eventLoop` not a boolean;
   *   ERR_SIGHTLINE_UNKNOWN_OPTION for another key; ERR_SIGHTLINE_INVALID_ARGUMENT when `world` is
   *   not a World or `options` not an object.
   */
  constructor(world: World, options: MetricsOptions = {}) {
    if (!(world instanceof World)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `TickMetrics needs a World, received ${describe(world)}`);
    }
    const { entities, sampleViewers = 64, maxChecksPerTick = 1 << 20, eventLoop = true } = readOptions(
      'TickMetrics',
      options,
      METRICS_OPTIONS,
    ) as MetricsOptions;
    if (typeof eventLoop !== 'boolean') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `eventLoop must be true or false, received ${describe(eventLoop)}`);
    }
    if (typeof sampleViewers !== 'number' || !Number.isInteger(sampleViewers) || sampleViewers < 0) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `sampleViewers must be an integer ≥ 0, received ${describe(sampleViewers)}`);
    }
    if (typeof maxChecksPerTick !== 'number' || !(maxChecksPerTick >= 1)) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_METRICS_OPTION',
        `maxChecksPerTick must be a number ≥ 1 (or Infinity), received ${describe(maxChecksPerTick)}`,
      );
    }
    if (entities !== undefined && (typeof entities !== 'object' || entities === null || typeof entities.length !== 'number')) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `entities must be an array of entity ids, received ${describe(entities)}`);
    }
    for (let i = 0; entities !== undefined && i < entities.length; i++) {
      const id: unknown = entities[i];
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_METRICS_OPTION', `entities[${i}] must be an entity id (an integer from 0 to 2^32 - 1), received ${describe(id)}`);
      }
    }
    this.#world = world;
    this.#entities = entities;
    this.#sampleViewers = sampleViewers;
    this.#maxChecks = maxChecksPerTick;
    // A packet holds at most (payload - header) / record-size update records; 65507-byte packets: 5457.
    this.#recordHistogram = new Float64Array(5458);
    // Coverage's set-up (a map of every entity, once: 20 ms for crowd-50k's 50,000) here, before
    // a loop's first tick, where the world has its viewers already; else on the first tick.
    if (entities !== undefined && sampleViewers > 0 && world.viewerCount > 0 && !world.tickPending) {
      const ids = world.viewerIds();
      this.#coverage = new Coverage(world, entities, sampleViewers, maxChecksPerTick, { count: ids.length, viewerAt: (i) => ids[i] });
      this.#coverage.warm();
    }
    if (eventLoop) {
      this.#eventLoop = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
      this.#eventLoop.enable();
    }
  }

  /** Ticks recorded. */
  get ticks(): number {
    return this.#ticks;
  }

  /** Pass times recorded so far, ms (a view; valid until the next record). */
  get passTimes(): Float64Array {
    return this.#pass.values();
  }

  /** Late ticks recorded so far. */
  get lateTicks(): number {
    return this.#late;
  }

  /**
   * Records one tick: its result (read now: call before the result expires, i.e. before the tick
   * after next starts) and its timing. A refused call records nothing.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (not a TickResult; a timing without a finite
   *   `passMs` ≥ 0, or with a bad optional field), ERR_SIGHTLINE_RESULT_EXPIRED.
   */
  record(result: TickResult, timing: TickTiming): void {
    // Every check first: a refused call records nothing.
    if (!(result instanceof TickResult)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `record needs a TickResult, received ${describe(result)}`);
    }
    checkTickTiming(timing);
    const packets = result.packets;  // ERR_SIGHTLINE_RESULT_EXPIRED for an expired result
    if (this.#entities !== undefined && this.#sampleViewers > 0 && this.#world.closed) {
      throw new SightlineError('ERR_SIGHTLINE_WORLD_CLOSED', 'coverage reads the world, which was closed: record each tick before World.close()');
    }
    const now = performance.now();
    if (this.#ticks === 0) this.#firstAt = now - timing.passMs - (timing.stepMs ?? 0);
    this.#lastAt = now;
    this.#ticks++;
    this.#pass.push(timing.passMs);
    this.#step.push(timing.stepMs ?? 0);
    this.#lateness.push(timing.lateness ?? 0);
    if (timing.late) this.#late++;
    if (timing.dropped !== undefined) this.#dropped = Math.max(this.#dropped, timing.dropped);

    const s = result.stats;
    this.#served += s.served;
    this.#records += s.records;
    this.#despawns += s.despawns;
    this.#candidates += s.candidates;
    this.#examined += s.examined;
    this.#eligible += s.eligible;
    this.#bytes += s.bytes;
    this.#kinds += s.kinds;
    this.#attributeBytes += s.attributeBytes;
    this.#odometerUs += s.odometerMicros;
    this.#snapshotUs += s.snapshotMicros;
    this.#passUs += s.passMicros;
    this.#entityCount = s.entities;

    // Records per packet from each header's update count (bytes 14-15) and despawn count (12-13);
    // a packet is full when no further record fits in config.payloadBytes after its despawns.
    const stateBytes = this.#world.config.payloadBytes - HEADER_BYTES;
    const hist = this.#recordHistogram;
    for (let i = 0; i < packets.length; i++) {
      const b = packets[i].bytes;
      if (b.length < HEADER_BYTES) continue;
      const updates = b[14] | (b[15] << 8);
      const despawns = b[12] | (b[13] << 8);
      hist[Math.min(updates, hist.length - 1)]++;
      if (updates >= Math.floor((stateBytes - despawns * DESPAWN_RECORD_BYTES) / this.#world.config.recordBytes)) this.#fullPackets++;
    }
    this.#packets += packets.length;

    if (this.#entities !== undefined && this.#sampleViewers > 0) {
      this.#coverage ??= this.#startCoverage(result);
      this.#coverage.measure(result);
    }
  }

  #startCoverage(result: TickResult): Coverage {
    const coverage = new Coverage(this.#world, this.#entities as ArrayLike<EntityId>, this.#sampleViewers, this.#maxChecks, result);
    // The set-up (a map of every entity, once) is this tool's, not the loop's: the event-loop
    // delay is measured from here on.
    this.#eventLoop?.reset();
    return coverage;
  }

  /**
   * The metrics so far. Pass the loop's summary, when the loop has ended, so that drops after the
   * last tick and the loop's elapsed time count.
   */
  report(summary?: LoopSummary): MetricsReport {
    if (summary !== undefined) {
      const t = summary as unknown as Record<string, unknown>;
      const ok = typeof summary === 'object' && summary !== null &&
        ['ticks', 'dropped', 'late', 'elapsedMs'].every((k) => typeof t[k] === 'number' && Number.isFinite(t[k]) && (t[k] as number) >= 0);
      if (!ok) {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `report takes a loop's summary { ticks, dropped, late, elapsedMs, ... } or nothing, received ${describe(summary)}`);
      }
    }
    const config = this.#world.config;
    const tickHz = config.tickHz;
    const ticks = this.#ticks;
    const dropped = summary ? Math.max(summary.dropped, this.#dropped) : this.#dropped;
    const measured = summary ? summary.elapsedMs : ticks === 0 ? 0 : this.#lastAt - this.#firstAt;
    const seconds = Math.max(measured, ((ticks + dropped) * 1000) / tickHz) / 1000;
    const late = summary ? Math.max(summary.late, this.#late) : this.#late;
    const div = (a: number, b: number): number => (b > 0 ? a / b : 0);
    const passMs = distribution(this.#pass.values());

    // Records-per-packet percentiles from the histogram.
    const hist = this.#recordHistogram;
    const quantile = (q: number): number => {
      if (this.#packets === 0) return 0;
      const want = Math.max(1, Math.ceil(q * this.#packets));
      let acc = 0;
      for (let v = 0; v < hist.length; v++) {
        acc += hist[v];
        if (acc >= want) return v;
      }
      return hist.length - 1;
    };
    // Slots of a packet with no events waiting: the reserve is only taken by events in use.
    const slots = Math.floor((config.payloadBytes - HEADER_BYTES) / config.recordBytes);
    const recordsMean = div(this.#records, this.#packets);
    const viewersPerTick = div(this.#served, ticks);
    const bytesPerSecond = div(this.#bytes, seconds);

    const coverage = this.#entities !== undefined && this.#sampleViewers > 0 ? (this.#coverage?.report() ?? EMPTY_COVERAGE) : null;

    let eventLoopDelayMs: MetricsReport['eventLoopDelayMs'] = null;
    if (this.#eventLoop) {
      const h = this.#eventLoop;
      // The monitor records whole sampling intervals (ns); the delay is what exceeds the resolution.
      const delay = (ns: number): number => (h.count > 0 ? Math.max(0, ns / 1e6 - EVENT_LOOP_RESOLUTION_MS) : 0);
      eventLoopDelayMs = { p50: delay(h.percentile(50)), p99: delay(h.percentile(99)), max: delay(h.max) };
    }

    // With no tick run nothing was measured: no target is met (a run interrupted during its set-up).
    const check = (target: number, value: number): TargetCheck => ({ target, value, met: ticks > 0 && value <= target });
    const targets = {
      passP50Ms: check(TARGETS.passP50Ms, passMs.p50),
      passP99Ms: check(TARGETS.passP99Ms, passMs.p99),
      lateTicks: check(TARGETS.lateTicks, late),
    };

    return {
      ticks,
      seconds,
      tickHz,
      ticksPerSecond: div(ticks, seconds),
      passMs,
      stepMs: distribution(this.#step.values()),
      latenessMs: distribution(this.#lateness.values()),
      lateTicks: late,
      droppedTicks: dropped,
      nativeMs: {
        odometer: div(this.#odometerUs, ticks) / 1000,
        snapshot: div(this.#snapshotUs, ticks) / 1000,
        pass: div(this.#passUs, ticks) / 1000,
      },
      entities: this.#entityCount,
      viewersPerTick,
      packets: this.#packets,
      recordsPerPacket: {
        mean: recordsMean,
        p50: quantile(0.5),
        p10: quantile(0.1),
        slots,
        fill: div(recordsMean, slots),
        fullShare: div(this.#fullPackets, this.#packets),
      },
      despawnsPerPacket: div(this.#despawns, this.#packets),
      candidatesPerViewer: div(this.#candidates, this.#served),
      examinedPerViewer: div(this.#examined, this.#served),
      eligiblePerViewer: div(this.#eligible, this.#served),
      bytes: {
        total: this.#bytes,
        perSecond: bytesPerSecond,
        perClientPerSecond: div(bytesPerSecond, viewersPerTick),
        perPacket: div(this.#bytes, this.#packets),
        fieldsPerClientPerSecond: div(div(this.#records * config.fieldBytes, seconds), viewersPerTick),
        kindsPerClientPerSecond: div(div(this.#kinds * KIND_RECORD_BYTES, seconds), viewersPerTick),
        attributesPerClientPerSecond: div(div(this.#attributeBytes, seconds), viewersPerTick),
      },
      coverage,
      eventLoopDelayMs,
      targets: { ...targets, allMet: targets.passP50Ms.met && targets.passP99Ms.met && targets.lateTicks.met },
    };
  }

  /** Stops the event-loop delay monitor. The report stays readable. */
  close(): void {
    this.#eventLoop?.disable();
  }
}
