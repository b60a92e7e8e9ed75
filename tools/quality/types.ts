// The quality harness's options, strategies, distance bands, moments and report shapes.
import type { WorldConfigInput } from 'sightline';
import type { ExtrapolationOptions } from 'sightline/net';
import type { QualityScenario } from './scenarios.js';

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
 * When a client's belief is compared with the truth of a tick:
 *
 * - `before`: just before that tick's packet is applied (what umwelt-rs's harness measures): an
 *   entity updated on every tick is still one tick of motion behind.
 * - `after`: just after it: an entity the packet carried has no error.
 * - `extrapolated`: before the packet, each held entity's position extrapolated to the tick from
 *   its two newest updates, as ClientWorld's `extrapolate` option and `predict` do
 *   (lib/net/extrapolate.ts). Reported beside the raw figures, never in their place.
 */
export type QualityMoment = 'before' | 'after' | 'extrapolated';

/** What a run compares each client over (see {@link QualityOptions.observe}). */
export type QualityObserve = 'in-range' | 'gathered';

/** Valid {@link QualityMoment} values, in report order. */
export const QUALITY_MOMENTS: readonly QualityMoment[] = Object.freeze(['before', 'after', 'extrapolated'] as const);

/**
 * Published mean angular errors of umwelt-rs (mrad) for the bands of {@link QUALITY_BANDS}, with
 * the run they come from: its harness (examples/harness.rs) on the scenario this harness calls
 * `umwelt`, measured before each tick's packet is applied, with umwelt-rs's engine (its 1/d
 * weights, ghost cap 256, walk cap 256, grace 3, 1,200-byte packets of 98 records).
 */
export const UMWELT_REFERENCE = Object.freeze({
  source: 'umwelt-rs, 60,000 entities, 200 viewers (walkers), 400 ticks, 1/d weights, measured before the packet',
  measured: "before each tick's packet is applied, on its umwelt scenario",
  scenario: 'umwelt' as QualityScenario,
  moment: 'before' as QualityMoment,
  meanAngularErrorMrad: Object.freeze([9.42, 2.91, 1.4, 0.75]) as readonly number[],
});

/** Options of {@link runQuality}. */
export interface QualityOptions {
  /** The population (tools/quality/scenarios.ts). Default `'umwelt'`. */
  scenario?: QualityScenario;
  /** Entities. Default: the scenario's (QUALITY_SCENARIO_DEFAULTS: 60,000; crowd 4,096). */
  entities?: number;
  /** Viewers (they move too). Default: the scenario's (200; crowd 100). */
  viewers?: number;
  /** Ticks simulated. Default: the scenario's (400; crowd 200). */
  ticks?: number;
  /** Strategies to run, side by side on the same positions. Default all three. */
  strategy?: QualityStrategy | 'all' | readonly QualityStrategy[];
  /** PRNG seed of the herd. Default 1. */
  seed?: number;
  /** Leading ticks left out of the statistics (clients start empty), 0 to ticks - 1. Default: the scenario's (umwelt 40, else 20; ticks - 1 when fewer ticks run). */
  warmupTicks?: number;
  /** Compare with the truth every this many ticks after the warm-up (1 = every tick). Default 1. */
  measureEvery?: number;
  /** Pass threads of the World (0 = every core). Packets do not depend on it. Default 0. */
  threads?: number;
  /** World configuration (WorldConfig.build input). Default: the defaults (4,096 m region, 256 m radius, 1,200-byte packets). */
  config?: WorldConfigInput;
  /** The extrapolation of the `extrapolated` moment (ClientWorld's `extrapolate` option). Default: its defaults (20 ticks ahead at most, any step). */
  extrapolate?: ExtrapolationOptions;
  /**
   * What each viewer's client is compared over: `'in-range'`, every entity within its view radius
   * (the truth, brute force), or `'gathered'`, the candidates the engine's capped gather returns for
   * it that tick (what umwelt-rs's harness compares over: a held entity the walk did not reach is
   * left out). Default `'gathered'` for the umwelt scenario, else `'in-range'`.
   */
  observe?: QualityObserve;
  /**
   * Holds the tick governor's levers at this level (0 to 5, GOVERNOR_LEVELS) from the end of the
   * first tick on, as run() would under load: what each level costs in error, and (`meanPassMs`)
   * saves in time. Default 0.
   */
  governorLevel?: number;
  /** Called after every tick with the ticks done and the total. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Ends the run early once aborted (checked before each tick): the report then covers the ticks
   * run until then (`ticks` counts them, `interrupted` is true).
   */
  signal?: AbortSignal;
}

/** Statistics of one band of one strategy at one {@link QualityMoment}. */
export interface QualityMomentReport {
  /** Observations where the client held the entity (errors and staleness cover only these). */
  readonly held: number;
  /** 1 - held / observations: in range but not held by the client (never sent, or despawned). */
  readonly notHeldShare: number;
  /** Mean distance between believed and true position, m. */
  readonly meanPositionErrorM: number;
  /** 99th percentile of the same, m (log-binned, ±1%). */
  readonly p99PositionErrorM: number;
  /**
   * Mean angular error, mrad, as umwelt-rs's harness computes it: the distance between believed
   * and true position over the true distance from the viewer (floored at 1 m), × 1000.
   */
  readonly meanAngularErrorMrad: number;
  /** 99th percentile of the same, mrad (log-binned, ±1%). */
  readonly p99AngularErrorMrad: number;
  /** Mean ticks since the client last received an update of the entity (before the packet: at least 1). */
  readonly meanStalenessTicks: number;
  /** 99th percentile of the same, ticks. */
  readonly p99StalenessTicks: number;
}

/** Statistics of one distance band (or of all bands together) for one strategy. */
export interface QualityBandReport {
  readonly label: string;
  /** (viewer, entity, measured tick) observations: the entity in the viewer's view radius (or among its gathered candidates). */
  readonly observations: number;
  readonly before: QualityMomentReport;
  readonly after: QualityMomentReport;
  readonly extrapolated: QualityMomentReport;
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
  readonly scenario: QualityScenario;
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
  /** What each client was compared over. */
  readonly observe: QualityObserve;
  /** The extrapolation of the `extrapolated` moment: maxTicks, and maxStep in m per tick. */
  readonly extrapolate: { readonly maxTicks: number; readonly maxStep: number };
  /** Mean entities compared per viewer at a measured tick (within its view radius, or gathered; the viewer excluded). */
  readonly meanInRange: number;
  readonly bands: readonly QualityBand[];
  readonly strategies: readonly QualityStrategyReport[];
  readonly reference: typeof UMWELT_REFERENCE;
  /**
   * What differs between this run and the one `reference` comes from, beyond the engines
   * themselves, one point a line (the scenario, counts, configuration, moment). Empty when none.
   */
  readonly differences: readonly string[];
  /** The governor level held (0: none). */
  readonly governorLevel: number;
  /** The engine's pass (stats.passMicros) per tick, mean over the measured ticks, ms. */
  readonly meanPassMs: number;
  /** Viewers served per tick, mean over the measured ticks. */
  readonly meanServed: number;
  /** Per served viewer, mean over the measured ticks: entities the gather examined, and candidates it kept (the pass's work). */
  readonly meanExamined: number;
  readonly meanCandidates: number;
  /** Wall time of the run, ms. */
  readonly wallMs: number;
}
