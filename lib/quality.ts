// Quality harness: how well each client's believed world tracks the truth, per distance band, for
// sightline's priority accumulator and two baselines that spend the same bytes per packet.
//
//   sightline quality [--entities N] [--viewers N] [--ticks N] [--strategy NAME|all] [--seed N]
//                     [--warmup N] [--every N] [--threads N] [--json]
//
// Every strategy produces wire-format packets that the client side decodes with decodePacketRaw
// and applies the same way (despawns remove, updates create or move), so only the choice of
// records differs.
import { DESPAWN_RECORD_BYTES, HEADER_BYTES, PROTOCOL_VERSION, RECORD_BYTES, UNCAPPED_WALK, WorldConfig, type WorldConfigInput } from './config.js';
import { createRawPacket, decodePacketRaw, type RawPacket } from './decode.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { RAW_PER_METER } from './fixed.js';
import { createHerd } from './herd.js';
import { World } from './world.js';

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
 * the run they come from.
 */
export const UMWELT_REFERENCE = Object.freeze({
  source: 'umwelt-rs, 60,000 entities, 200 viewers, 400 ticks, 1/d weights',
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

// ---------------------------------------------------------------------------------------------
// Histograms: log-spaced bins for errors (ratio 1.02 between bin edges), integer bins for ticks.

const LOG_MIN = 1e-6;
const LOG_RATIO = Math.log(1.02);
const LOG_BINS = 1 + Math.ceil(Math.log(1e6 / LOG_MIN) / LOG_RATIO);

function logBin(v: number): number {
  if (!(v > LOG_MIN)) return 0;
  const b = 1 + Math.floor(Math.log(v / LOG_MIN) / LOG_RATIO);
  return b >= LOG_BINS ? LOG_BINS - 1 : b;
}

// The value at quantile q of a log histogram: the geometric middle of the bin (0 for bin 0).
function logQuantile(h: Float64Array, total: number, q: number): number {
  if (total === 0) return 0;
  const want = Math.ceil(q * total);
  let cum = 0;
  for (let b = 0; b < h.length; b++) {
    cum += h[b];
    if (cum >= want) return b === 0 ? 0 : LOG_MIN * Math.exp((b - 0.5) * LOG_RATIO);
  }
  return LOG_MIN * Math.exp((h.length - 1) * LOG_RATIO);
}

function intQuantile(h: Float64Array, total: number, q: number): number {
  if (total === 0) return 0;
  const want = Math.ceil(q * total);
  let cum = 0;
  for (let b = 0; b < h.length; b++) {
    cum += h[b];
    if (cum >= want) return b;
  }
  return h.length - 1;
}

// Accumulators of one band of one strategy.
class BandStats {
  observations = 0;
  held = 0;
  sumPos = 0;
  sumAng = 0;
  sumStale = 0;
  readonly posHist = new Float64Array(LOG_BINS);
  readonly angHist = new Float64Array(LOG_BINS);
  readonly staleHist: Float64Array;
  constructor(ticks: number) {
    this.staleHist = new Float64Array(ticks + 2);
  }
  add(o: BandStats): void {
    this.observations += o.observations;
    this.held += o.held;
    this.sumPos += o.sumPos;
    this.sumAng += o.sumAng;
    this.sumStale += o.sumStale;
    for (let i = 0; i < LOG_BINS; i++) {
      this.posHist[i] += o.posHist[i];
      this.angHist[i] += o.angHist[i];
    }
    for (let i = 0; i < this.staleHist.length; i++) this.staleHist[i] += o.staleHist[i];
  }
  report(label: string): QualityBandReport {
    const h = this.held;
    const div = (a: number, b: number): number => (b === 0 ? 0 : a / b);
    return {
      label,
      observations: this.observations,
      held: h,
      notHeldShare: div(this.observations - h, this.observations),
      meanPositionErrorM: div(this.sumPos, h),
      p99PositionErrorM: logQuantile(this.posHist, h, 0.99),
      meanAngularErrorMrad: div(this.sumAng, h),
      p99AngularErrorMrad: logQuantile(this.angHist, h, 0.99),
      meanStalenessTicks: div(this.sumStale, h),
      p99StalenessTicks: intQuantile(this.staleHist, h, 0.99),
    };
  }
}

// What one client believes: an open-addressing hash table (linear probing, backward-shift
// deletion) from entity index to the believed position (raw) and the tick of its last update, with
// a despawn-queued flag per entry for the baselines. Small enough to stay in cache while the
// viewer is measured.
class ViewerBeliefs {
  // Assigned by allocate(), which the constructor calls.
  keys!: Int32Array;
  x!: Int32Array;
  y!: Int32Array;
  z!: Int32Array;
  tick!: Int32Array;
  queued!: Uint8Array;
  size = 0;
  mask!: number;
  shift!: number;
  constructor(bits = 10) {
    this.allocate(1 << bits);
  }
  // Empty arrays of n slots (a power of two).
  private allocate(n: number): void {
    const bits = 31 - Math.clz32(n);
    this.keys = new Int32Array(n).fill(-1);
    this.x = new Int32Array(n);
    this.y = new Int32Array(n);
    this.z = new Int32Array(n);
    this.tick = new Int32Array(n);
    this.queued = new Uint8Array(n);
    this.mask = n - 1;
    this.shift = 32 - bits;
    this.size = 0;
  }
  private home(e: number): number {
    return Math.imul(e, 0x9e3779b1) >>> this.shift;
  }
  /** Entry of entity e, or -1 when not held. */
  find(e: number): number {
    const keys = this.keys;
    let h = this.home(e);
    for (;;) {
      const k = keys[h];
      if (k === e) return h;
      if (k < 0) return -1;
      h = (h + 1) & this.mask;
    }
  }
  /** Sets the belief of entity e; returns its entry. */
  set(e: number, x: number, y: number, z: number, tick: number): number {
    if (2 * (this.size + 1) > this.keys.length) this.rehash(this.keys.length * 2);
    const keys = this.keys;
    let h = this.home(e);
    for (;;) {
      const k = keys[h];
      if (k === e) break;
      if (k < 0) {
        keys[h] = e;
        this.queued[h] = 0;
        this.size++;
        break;
      }
      h = (h + 1) & this.mask;
    }
    this.x[h] = x;
    this.y[h] = y;
    this.z[h] = z;
    this.tick[h] = tick;
    return h;
  }
  /** Forgets entity e (no-op when not held). */
  delete(e: number): void {
    let i = this.find(e);
    if (i < 0) return;
    const { keys, mask } = this;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const k = keys[j];
      if (k < 0) break;
      const h = this.home(k);
      // Entry j may move to the hole at i unless its home lies cyclically in (i, j].
      const stays = i <= j ? i < h && h <= j : i < h || h <= j;
      if (stays) continue;
      keys[i] = k;
      this.x[i] = this.x[j];
      this.y[i] = this.y[j];
      this.z[i] = this.z[j];
      this.tick[i] = this.tick[j];
      this.queued[i] = this.queued[j];
      i = j;
    }
    keys[i] = -1;
    this.size--;
  }
  private rehash(n: number): void {
    const { keys, x, y, z, tick, queued } = this;
    this.allocate(n);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] < 0) continue;
      const h = this.set(keys[i], x[i], y[i], z[i], tick[i]);
      this.queued[h] = queued[i];
    }
  }
}

