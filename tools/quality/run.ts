// Quality harness: how well each client's believed world tracks the truth, per distance band, for
// sightline's priority accumulator and two baselines that spend the same bytes per packet.
//
//   sightline quality [--entities N] [--viewers N] [--ticks N] [--strategy NAME|all] [--seed N]
//                     [--warmup N] [--every N] [--threads N] [--json]
//
// Every strategy produces wire-format packets that the client side decodes with decodePacketRaw
// and applies the same way (despawns remove, updates create or move), so only the choice of
// records differs.
import {
  DESPAWN_RECORD_BYTES,
  HEADER_BYTES,
  RAW_PER_METER,
  RECORD_BYTES,
  SightlineError,
  World,
  WorldConfig,
  createRawPacket,
  decodePacketRaw,
  describeValue as describe,
  readOptions,
  type RawPacket,
} from 'sightline';
import { createHerd } from '../herd/scenarios.js';
import { BandStats, logBin } from './band-stats.js';
import { PairBits, ViewerBeliefs } from './beliefs.js';
import { encodePacket } from './encode.js';
import { QUALITY_BANDS, QUALITY_STRATEGIES, UMWELT_REFERENCE, type QualityOptions, type QualityReport, type QualityStrategy, type QualityStrategyReport } from './types.js';

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

/**
 * Runs the speed-mix scenario (tools/herd/scenarios.ts: 35% still, 25% at 0.2 m/s, 25% at 1.5 m/s, 10% at
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
      regionSize: config.regionSize,
      viewRadius: config.viewRadius,
      tickHz: config.tickHz,
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
