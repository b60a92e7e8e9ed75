// Run metrics: an accumulator over ticks (pass times, lateness, packet fill, bandwidth, coverage of
// sampled viewers, event-loop delay) and a Prometheus registry exposing the same numbers.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import {
  DESPAWN_RECORD_BYTES,
  HEADER_BYTES,
  RECORD_BYTES,
  SightlineError,
  TickResult,
  World,
  checkTickTiming,
  createRawPacket,
  decodePacketRaw,
  describeValue as describe,
  readOptions,
  type EntityId,
  type LoopSummary,
  type RawPacket,
  type TickTiming,
} from 'sightline';

// Sampling interval of the event-loop delay monitor, ms.
const EVENT_LOOP_RESOLUTION_MS = 10;

/** Targets a run is judged against. */
export const TARGETS = Object.freeze({
  /** Median pass time, ms. */
  passP50Ms: 12,
  /** 99th percentile pass time, ms. */
  passP99Ms: 16,
  /** Late ticks. */
  lateTicks: 0,
});

/** Options of {@link TickMetrics}. */
export interface MetricsOptions {
  /**
   * Entities to measure coverage against (ids live for the whole run, e.g. a herd's `ids`). Without
   * them, `coverage` is null.
   */
  entities?: ArrayLike<EntityId>;
  /**
   * Most viewers sampled for coverage, chosen evenly from the first tick's packets. Default 64;
   * 0 turns coverage off. Fewer are sampled when `maxChecksPerTick` requires it.
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

/** Median, 99th percentile and largest value of a series, plus its mean. */
export interface Distribution {
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
  readonly worst: number;
}

/** A target and whether the run met it. */
export interface TargetCheck {
  readonly target: number;
  readonly value: number;
  readonly met: boolean;
}

/** What {@link TickMetrics.report} returns. Times in ms, sizes in bytes, rates per second of run time. */
export interface MetricsReport {
  /** Ticks recorded. */
  readonly ticks: number;
  /**
   * Run time, s: the periods of the deadlines served, (ticks + dropped) / tickHz, or the measured
   * time (the loop's elapsed time when its summary is given, else first tick start to last record)
   * when longer.
   */
  readonly seconds: number;
  /** The configured tick rate, Hz. */
  readonly tickHz: number;
  /** Ticks recorded per second of run time. */
  readonly ticksPerSecond: number;
  /** Pass time (from the `world.tick()` call until it resolved), ms. */
  readonly passMs: Distribution;
  /** Time the game's step took, ms. */
  readonly stepMs: Distribution;
  /** How far past their deadline ticks started, ms. */
  readonly latenessMs: Distribution;
  /** Ticks that started later than the loop's tolerance. */
  readonly lateTicks: number;
  /** Deadlines skipped (drop policy). */
  readonly droppedTicks: number;
  /** The native engine's phases per tick, mean ms. */
  readonly nativeMs: { readonly odometer: number; readonly snapshot: number; readonly pass: number };
  /** Entities in the snapshot, last tick. */
  readonly entities: number;
  /** Viewers served per tick, mean. */
  readonly viewersPerTick: number;
  /** Packets sent in total. */
  readonly packets: number;
  /** Update records per packet against a packet's slots when no events wait: (payloadBytes − 16) / 12. */
  readonly recordsPerPacket: {
    readonly mean: number;
    readonly p50: number;
    /** 10th percentile: nine packets in ten carry at least this many records. */
    readonly p10: number;
    readonly slots: number;
    /** mean / slots. */
    readonly fill: number;
    /**
     * Share of packets whose every slot was used, counted against `config.payloadBytes`: a viewer
     * added with a smaller payloadBytes never counts as full, one with a larger as full early.
     */
    readonly fullShare: number;
  };
  /** Despawn records per packet, mean. */
  readonly despawnsPerPacket: number;
  /** Candidates per served viewer (within the view radius, after the walk cap), mean. */
  readonly candidatesPerViewer: number;
  /** Entities examined per served viewer, mean. */
  readonly examinedPerViewer: number;
  /** Candidates eligible for the ghost table per served viewer, mean. */
  readonly eligiblePerViewer: number;
  /** Bytes sent. */
  readonly bytes: {
    readonly total: number;
    /** All clients together, bytes/s. */
    readonly perSecond: number;
    /** One client (total / mean viewers served per tick), bytes/s. */
    readonly perClientPerSecond: number;
    /** Mean packet size, bytes. */
    readonly perPacket: number;
  };
  /**
   * For the sampled viewers: entity-viewer pairs that were within config.viewRadius (horizontal
   * distance, brute force over world.positions after each tick) at some tick, and how many of those
   * the viewer never received in an update record. Null when no entities were given.
   */
  readonly coverage: {
    readonly sampledViewers: number;
    readonly inRange: number;
    readonly neverSent: number;
    /** neverSent / inRange (0 when inRange is 0). */
    readonly neverSentShare: number;
    /**
     * Pairs where the entity was eligible at some tick (among the viewer's nearest ghostCap
     * candidates of the capped gather: what the accumulator chooses from), and of those, how many
     * the viewer never received. In a crowd most entities in range are never eligible: the
     * ghost cap keeps each client to its nearest 256.
     */
    readonly eligible: number;
    readonly eligibleNeverSent: number;
    /** eligibleNeverSent / eligible (0 when eligible is 0). */
    readonly eligibleNeverSentShare: number;
    /**
     * Pairs where the entity was among the viewer's 10 nearest at some tick (brute force over
     * world.positions, within the view radius), and of those, how many the viewer never received.
     * Unlike `eligible`, this does not trust the capped gather: a neighbour the walk failed to
     * reach shows here.
     */
    readonly nearest: number;
    readonly nearestNeverSent: number;
    /** nearestNeverSent / nearest (0 when nearest is 0). */
    readonly nearestNeverSentShare: number;
  } | null;
  /**
   * Event-loop delay, ms: how late the monitor's 10 ms timer fired (monitorEventLoopDelay, its
   * sampling interval subtracted), from the end of the coverage set-up (the first tick's, when
   * coverage is on) to the report. Null when turned off.
   */
  readonly eventLoopDelayMs: { readonly p50: number; readonly p99: number; readonly max: number } | null;
  /** The targets: median and p99 pass time, late ticks. */
  readonly targets: {
    readonly passP50Ms: TargetCheck;
    readonly passP99Ms: TargetCheck;
    readonly lateTicks: TargetCheck;
    readonly allMet: boolean;
  };
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

/** Entries of `values` below `limit`. */
function countBelow(values: Float64Array, limit: number): number {
  let n = 0;
  for (let i = 0; i < values.length; i++) n += values[i] < limit ? 1 : 0;
  return n;
}

// Coverage state of the sampled viewers (see MetricsReport.coverage).
interface Coverage {
  /** Sampled viewer id → sample index. */
  readonly viewerIndex: Map<EntityId, number>;
  readonly viewerSlots: Int32Array;
  /** Each sampled viewer's own index in the entity list, or -1. */
  readonly viewerSelf: Int32Array;
  /** Entity id → entity index. */
  readonly entityIndex: Map<EntityId, number>;
  readonly entitySlots: Int32Array;
  /** Entity positions by entity index, copied from world.positions each tick (raw). */
  readonly ex: Float64Array;
  readonly ey: Float64Array;
  /** Per sampled viewer, per entity index: 1 once within the view radius at some tick. */
  readonly inRange: Uint8Array[];
  /** Per sampled viewer, per entity index: 1 once received in an update record. */
  readonly received: Uint8Array[];
  /** Per sampled viewer, per entity index: 1 once among the viewer's eligible candidates. */
  readonly eligible: Uint8Array[];
  /** Per sampled viewer, per entity index: 1 once among its NEAREST_K nearest (brute force). */
  readonly nearest: Uint8Array[];
}

/** The nearest entities (brute force) whose delivery the coverage checks: {@link MetricsReport}. */
const NEAREST_K = 10;

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
  readonly #raw: RawPacket;
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
    this.#raw = createRawPacket(world.config.payloadBytes);
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
      if (updates >= Math.floor((stateBytes - despawns * DESPAWN_RECORD_BYTES) / RECORD_BYTES)) this.#fullPackets++;
    }
    this.#packets += packets.length;