// A bit per (viewer, entity index), one row of ceil(E / 32) words per viewer.
class PairBits {
  readonly words: Uint32Array;
  readonly stride: number;
  constructor(viewers: number, entities: number) {
    this.stride = (entities + 31) >>> 5;
    this.words = new Uint32Array(viewers * this.stride);
  }
  set(v: number, e: number): void {
    this.words[v * this.stride + (e >>> 5)] |= 1 << (e & 31);
  }
  /** Pairs set here and not in `other`. */
  countNotIn(other: PairBits): number {
    let n = 0;
    for (let i = 0; i < this.words.length; i++) {
      let w = (this.words[i] & ~other.words[i]) >>> 0;
      while (w !== 0) {
        w &= w - 1;
        n++;
      }
    }
    return n;
  }
  count(): number {
    let n = 0;
    for (let i = 0; i < this.words.length; i++) {
      let w = this.words[i];
      while (w !== 0) {
        w &= w - 1;
        n++;
      }
    }
    return n;
  }
}

// One strategy's state: its clients' beliefs and packet counters. The baselines also keep, per
// viewer, the despawns queued and (round-robin) a cursor.
interface StrategyState {
  readonly strategy: QualityStrategy;
  /** Per viewer, what its client believes. */
  readonly beliefs: ViewerBeliefs[];
  /** (viewer, entity index) pairs for which the viewer has received an update. */
  readonly everUpdated: PairBits;
  readonly bands: BandStats[];
  packets: number;
  bytes: number;
  updates: number;
  despawns: number;
  maxBytes: number;
  /** Baselines: despawns (entity indices) queued per viewer, in queue order. */
  readonly queued: number[][];
  /** Round-robin: per viewer, the entity index sent last (-1 before the first). */
  readonly cursor: Int32Array;
}

