// Quality harness: how well each client's believed world tracks the truth, per distance band, for
// sightline's priority accumulator and two baselines that spend the same bytes per packet, just
// before and just after each tick's packet is applied (and before it, extrapolated).
//
//   sightline quality [--scenario umwelt|speed-mix|crowd] [--entities N] [--viewers N] [--ticks N]
//                     [--strategy NAME|all] [--seed N] [--warmup N] [--every N] [--threads N] [--json]
//
// Every strategy produces wire-format packets that the client side decodes with decodePacketRaw
// and applies the same way (despawns remove, updates create or move), so only the choice of
// records differs.
import {
  GovernorLevers,
  SightlineError,
  World,
  WorldConfig,
  createRawPacket,
  decodePacketRaw,
  describeValue as describe,
  readGovernor,
  readOptions,
  type RawPacket,
} from 'sightline';
import { readExtrapolation } from 'sightline/net';
import { BandStats } from './band-stats.js';
import { BaselinePackets } from './baselines.js';
import { PairBits, ViewerBeliefs } from './beliefs.js';
import { GatheredSet, TruthGrid, measureBeliefs } from './measure.js';
import { QUALITY_SCENARIOS, QUALITY_SCENARIO_DEFAULTS, createPopulation, type QualityScenario } from './scenarios.js';
import {
  QUALITY_BANDS,
  QUALITY_MOMENTS,
  QUALITY_STRATEGIES,
  UMWELT_REFERENCE,
  type QualityMoment,
  type QualityObserve,
  type QualityOptions,
  type QualityReport,
  type QualityStrategy,
  type QualityStrategyReport,
} from './types.js';

// One strategy's state: its clients' beliefs and packet counters. The baselines also keep, per
// viewer, the despawns queued and (round-robin) a cursor.
interface StrategyState {
  readonly strategy: QualityStrategy;
  /** Per viewer, what its client believes. */
  readonly beliefs: ViewerBeliefs[];
  /** (viewer, entity index) pairs for which the viewer has received an update. */
  readonly everUpdated: PairBits;
  /** Per moment (QUALITY_MOMENTS order), per band. */
  readonly bands: BandStats[][];
  packets: number;
  bytes: number;
  updates: number;
  despawns: number;
  maxBytes: number;
  /** Baselines: despawns (entity indices) queued per viewer, in queue order. */
  readonly queued: number[][];
  /** Round-robin: per viewer, the entity index sent last (-1 before the first). */
  readonly cursor: Int32Array;
  /** Baselines: per viewer, the next packet sequence. */
  readonly sequence: Uint16Array;
}

function invalid(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', message);
}

const QUALITY_OPTIONS = [
  'scenario',
  'entities',
  'viewers',
  'ticks',
  'strategy',
  'seed',
  'warmupTicks',
  'measureEvery',
  'threads',
  'config',
  'extrapolate',
  'observe',
  'governorLevel',
  'onProgress',
  'signal',
] as const;

function checkInt(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) invalid(`${name} must be an integer from ${min} to ${max}, received ${describe(v)}`);
  return v;
}

function strategiesOf(s: QualityOptions['strategy']): QualityStrategy[] {
  if (s === undefined || s === 'all') return [...QUALITY_STRATEGIES];
  const list = typeof s === 'string' ? [s] : [...s];
  if (list.length === 0) invalid('strategy must name at least one strategy');
  for (const x of list) {
    if (!QUALITY_STRATEGIES.includes(x)) invalid(`strategy must be one of all, ${QUALITY_STRATEGIES.join(', ')}, received ${describe(x)}`);
  }
  return QUALITY_STRATEGIES.filter((x) => list.includes(x));
}

// umwelt-rs's harness run, as far as this harness's report can state it (UMWELT_REFERENCE).
const UMWELT_RUN = { entities: 60_000, viewers: 200, ticks: 400, warmupTicks: 40, regionSize: 4096, viewRadius: 256, payloadBytes: 1200, walkCap: 256, ghostCap: 256, graceTicks: 3 };