    if (this.#entities !== undefined && this.#sampleViewers > 0) {
      this.#coverage ??= this.#startCoverage(result);
      this.#measureCoverage(this.#coverage, result);
    }
  }

  #startCoverage(result: TickResult): Coverage {
    const coverage = this.#buildCoverage(result);
    // The set-up (a map of every entity, once) is this tool's, not the loop's: the event-loop
    // delay is measured from here on.
    this.#eventLoop?.reset();
    return coverage;
  }

  #buildCoverage(result: TickResult): Coverage {
    const world = this.#world;
    const entities = this.#entities as ArrayLike<EntityId>;
    const entityIndex = new Map<EntityId, number>();
    const entitySlots: number[] = [];
    for (let j = 0; j < entities.length; j++) {
      const id = entities[j];
      if (entityIndex.has(id) || !world.isLive(id)) continue;
      entityIndex.set(id, entitySlots.length);
      entitySlots.push(world.slotOf(id));
    }
    const n = entitySlots.length;
    const count = result.count;
    const budget = Math.max(1, Math.floor(this.#maxChecks / Math.max(1, n)));
    const take = Math.min(this.#sampleViewers, count, budget);
    const viewerIndex = new Map<EntityId, number>();
    const viewerSlots: number[] = [];
    const viewerSelf: number[] = [];
    for (let k = 0; k < take; k++) {
      const id = result.viewerAt(Math.floor((k * count) / take));
      if (viewerIndex.has(id) || !world.isLive(id)) continue;
      viewerIndex.set(id, viewerSlots.length);
      viewerSlots.push(world.slotOf(id));
      viewerSelf.push(entityIndex.get(id) ?? -1);
    }
    return {
      viewerIndex,
      viewerSlots: Int32Array.from(viewerSlots),
      viewerSelf: Int32Array.from(viewerSelf),
      entityIndex,
      entitySlots: Int32Array.from(entitySlots),
      ex: new Float64Array(n),
      ey: new Float64Array(n),
      inRange: viewerSlots.map(() => new Uint8Array(n)),
      received: viewerSlots.map(() => new Uint8Array(n)),
      eligible: viewerSlots.map(() => new Uint8Array(n)),
      nearest: viewerSlots.map(() => new Uint8Array(n)),
    };
  }

  #measureCoverage(c: Coverage, result: TickResult): void {
    const config = this.#world.config;
    // Received: decode the sampled viewers' packets.
    for (let i = 0; i < result.count; i++) {
      const k = c.viewerIndex.get(result.viewerAt(i));
      if (k === undefined) continue;
      const raw = decodePacketRaw(result.bytesAt(i), config, this.#raw);
      const received = c.received[k];
      for (let u = 0; u < raw.updateCount; u++) {
        const j = c.entityIndex.get(raw.ids[u]);
        if (j !== undefined) received[j] = 1;
      }
    }
    // In range: brute force over the current positions (those of the snapshot just served).
    const X = this.#world.positions.x;
    const Y = this.#world.positions.y;
    const { entitySlots, ex, ey } = c;
    const n = entitySlots.length;
    for (let j = 0; j < n; j++) {
      const s = entitySlots[j];
      ex[j] = X[s];
      ey[j] = Y[s];
    }
    const r2 = config.viewRadiusSq;
    // The NEAREST_K nearest in range, by an insertion into a short sorted list (ties: lower index).
    const nearD2 = new Float64Array(NEAREST_K);
    const nearJ = new Int32Array(NEAREST_K);
    for (let k = 0; k < c.viewerSlots.length; k++) {
      const vs = c.viewerSlots[k];
      const vx = X[vs];
      const vy = Y[vs];
      const inRange = c.inRange[k];
      const self = c.viewerSelf[k];
      let held = 0;
      for (let j = 0; j < n; j++) {
        const dx = ex[j] - vx;
        const dy = ey[j] - vy;
        const d2 = dx * dx + dy * dy;
        if (d2 > r2 || j === self) continue;
        inRange[j] = 1;
        if (held === NEAREST_K && d2 >= nearD2[NEAREST_K - 1]) continue;
        let at = held < NEAREST_K ? held++ : NEAREST_K - 1;
        for (; at > 0 && nearD2[at - 1] > d2; at--) {
          nearD2[at] = nearD2[at - 1];
          nearJ[at] = nearJ[at - 1];
        }
        nearD2[at] = d2;
        nearJ[at] = j;
      }
      const nearest = c.nearest[k];
      for (let i = 0; i < held; i++) nearest[nearJ[i]] = 1;
    }
    // Eligible: the capped gather on the snapshot just served, nearest ghostCap candidates.
    const cap = config.ghostCap;
    for (const [id, k] of c.viewerIndex) {
      if (!this.#world.isLive(id)) continue;
      const vs = c.viewerSlots[k];
      const g = this.#world.gather({ x: X[vs] / 1024, y: Y[vs] / 1024 }, { exclude: id });
      // The nearest `cap`, ties in gather order: below the cap-th smallest distance, then at it
      // in gather order while the cap lasts (a numeric sort of the distances finds the threshold).
      const d2 = g.distancesSq;
      const threshold = d2.length > cap ? d2.slice().sort()[cap - 1] : Infinity;
      let atThreshold = cap - (d2.length > cap ? countBelow(d2, threshold) : 0);
      const eligible = c.eligible[k];
      for (let i = 0; i < d2.length; i++) {
        if (d2[i] > threshold || (d2[i] === threshold && atThreshold-- <= 0)) continue;
        const j = c.entityIndex.get(g.ids[i]);
        if (j !== undefined) eligible[j] = 1;
      }
    }
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
    const slots = Math.floor((config.payloadBytes - HEADER_BYTES) / RECORD_BYTES);
    const recordsMean = div(this.#records, this.#packets);
    const viewersPerTick = div(this.#served, ticks);
    const bytesPerSecond = div(this.#bytes, seconds);

    let coverage: MetricsReport['coverage'] = null;
    if (this.#entities !== undefined && this.#sampleViewers > 0) {
      let inRange = 0;
      let neverSent = 0;
      let eligible = 0;
      let eligibleNeverSent = 0;
      let nearest = 0;
      let nearestNeverSent = 0;
      const c = this.#coverage;
      if (c) {
        for (let k = 0; k < c.inRange.length; k++) {
          const a = c.inRange[k];
          const b = c.received[k];
          const e = c.eligible[k];
          const q = c.nearest[k];
          for (let j = 0; j < a.length; j++) {
            if (q[j]) {
              nearest++;
              if (!b[j]) nearestNeverSent++;
            }
            if (a[j]) {
              inRange++;
              if (!b[j]) neverSent++;
            }
            if (e[j]) {
              eligible++;
              if (!b[j]) eligibleNeverSent++;
            }
          }
        }
      }
      coverage = {
        sampledViewers: c ? c.viewerSlots.length : 0,
        inRange,
        neverSent,
        neverSentShare: div(neverSent, inRange),
        eligible,
        eligibleNeverSent,
        eligibleNeverSentShare: div(eligibleNeverSent, eligible),
        nearest,
        nearestNeverSent,
        nearestNeverSentShare: div(nearestNeverSent, nearest),
      };
    }

    let eventLoopDelayMs: MetricsReport['eventLoopDelayMs'] = null;
    if (this.#eventLoop) {
      const h = this.#eventLoop;
      // The monitor records whole sampling intervals (ns); the delay is what exceeds the resolution.
      const delay = (ns: number): number => (h.count > 0 ? Math.max(0, ns / 1e6 - EVENT_LOOP_RESOLUTION_MS) : 0);
      eventLoopDelayMs = { p50: delay(h.percentile(50)), p99: delay(h.percentile(99)), max: delay(h.max) };
    }

    const check = (target: number, value: number): TargetCheck => ({ target, value, met: value <= target });
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