function invalid(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', message);
}

const QUALITY_OPTIONS = ['entities', 'viewers', 'ticks', 'strategy', 'seed', 'warmupTicks', 'measureEvery', 'threads', 'config', 'onProgress', 'signal'] as const;

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

// Writes a packet in the wire format (docs/wire-format.md): header, despawn ids, update records.
// ids: wire ids; xs/ys/zs: raw positions of the updates. Returns the packet's length in bytes.
function encodePacket(
  out: Uint8Array,
  view: DataView,
  config: WorldConfig,
  sequence: number,
  tick: number,
  despawnIds: ArrayLike<number>,
  despawnCount: number,
  ids: ArrayLike<number>,
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  zs: ArrayLike<number>,
  updateCount: number,
): number {
  out[0] = PROTOCOL_VERSION;
  out[1] = 0;
  view.setUint16(2, sequence & 0xffff, true);
  view.setUint32(4, tick >>> 0, true);
  view.setUint16(8, 0, true);
  view.setUint16(10, 0, true);
  view.setUint16(12, despawnCount, true);
  view.setUint16(14, updateCount, true);
  let p = HEADER_BYTES;
  for (let i = 0; i < despawnCount; i++, p += DESPAWN_RECORD_BYTES) view.setUint32(p, despawnIds[i] >>> 0, true);
  const q = config.quantShift;
  const B = config.regionShift - q;
  const zHalf = Math.floor(config.verticalRaw / 2);
  const zMax = config.verticalRaw - 1;
  for (let i = 0; i < updateCount; i++, p += RECORD_BYTES) {
    const zc = Math.min(Math.max(zs[i] + zHalf, 0), zMax);
    let lo = 0;
    let hi = 0;
    // Fields of at most 26 bits at bit offsets 0, B and 2B of a 64-bit word.
    const put = (offset: number, v: number): void => {
      if (offset >= 32) hi |= v << (offset - 32);
      else {
        lo |= v << offset;
        if (offset > 0) hi |= v >>> (32 - offset);
      }
    };
    put(0, xs[i] >>> q);
    put(B, ys[i] >>> q);
    put(2 * B, zc >>> q);
    view.setUint32(p, ids[i] >>> 0, true);
    view.setUint32(p + 4, lo >>> 0, true);
    view.setUint32(p + 8, hi >>> 0, true);
  }
  return p;
}

/**
 * Runs the speed-mix scenario (lib/herd.ts: 35% still, 25% at 0.2 m/s, 25% at 1.5 m/s, 10% at
 * 6 m/s, 5% at 30 m/s, wandering, uniformly placed) and compares, after each measured tick, every
 * viewer's believed world with the truth for the entities within its view radius.
 *
 * Per tick: the herd moves; the World ticks (accumulator packets); the in-range set of each viewer
 * is found on a grid of the true positions; the baselines pick their records from it; every
 * strategy's packet is decoded (decodePacketRaw) and applied to that strategy's client of the
 * viewer; then, on measured ticks, each in-range entity's believed position is compared with its
 * true position at that tick. Positions are raw fixed point (lossless on the wire at the default
 * configuration), so an entity updated this tick has error 0 and staleness 0.
 *
 * Cost grows with viewers × in-range entities × strategies per measured tick; `measureEvery`
 * thins the comparison (the simulation still runs every tick).
 *
 * @throws SightlineError ERR_SIGHTLINE_INVALID_QUALITY_OPTION for invalid options; the World's
 *   and the herd's errors (configuration, capacity).
 */