// What differs between a run and umwelt-rs's published one (beyond the engines), one point a line.
function differences(r: Omit<QualityReport, 'differences' | 'wallMs'>): string[] {
  const out: string[] = [];
  if (r.scenario !== 'umwelt') out.push(`scenario: ${r.scenario}, not umwelt-rs's (${r.scenario === 'speed-mix' ? 'wandering headings, exact shares' : 'a crowd in one cell at walking speed'})`);
  const u = UMWELT_RUN;
  const c = r.config;
  const pairs: [string, number, number][] = [
    ['entities', r.entities, u.entities],
    ['viewers', r.viewers, u.viewers],
    ['ticks', r.ticks, u.ticks],
    ['warm-up ticks', r.warmupTicks, u.warmupTicks],
    ['region (m)', c.regionSize, u.regionSize],
    ['view radius (m)', c.viewRadius, u.viewRadius],
    ['payload bytes', c.payloadBytes, u.payloadBytes],
  ];
  for (const [name, ours, theirs] of pairs) if (ours !== theirs) out.push(`${name}: ${ours}, umwelt-rs's run ${theirs}`);
  if (r.measureEvery !== 1) out.push(`measured every ${r.measureEvery} ticks, umwelt-rs's every tick`);
  if (r.observe !== 'gathered') out.push("compared over every entity in range, umwelt-rs's over the candidates its gather returned");
  if (r.governorLevel !== 0) out.push(`the tick governor's level ${r.governorLevel} held`);
  return out;
}

/**
 * Runs a scenario (tools/quality/scenarios.ts: `umwelt`, umwelt-rs's published one, by default)
 * and compares, on each measured tick, every viewer's believed world with the truth for the
 * entities within its view radius, at three moments ({@link QualityMoment}): just before that
 * tick's packet is applied (umwelt-rs's harness measures here), just after, and before it with
 * each belief extrapolated to the tick (ClientWorld's `extrapolate`).
 *
 * Per tick: the population moves; the World ticks (accumulator packets); the in-range set of each
 * viewer is found on a grid of the true positions; every strategy's client of the viewer is
 * compared with the truth (before, extrapolated); the baselines pick their records from the
 * in-range set; every strategy's packet is decoded (decodePacketRaw) and applied to that
 * strategy's client; the clients are compared again (after). Positions are raw fixed point
 * (lossless on the wire at the default configuration), so an entity updated this tick has error
 * 0 and staleness 0 after its packet.
 *
 * Cost grows with viewers × in-range entities × strategies per measured tick; `measureEvery`
 * thins the comparison (the simulation still runs every tick).
 *
 * @throws SightlineError ERR_SIGHTLINE_INVALID_QUALITY_OPTION for invalid options (and an
 *   `extrapolate` ClientWorld would refuse: ERR_SIGHTLINE_INVALID_ARGUMENT); the World's and the
 *   population's errors (configuration, capacity).
 */
