// What a herd run's metrics report holds (TickMetrics.report), and the targets it is judged against.

/** Targets a run is judged against. */
export const TARGETS = Object.freeze({
  /** Median pass time, ms. */
  passP50Ms: 12,
  /** 99th percentile pass time, ms. */
  passP99Ms: 16,
  /** Late ticks. */
  lateTicks: 0,
});

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
  /** value ≤ target, over at least one tick: a run that ran no tick meets no target. */
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
    /** Of perClientPerSecond: the update records' fast fields (records × fieldBytes). */
    readonly fieldsPerClientPerSecond: number;
    /** Of perClientPerSecond: the kind records (6 bytes each; the sections' 2-byte counts not included). */
    readonly kindsPerClientPerSecond: number;
    /** Of perClientPerSecond: the attributes sections, counts included. */
    readonly attributesPerClientPerSecond: number;
  };
  /**
   * For the sampled viewers: entity-viewer pairs that were within config.viewRadius (horizontal
   * distance, brute force over world.positions after each tick) at some tick, and how many of those
   * the viewer never received in an update record. Null when no entities were given.
   */
  readonly coverage: CoverageReport | null;
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


/** Coverage of the sampled viewers: see {@link MetricsReport.coverage}. */
export interface CoverageReport {
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
}