export async function runQuality(qualityOptions: QualityOptions = {}): Promise<QualityReport> {
  const started = performance.now();
  const options = readOptions('runQuality', qualityOptions, QUALITY_OPTIONS) as QualityOptions;
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', `onProgress must be a function, received ${describe(options.onProgress)}`);
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', `signal must be an AbortSignal, received ${describe(signal)}`);
  }
  const entities = checkInt('entities', options.entities ?? 60_000, 1, 1 << 20);
  const viewers = checkInt('viewers', options.viewers ?? 200, 1, entities);
  const ticks = checkInt('ticks', options.ticks ?? 400, 1, 1_000_000);
  const seed = checkInt('seed', options.seed ?? 1, 0, 0xffffffff);
  const warmupTicks =
    options.warmupTicks === undefined ? Math.min(20, ticks - 1) : checkInt('warmupTicks', options.warmupTicks, 0, ticks - 1);
  const measureEvery = checkInt('measureEvery', options.measureEvery ?? 1, 1, 1_000_000);
  const threads = checkInt('threads', options.threads ?? 0, 0, 256);
  const strategies = strategiesOf(options.strategy);
  const config = WorldConfig.build(options.config);

  const world = new World(config, { capacity: entities, threads });
  const herd = createHerd(world, { scenario: 'speed-mix', entities, viewers, seed });
  const X = world.positions.x;
  const Y = world.positions.y;
  const Z = world.positions.z;
  const E = entities;
  const V = viewers;

  // Entity index (spawn order) <-> slot and wire id; viewer avatars as entity indices.
  const slots = herd.slots;
  const ids = herd.ids;
  const slotToIndex = new Int32Array(world.capacity).fill(-1);
  for (let i = 0; i < E; i++) slotToIndex[slots[i]] = i;
  const indexOfId = (id: number): number => slotToIndex[id & 0xfffff];
  const viewerIndex = new Int32Array(V);
  const viewerOfAvatar = new Map<number, number>();
  for (let v = 0; v < V; v++) {
    viewerIndex[v] = indexOfId(herd.viewers[v]);
    viewerOfAvatar.set(herd.viewers[v], v);
  }

  // Grid of true positions (cell = config.cellRaw), rebuilt every tick by counting sort.
  const cellShift = config.cellShift;
  const cpa = config.cellsPerAxis;
  const cellRadius = config.cellRadius;
  const region = config.regionRaw;
  // Cells 0 .. cpa² - 1, then one bucket for entities outside the region (never in range).
  const outside = cpa * cpa;
  const cellStart = new Int32Array(outside + 2);
  const cellOf = new Int32Array(E);
  const cellItems = new Int32Array(E);
  const radiusSq = config.viewRadiusRaw * config.viewRadiusRaw;
  // Band edges in raw² (squared distance).
  const bandEdgeSq = QUALITY_BANDS.slice(0, -1).map((b) => (b.maxM * RAW_PER_METER) ** 2);
  const bandOf = (d2: number): number => (d2 < bandEdgeSq[0] ? 0 : d2 < bandEdgeSq[1] ? 1 : d2 < bandEdgeSq[2] ? 2 : 3);

  // Per-viewer scratch: in-range entity indices and squared distances.
  let inIdx = new Int32Array(1024);
  let inD2 = new Float64Array(1024);
  let sortD2 = new Float64Array(1024);
  let sortIdx = new Int32Array(1024);
  const inRangeStamp = new Int32Array(E);
  let stamp = 0;
  const inRangeEver = new PairBits(V, E);

  const states: StrategyState[] = strategies.map((strategy) => ({
    strategy,
    beliefs: Array.from({ length: V }, () => new ViewerBeliefs()),
    everUpdated: new PairBits(V, E),
    bands: QUALITY_BANDS.map(() => new BandStats(ticks)),
    packets: 0,
    bytes: 0,
    updates: 0,
    despawns: 0,
    maxBytes: 0,
    queued: Array.from({ length: V }, () => [] as number[]),
    cursor: new Int32Array(V).fill(-1),
  }));

  // Baseline packet assembly buffers.
  const payloadBytes = config.payloadBytes;
  const stateBytes = payloadBytes - HEADER_BYTES - config.eventReserveBytes;
  const maxDespawns = Math.floor(stateBytes / 2 / DESPAWN_RECORD_BYTES);
  const pkt = new Uint8Array(payloadBytes);
  const pktView = new DataView(pkt.buffer);
  const dIds = new Uint32Array(maxDespawns);
  const uIds = new Uint32Array(Math.floor(stateBytes / RECORD_BYTES));
  const uX = new Int32Array(uIds.length);
  const uY = new Int32Array(uIds.length);
  const uZ = new Int32Array(uIds.length);
  const seq = states.map(() => new Uint16Array(V));
  const raw: RawPacket = createRawPacket(payloadBytes);

  // Applies a decoded packet to strategy s's client of viewer v.
  const apply = (s: StrategyState, v: number, p: RawPacket, tick: number, bytes: number): void => {
    const beliefs = s.beliefs[v];
    for (let i = 0; i < p.despawnCount; i++) beliefs.delete(indexOfId(p.despawns[i]));
    for (let i = 0; i < p.updateCount; i++) {
      const e = indexOfId(p.ids[i]);
      beliefs.set(e, p.x[i], p.y[i], p.z[i], tick);
      s.everUpdated.set(v, e);
    }
    s.packets++;
    s.bytes += bytes;
    s.updates += p.updateCount;
    s.despawns += p.despawnCount;
    if (bytes > s.maxBytes) s.maxBytes = bytes;
  };

  // A baseline's packet for viewer v from the in-range set inIdx[0, n) (stamped in inRangeStamp).
  const baselinePacket = (s: StrategyState, k: number, v: number, n: number, tick: number): void => {
    const beliefs = s.beliefs[v];
    const queue = s.queued[v];
    // Queue a despawn for every held entity that left the radius and is not queued yet.
    const keys = beliefs.keys;
    for (let h = 0; h < keys.length; h++) {
      const e = keys[h];
      if (e >= 0 && inRangeStamp[e] !== stamp && beliefs.queued[h] === 0) {
        beliefs.queued[h] = 1;
        queue.push(e);
      }
    }
    let despawns = 0;
    let keep = 0;
    for (let i = 0; i < queue.length; i++) {
      const e = queue[i];
      if (inRangeStamp[e] === stamp) {
        const h = beliefs.find(e); // back in range: it stays
        if (h >= 0) beliefs.queued[h] = 0;
        continue;
      }
      if (despawns < maxDespawns) dIds[despawns++] = ids[e];
      else queue[keep++] = e;
    }
    queue.length = keep;
    const slotsLeft = Math.floor((stateBytes - despawns * DESPAWN_RECORD_BYTES) / RECORD_BYTES);
    const take = Math.min(slotsLeft, n);
    let u = 0;
    // Appends entity e (an index into ids/slots) as the next update record.
    const push = (e: number): void => {
      uIds[u] = ids[e];
      uX[u] = X[slots[e]];
      uY[u] = Y[slots[e]];
      uZ[u] = Z[slots[e]];
      u++;
    };
    if (s.strategy === 'nearest-first') {
      if (take < n) {
        // Threshold: the take-th smallest squared distance; ties broken by entity index.
        const sd = sortD2.subarray(0, n);
        sd.set(inD2.subarray(0, n));
        sd.sort();
        const t = sd[take - 1];
        let below = 0;
        for (let i = 0; i < n; i++) if (inD2[i] < t) below++;
        let ties = 0;
        const ti = sortIdx;
        for (let i = 0; i < n; i++) {
          if (inD2[i] < t) push(inIdx[i]);
          else if (inD2[i] === t) ti[ties++] = inIdx[i];
        }
        const tied = ti.subarray(0, ties).sort();
        for (let i = 0; i < take - below; i++) push(tied[i]);
      } else {
        for (let i = 0; i < n; i++) push(inIdx[i]);
      }
    } else {
      // Round-robin: in-range entities in index order, starting after the cursor, wrapping.
      const order = sortIdx.subarray(0, n);
      order.set(inIdx.subarray(0, n));
      order.sort();
      const c = s.cursor[v];
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (order[mid] <= c) lo = mid + 1;
        else hi = mid;
      }
      for (let j = 0; j < take; j++) push(order[(lo + j) % n]);
      if (take > 0) s.cursor[v] = order[(lo + take - 1) % n];
    }
    const len = encodePacket(pkt, pktView, config, seq[k][v]++, tick, dIds, despawns, uIds, uX, uY, uZ, u);
    const p = decodePacketRaw(pkt.subarray(0, len), config, raw);
    apply(s, v, p, tick, len);
  };

  let measuredTicks = 0;
  let inRangeSum = 0;
  const accumulator = states.find((s) => s.strategy === 'accumulator');
  let ticksRun = 0;
  for (let t = 1; t <= ticks; t++) {
    if (signal?.aborted) break;
    ticksRun = t;
    herd.step();
    const result = await world.tick();
    const tick = result.tick;

    // Truth grid.
    cellStart.fill(0);
    for (let i = 0; i < E; i++) {
      const s = slots[i];
      const x = X[s];
      const y = Y[s];
      const c = x < 0 || y < 0 || x >= region || y >= region ? outside : (y >> cellShift) * cpa + (x >> cellShift);
      cellOf[i] = c;
      cellStart[c + 1]++;
    }
    for (let c = 0; c <= outside; c++) cellStart[c + 1] += cellStart[c];
    const fill = cellStart.slice(0, outside + 1);
    for (let i = 0; i < E; i++) cellItems[fill[cellOf[i]]++] = i;

    // Accumulator packets.
    if (accumulator) {
      for (let i = 0; i < result.count; i++) {
        const v = viewerOfAvatar.get(result.viewerAt(i));
        if (v === undefined) continue;
        const bytes = result.bytesAt(i);
        apply(accumulator, v, decodePacketRaw(bytes, config, raw), tick, bytes.length);
      }
    }

    const measure = t > warmupTicks && (t - warmupTicks - 1) % measureEvery === 0;
    if (measure) measuredTicks++;
    for (let v = 0; v < V; v++) {
      const self = viewerIndex[v];
      const vs = slots[self];
      const vx = X[vs];
      const vy = Y[vs];
      const vz = Z[vs];
      stamp++;
      // In-range set: the cells within cellRadius, then the exact distance.
      let n = 0;
      if (vx >= 0 && vy >= 0 && vx < region && vy < region) {
        const cx = vx >> cellShift;
        const cy = vy >> cellShift;
        for (let gy = Math.max(0, cy - cellRadius); gy <= Math.min(cpa - 1, cy + cellRadius); gy++) {
          for (let gx = Math.max(0, cx - cellRadius); gx <= Math.min(cpa - 1, cx + cellRadius); gx++) {
            const c = gy * cpa + gx;
            for (let j = cellStart[c]; j < cellStart[c + 1]; j++) {
              const e = cellItems[j];
              if (e === self) continue;
              const s = slots[e];
              const dx = X[s] - vx;
              const dy = Y[s] - vy;
              const d2 = dx * dx + dy * dy;
              if (d2 > radiusSq) continue;
              if (n === inIdx.length) {
                const grow = n * 2;
                const a = new Int32Array(grow);
                a.set(inIdx);
                inIdx = a;
                const b = new Float64Array(grow);
                b.set(inD2);
                inD2 = b;
                sortD2 = new Float64Array(grow);
                sortIdx = new Int32Array(grow);
              }
              inIdx[n] = e;
              inD2[n] = d2;
              inRangeStamp[e] = stamp;
              n++;
            }
          }
        }
      }

      for (let k = 0; k < states.length; k++) {
        const s = states[k];
        if (s.strategy !== 'accumulator') baselinePacket(s, k, v, n, tick);
      }
      if (!measure) continue;
      inRangeSum += n;
      for (let i = 0; i < n; i++) inRangeEver.set(v, inIdx[i]);
      for (const s of states) {
        const beliefs = s.beliefs[v];
        const { x: bx, y: by, z: bz, tick: bt } = beliefs;
        const bands = s.bands;
        for (let i = 0; i < n; i++) {
          const e = inIdx[i];
          const st = bands[bandOf(inD2[i])];
          st.observations++;
          const r = beliefs.find(e);
          if (r < 0) continue;
          st.held++;
          const es = slots[e];
          const tx = X[es];
          const ty = Y[es];
          const tz = Z[es];
          const ex = bx[r] - tx;
          const ey = by[r] - ty;
          const ez = bz[r] - tz;
          const pos = Math.sqrt(ex * ex + ey * ey + ez * ez) / RAW_PER_METER;
          // Angle at the viewer between the believed and the true direction.
          const ux = bx[r] - vx;
          const uy = by[r] - vy;
          const uz = bz[r] - vz;
          const wx = tx - vx;
          const wy = ty - vy;
          const wz = tz - vz;
          const cx = uy * wz - uz * wy;
          const cy = uz * wx - ux * wz;
          const cz = ux * wy - uy * wx;
          const ang = pos === 0 ? 0 : Math.atan2(Math.sqrt(cx * cx + cy * cy + cz * cz), ux * wx + uy * wy + uz * wz) * 1000;
          const stale = tick - bt[r];
          st.sumPos += pos;
          st.sumAng += ang;
          st.sumStale += stale;
          st.posHist[logBin(pos)]++;
          st.angHist[logBin(ang)]++;
          st.staleHist[stale < st.staleHist.length ? stale : st.staleHist.length - 1]++;
        }
      }
    }
    options.onProgress?.(t, ticks);
  }

  // Never-updated pairs: in range at a measured tick, never updated during the run.
  const inRangePairs = inRangeEver.count();
  const reports: QualityStrategyReport[] = states.map((s) => {
    const never = inRangeEver.countNotIn(s.everUpdated);
    const overall = new BandStats(ticks);
    for (const b of s.bands) overall.add(b);
    const div = (a: number, b: number): number => (b === 0 ? 0 : a / b);
    return {
      strategy: s.strategy,
      bands: s.bands.map((b, i) => b.report(QUALITY_BANDS[i].label)),
      overall: overall.report('all'),
      neverUpdated: never,
      inRangePairs,
      neverUpdatedShare: div(never, inRangePairs),
      meanPacketBytes: div(s.bytes, s.packets),
      meanUpdatesPerPacket: div(s.updates, s.packets),
      meanDespawnsPerPacket: div(s.despawns, s.packets),
      maxPacketBytes: s.maxBytes,
    };
  });

  return {
    command: 'quality',
    scenario: 'speed-mix',
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
      regionSize: config.input.regionSize,
      viewRadius: config.input.viewRadius,
      tickHz: config.input.tickHz,
      payloadBytes: config.payloadBytes,
      slotsPerPacket: config.slotsPerPacket,
      walkCap: config.walkCap,
      ghostCap: config.ghostCap,
      graceTicks: config.graceTicks,
    },
    meanInRange: measuredTicks === 0 ? 0 : inRangeSum / (measuredTicks * V),
    bands: QUALITY_BANDS,
    strategies: reports,
    reference: UMWELT_REFERENCE,
    wallMs: performance.now() - started,
  };
}