export async function runQuality(qualityOptions: QualityOptions = {}): Promise<QualityReport> {
  const started = performance.now();
  const options = readOptions('runQuality', qualityOptions, QUALITY_OPTIONS) as QualityOptions;
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') {
    invalid(`onProgress must be a function, received ${describe(options.onProgress)}`);
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) invalid(`signal must be an AbortSignal, received ${describe(signal)}`);
  const scenario: QualityScenario = options.scenario ?? 'umwelt';
  if (!QUALITY_SCENARIOS.includes(scenario)) invalid(`scenario must be one of ${QUALITY_SCENARIOS.join(', ')}, received ${describe(scenario)}`);
  const d = QUALITY_SCENARIO_DEFAULTS[scenario];
  const entities = checkInt('entities', options.entities ?? d.entities, 1, 1 << 20);
  const viewers = checkInt('viewers', options.viewers ?? Math.min(d.viewers, entities), 1, entities);
  const ticks = checkInt('ticks', options.ticks ?? d.ticks, 1, 1_000_000);
  const seed = checkInt('seed', options.seed ?? 1, 0, 0xffffffff);
  const warmupTicks =
    options.warmupTicks === undefined ? Math.min(d.warmupTicks, ticks - 1) : checkInt('warmupTicks', options.warmupTicks, 0, ticks - 1);
  const measureEvery = checkInt('measureEvery', options.measureEvery ?? 1, 1, 1_000_000);
  const threads = checkInt('threads', options.threads ?? 0, 0, 256);
  const strategies = strategiesOf(options.strategy);
  const extrapolation = readExtrapolation(options.extrapolate ?? true)!;
  const observe: QualityObserve = options.observe ?? (scenario === 'umwelt' ? 'gathered' : 'in-range');
  if (observe !== 'in-range' && observe !== 'gathered') invalid(`observe must be in-range or gathered, received ${describe(observe)}`);
  const governorLevel = checkInt('governorLevel', options.governorLevel ?? 0, 0, 5);
  const config = WorldConfig.build(options.config);

  const world = new World(config, { capacity: entities, threads });
  try {
    return await measureRun();
  } finally {
    world.close();
  }

  async function measureRun(): Promise<QualityReport> {
    const pop = createPopulation(world, scenario, entities, viewers, seed);
    const X = world.positions.x;
    const Y = world.positions.y;
    const Z = world.positions.z;
    const E = entities;
    const V = viewers;
    const { slots, ids } = pop;

    // Entity index (spawn order) <-> slot and wire id; viewer avatars as entity indices.
    const slotToIndex = new Int32Array(world.capacity).fill(-1);
    for (let i = 0; i < E; i++) slotToIndex[slots[i]] = i;
    const indexOfId = (id: number): number => slotToIndex[id & 0xfffff];
    const viewerIndex = new Int32Array(V);
    const viewerOfAvatar = new Map<number, number>();
    for (let v = 0; v < V; v++) {
      viewerIndex[v] = indexOfId(pop.viewers[v]);
      viewerOfAvatar.set(pop.viewers[v], v);
    }

    const grid = new TruthGrid(config, slots, X, Y);
    const gathered = new GatheredSet();
    const seen = observe === 'gathered' ? gathered : grid;
    const inRangeEver = new PairBits(V, E);
    const states: StrategyState[] = strategies.map((strategy) => ({
      strategy,
      beliefs: Array.from({ length: V }, () => new ViewerBeliefs()),
      everUpdated: new PairBits(V, E),
      bands: QUALITY_MOMENTS.map(() => QUALITY_BANDS.map(() => new BandStats(ticks))),
      packets: 0,
      bytes: 0,
      updates: 0,
      despawns: 0,
      maxBytes: 0,
      queued: Array.from({ length: V }, () => [] as number[]),
      cursor: new Int32Array(V).fill(-1),
      sequence: new Uint16Array(V),
    }));
    const baselines = new BaselinePackets(config);
    const raw: RawPacket = createRawPacket(config.payloadBytes);
    const packetOf = new Int32Array(V);

    // Applies a packet to strategy s's client of viewer v.
    const apply = (s: StrategyState, v: number, bytes: Uint8Array, tick: number): void => {
      const p = decodePacketRaw(bytes, config, raw);
      const beliefs = s.beliefs[v];
      for (let i = 0; i < p.despawnCount; i++) beliefs.delete(indexOfId(p.despawns[i]));
      for (let i = 0; i < p.updateCount; i++) {
        const e = indexOfId(p.ids[i]);
        beliefs.set(e, p.x[i], p.y[i], p.z[i], tick);
        s.everUpdated.set(v, e);
      }
      s.packets++;
      s.bytes += bytes.length;
      s.updates += p.updateCount;
      s.despawns += p.despawnCount;
      if (bytes.length > s.maxBytes) s.maxBytes = bytes.length;
    };
    const BEFORE = QUALITY_MOMENTS.indexOf('before');
    const AFTER = QUALITY_MOMENTS.indexOf('after');
    const EXTRAPOLATED = QUALITY_MOMENTS.indexOf('extrapolated');

    let measuredTicks = 0;
    let inRangeSum = 0;
    let passMsSum = 0;
    let servedSum = 0;
    let examinedSum = 0;
    let candidatesSum = 0;
    let ticksRun = 0;
    for (let t = 1; t <= ticks; t++) {
      if (signal?.aborted) break;
      ticksRun = t;
      pop.step();
      const result = await world.tick();
      const tick = result.tick;
      if (t === 1 && governorLevel > 0) new GovernorLevers(world, readGovernor({}, config.tickHz)!).apply(governorLevel, result);
      grid.rebuild();
      packetOf.fill(-1);
      for (let i = 0; i < result.count; i++) {
        const v = viewerOfAvatar.get(result.viewerAt(i));
        if (v !== undefined) packetOf[v] = i;
      }

      const measure = t > warmupTicks && (t - warmupTicks - 1) % measureEvery === 0;
      if (measure) {
        measuredTicks++;
        passMsSum += result.stats.passMicros / 1000;
        servedSum += result.stats.served;
        examinedSum += result.stats.examined;
        candidatesSum += result.stats.candidates;
      }
      for (let v = 0; v < V; v++) {
        const self = viewerIndex[v];
        const vs = slots[self];
        const vx = X[vs];
        const vy = Y[vs];
        const vz = Z[vs];
        grid.inRange(vx, vy, self);
        if (measure && observe === 'gathered') gathered.fill(world, vx, vy, pop.viewers[v], indexOfId);
        const compare = (moment: number): void => {
          for (const s of states) {
            measureBeliefs(s.beliefs[v], seen, s.bands[moment], slots, X, Y, Z, vx, vy, vz, tick, moment === EXTRAPOLATED ? extrapolation : null);
          }
        };
        if (measure) {
          const n = seen.count;
          inRangeSum += n;
          for (let i = 0; i < n; i++) inRangeEver.set(v, seen.idx[i]);
          compare(BEFORE);
          compare(EXTRAPOLATED);
        }
        for (const s of states) {
          if (s.strategy === 'accumulator') {
            if (packetOf[v] >= 0) apply(s, v, result.bytesAt(packetOf[v]), tick);
          } else {
            const bytes = baselines.packet(s.strategy, s.beliefs[v], s.queued[v], s.cursor, v, grid, ids, slots, X, Y, Z, s.sequence[v]++, tick);
            apply(s, v, bytes, tick);
          }
        }
        if (measure) compare(AFTER);
      }
      options.onProgress?.(t, ticks);
    }

    // Never-updated pairs: in range at a measured tick, never updated during the run.
    const inRangePairs = inRangeEver.count();
    const div = (a: number, b: number): number => (b === 0 ? 0 : a / b);
    const reports: QualityStrategyReport[] = states.map((s) => {
      const never = inRangeEver.countNotIn(s.everUpdated);
      const moments = (band: number | 'all') =>
        Object.fromEntries(
          QUALITY_MOMENTS.map((m: QualityMoment, k) => {
            if (band !== 'all') return [m, s.bands[k][band].report()];
            const overall = new BandStats(ticks);
            for (const b of s.bands[k]) overall.add(b);
            return [m, overall.report()];
          }),
        ) as Pick<QualityStrategyReport['overall'], QualityMoment>;
      const observations = (band: number | 'all') =>
        band === 'all' ? s.bands[BEFORE].reduce((a, b) => a + b.observations, 0) : s.bands[BEFORE][band].observations;
      return {
        strategy: s.strategy,
        bands: QUALITY_BANDS.map((b, i) => ({ label: b.label, observations: observations(i), ...moments(i) })),
        overall: { label: 'all', observations: observations('all'), ...moments('all') },
        neverUpdated: never,
        inRangePairs,
        neverUpdatedShare: div(never, inRangePairs),
        meanPacketBytes: div(s.bytes, s.packets),
        meanUpdatesPerPacket: div(s.updates, s.packets),
        meanDespawnsPerPacket: div(s.despawns, s.packets),
        maxPacketBytes: s.maxBytes,
      };
    });

    const report: Omit<QualityReport, 'differences' | 'wallMs'> = {
      governorLevel,
      meanPassMs: measuredTicks === 0 ? 0 : passMsSum / measuredTicks,
      meanServed: measuredTicks === 0 ? 0 : servedSum / measuredTicks,
      meanExamined: servedSum === 0 ? 0 : examinedSum / servedSum,
      meanCandidates: servedSum === 0 ? 0 : candidatesSum / servedSum,
      command: 'quality',
      scenario,
      entities,
      viewers,
      ticks: ticksRun,
      interrupted: ticksRun < ticks,
      warmupTicks,
      measureEvery,
      measuredTicks,
      seed,
      threads: world.threads,
      config: {
        regionSize: config.regionSize,
        viewRadius: config.viewRadius,
        tickHz: config.tickHz,
        payloadBytes: config.payloadBytes,
        slotsPerPacket: config.slotsPerPacket,
        walkCap: config.walkCap,
        ghostCap: config.ghostCap,
        graceTicks: config.graceTicks,
      },
      observe,
      extrapolate: { maxTicks: extrapolation.maxTicks, maxStep: extrapolation.maxStepRaw / 1024 },
      meanInRange: measuredTicks === 0 ? 0 : inRangeSum / (measuredTicks * V),
      bands: QUALITY_BANDS,
      strategies: reports,
      reference: UMWELT_REFERENCE,
    };
    return { ...report, differences: differences(report), wallMs: performance.now() - started };
  }
}
