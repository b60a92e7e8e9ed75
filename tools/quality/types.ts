// The quality harness's options, strategies, distance bands and report shapes.
import type { WorldConfigInput } from 'sightline';

/**
 * A record-selection strategy.
 *
 * - `accumulator`: sightline as configured (default 1/d band weights): the World's own packets.
 * - `nearest-first`: every tick, the nearest in-range entities that fit the packet.
 * - `round-robin`: every tick, the next in-range entities in id order after the last one sent,
 *   wrapping, as many as fit the packet.
 *
 * The baselines send a despawn record for every entity they sent that has left the view radius
 * (despawns first, at most half the state bytes, as the engine does), then fill the remaining
 * bytes with update records.
 */
export type QualityStrategy = 'accumulator' | 'nearest-first' | 'round-robin';

/** Valid {@link QualityStrategy} values, in report order. */
export const QUALITY_STRATEGIES: readonly QualityStrategy[] = Object.freeze(['accumulator', 'nearest-first', 'round-robin'] as const);

/** A distance band: [minM, maxM) meters of horizontal distance from the viewer (the distance the view radius applies to). */
export interface QualityBand {
  readonly label: string;
  /** Lower bound, m (inclusive). */
  readonly minM: number;
  /** Upper bound, m (exclusive); Infinity for the last band (null in `--json` output: JSON has no Infinity). */
  readonly maxM: number;
}

/** The distance bands of the report: 0–32, 32–64, 64–128 and 128+ m. */
export const QUALITY_BANDS: readonly QualityBand[] = Object.freeze([
  { label: '0–32 m', minM: 0, maxM: 32 },
  { label: '32–64 m', minM: 32, maxM: 64 },
  { label: '64–128 m', minM: 64, maxM: 128 },
  { label: '128+ m', minM: 128, maxM: Infinity },
]);

/**
 * Published mean angular errors of umwelt-rs (mrad) for the bands of {@link QUALITY_BANDS}, with
 * the run they come from and how they were measured. Its harness compares what a client believes
 * with the truth just before each tick's packet is applied; this harness compares after it, so
 * the two are not comparable, and the report prints them apart, saying so.
 */
export const UMWELT_REFERENCE = Object.freeze({
  source: 'umwelt-rs, 60,000 entities, 200 viewers, 400 ticks, 1/d weights',
  measured: "before each tick's packet is applied, on umwelt-rs's own scenario and harness",
  meanAngularErrorMrad: Object.freeze([9.42, 2.91, 1.4, 0.75]) as readonly number[],
});

/** Options of {@link runQuality}. */
export interface QualityOptions {
  /** Entities, speed-mix scenario (lib/herd.ts). Default 60,000. */
  entities?: number;
  /** Viewers (the herd's first entities; they move too). Default 200. */
  viewers?: number;
  /** Ticks simulated. Default 400. */
  ticks?: number;
  /** Strategies to run, side by side on the same positions. Default all three. */
  strategy?: QualityStrategy | 'all' | readonly QualityStrategy[];
  /** PRNG seed of the herd. Default 1. */
  seed?: number;
  /** Leading ticks left out of the statistics (clients start empty), 0 to ticks - 1. Default 20 (ticks - 1 when fewer ticks run). */
  warmupTicks?: number;
  /** Compare with the truth every this many ticks after the warm-up (1 = every tick). Default 1. */
  measureEvery?: number;
  /** Pass threads of the World (0 = every core). Packets do not depend on it. Default 0. */
  threads?: number;
  /** World configuration (WorldConfig.build input). Default: the defaults (4,096 m region, 256 m radius, 1,200-byte packets). */
  config?: WorldConfigInput;
  /** Called after every tick with the ticks done and the total. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Ends the run early once aborted (checked before each tick): the report then covers the ticks
   * run until then (`ticks` counts them, `interrupted` is true).
   */
  signal?: AbortSignal;
}

/** Statistics of one distance band (or of all bands together) for one strategy. */
export interface QualityBandReport {
  readonly label: string;
  /** (viewer, entity, measured tick) observations with the entity in the viewer's view radius. */
  readonly observations: number;
  /** Of those, the ones where the client held the entity (errors and staleness cover only these). */
  readonly held: number;
  /** 1 - held / observations: in range but not held by the client (never sent, or despawned). */
  readonly notHeldShare: number;
  /** Mean distance between believed and true position, m. */
  readonly meanPositionErrorM: number;
  /** 99th percentile of the same, m (log-binned, ±1%). */
  readonly p99PositionErrorM: number;
  /** Mean angle at the viewer between believed and true position, mrad. */
  readonly meanAngularErrorMrad: number;
  /** 99th percentile of the same, mrad (log-binned, ±1%). */
  readonly p99AngularErrorMrad: number;
  /** Mean ticks since the client last received an update of the entity. */
  readonly meanStalenessTicks: number;
  /** 99th percentile of the same, ticks. */
  readonly p99StalenessTicks: number;
}

/** One strategy's results. */
export interface QualityStrategyReport {
  readonly strategy: QualityStrategy;
  /** One entry per {@link QUALITY_BANDS} band, in order. */
  readonly bands: readonly QualityBandReport[];
  /** All bands together. */
  readonly overall: QualityBandReport;
  /**
   * (viewer, entity) pairs in range at one or more measured ticks for which the viewer never
   * received an update during the whole run.
   */
  readonly neverUpdated: number;
  /** (viewer, entity) pairs in range at one or more measured ticks. */
  readonly inRangePairs: number;
  /** neverUpdated / inRangePairs. */
  readonly neverUpdatedShare: number;
  /** Mean packet size over every packet of the run, bytes (header included). */
  readonly meanPacketBytes: number;
  /** Mean update records per packet. */
  readonly meanUpdatesPerPacket: number;
  /** Mean despawn records per packet. */
  readonly meanDespawnsPerPacket: number;
  /** Largest packet of the run, bytes. */
  readonly maxPacketBytes: number;
}

/** The report of {@link runQuality} (`sightline quality --json` prints it). */
export interface QualityReport {
  readonly command: 'quality';
  readonly scenario: 'speed-mix';
  readonly entities: number;
  readonly viewers: number;
  /** Ticks simulated: the ticks asked for, or fewer when the signal ended the run. */
  readonly ticks: number;
  /** The signal ended the run before all its ticks. */
  readonly interrupted: boolean;
  readonly warmupTicks: number;
  readonly measureEvery: number;
  /** Ticks compared with the truth. */
  readonly measuredTicks: number;
  readonly seed: number;
  readonly threads: number;
  readonly config: {
    readonly regionSize: number;
    readonly viewRadius: number;
    readonly tickHz: number;
    readonly payloadBytes: number;
    readonly slotsPerPacket: number;
    readonly walkCap: number;
    readonly ghostCap: number;
    readonly graceTicks: number;
  };
  /** Mean entities within the view radius of a viewer at a measured tick (the viewer excluded). */
  readonly meanInRange: number;
  readonly bands: readonly QualityBand[];
  readonly strategies: readonly QualityStrategyReport[];
  readonly reference: typeof UMWELT_REFERENCE;
  /** Wall time of the run, ms. */
  readonly wallMs: number;
}