// ---------------------------------------------------------------------------------------------
// Report formatting and the command.

function num(v: number, decimals: number): string {
  return v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** Renders a quality report as a text table: strategies side by side, umwelt-rs beside them. */
export function formatQualityReport(r: QualityReport): string {
  const names = r.strategies.map((s) => s.strategy);
  const ref = r.reference.meanAngularErrorMrad;
  const header = ['', ...names, 'umwelt-rs¹'];
  const rows: (string[] | 'rule')[] = [header, 'rule'];
  const section = (title: string): void => {
    rows.push([title, ...names.map(() => ''), '']);
  };
  // A band with nothing to measure (no entity held there, or none in range) shows a dash, not 0.
  const perBand = (fmtBand: (b: QualityBandReport) => string, refs?: readonly number[], overall = true, ofHeld = true): void => {
    const cell = (b: QualityBandReport): string => ((ofHeld ? b.held : b.observations) === 0 ? '–' : fmtBand(b));
    r.bands.forEach((band, i) => rows.push([`  ${band.label}`, ...r.strategies.map((s) => cell(s.bands[i])), refs ? num(refs[i], 2) : '']));
    if (overall) rows.push(['  all', ...r.strategies.map((s) => cell(s.overall)), '']);
  };
  section('angular error, mean (mrad)');
  perBand((b) => num(b.meanAngularErrorMrad, 2), ref);
  section('angular error, p99 (mrad)');
  perBand((b) => num(b.p99AngularErrorMrad, 1));
  section('position error, mean / p99 (m)');
  perBand((b) => `${num(b.meanPositionErrorM, 3)} / ${num(b.p99PositionErrorM, 2)}`);
  section('staleness, mean / p99 (ticks)');
  perBand((b) => `${num(b.meanStalenessTicks, 1)} / ${num(b.p99StalenessTicks, 0)}`);
  section('in range, not held by the client (%)');
  perBand((b) => num(b.notHeldShare * 100, 1), undefined, true, false);
  rows.push('rule');
  rows.push([
    'in range, never updated (pairs)',
    ...r.strategies.map((s) => `${num(s.neverUpdated, 0)} (${num(s.neverUpdatedShare * 100, 1)}%)`),
    '',
  ]);
  rows.push(['packet bytes, mean / max', ...r.strategies.map((s) => `${num(s.meanPacketBytes, 0)} / ${num(s.maxPacketBytes, 0)}`), '']);
  rows.push(['update records per packet, mean', ...r.strategies.map((s) => num(s.meanUpdatesPerPacket, 1)), '']);
  rows.push(['despawn records per packet, mean', ...r.strategies.map((s) => num(s.meanDespawnsPerPacket, 2)), '']);

  const cells = rows.filter((x): x is string[] => x !== 'rule');
  const widths = header.map((_, c) => Math.max(...cells.map((row) => row[c].length)));
  const total = widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
  const lines = rows.map((row) =>
    row === 'rule'
      ? '  ' + '-'.repeat(total)
      : ('  ' + row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')).trimEnd(),
  );
  const c = r.config;
  const measured =
    r.measureEvery === 1
      ? `every tick after ${r.warmupTicks} warm-up ticks (${num(r.measuredTicks, 0)} tick${r.measuredTicks === 1 ? '' : 's'})`
      : `every ${r.measureEvery} ticks after ${r.warmupTicks} warm-up ticks (${num(r.measuredTicks, 0)} tick${r.measuredTicks === 1 ? '' : 's'})`;
  const head =
    `sightline quality: speed-mix, ${num(r.entities, 0)} entities, ${num(r.viewers, 0)} viewers, ${num(r.ticks, 0)} ticks at ${c.tickHz} Hz${r.interrupted ? ' (interrupted)' : ''}, seed ${r.seed}\n` +
    `region ${c.regionSize} m, view radius ${c.viewRadius} m, ${c.payloadBytes}-byte packets (${c.slotsPerPacket} update slots), ` +
    `walk cap ${c.walkCap === UNCAPPED_WALK ? 'uncapped' : c.walkCap}, ghost cap ${c.ghostCap}, grace ${c.graceTicks} passes\n` +
    `compared with the truth ${measured}, every viewer; ${num(r.meanInRange, 1)} entities in range per viewer (mean); ` +
    `errors and staleness cover entities the client holds; wall ${num(r.wallMs / 1000, 1)} s`;
  const foot = `  ¹ published figures: ${r.reference.source} (mean angular error per band).`;
  return `${head}\n\n${lines.join('\n')}\n\n${foot}\n`;
}
