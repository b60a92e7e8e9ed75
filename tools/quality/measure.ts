// The quality harness's truth side: a grid of the true positions, each viewer's in-range set, and
// the comparison of a client's beliefs with the truth at one moment.
import { RAW_PER_METER, type EntityId, type World, type WorldConfig } from 'sightline';
import type { Extrapolation } from 'sightline/net';
import { BandStats, logBin } from './band-stats.js';
import type { ViewerBeliefs } from './beliefs.js';
import { QUALITY_BANDS } from './types.js';

/** True positions on a grid of the world's cells, rebuilt every tick (counting sort). */
export class TruthGrid implements Observed {
  readonly #config: WorldConfig;
  readonly #slots: Uint32Array;
  readonly #X: Int32Array;
  readonly #Y: Int32Array;
  // Cells 0 .. cpa² - 1, then one bucket for entities outside the region (never in range).
  readonly #outside: number;
  readonly #cellStart: Int32Array;
  readonly #cellOf: Int32Array;
  readonly #cellItems: Int32Array;
  readonly #radiusSq: number;
  /** The last {@link inRange}: entity indices, squared horizontal distances (raw²), count. */
  idx = new Int32Array(1024);
  d2 = new Float64Array(1024);
  count = 0;
  /** stamp[e] === current stamp: entity e is in the last in-range set. */
  readonly stamp: Int32Array;
  current = 0;

  constructor(config: WorldConfig, slots: Uint32Array, X: Int32Array, Y: Int32Array) {
    this.#config = config;
    this.#slots = slots;
    this.#X = X;
    this.#Y = Y;
    const cpa = config.cellsPerAxis;
    this.#outside = cpa * cpa;
    this.#cellStart = new Int32Array(this.#outside + 2);
    this.#cellOf = new Int32Array(slots.length);
    this.#cellItems = new Int32Array(slots.length);
    this.#radiusSq = config.viewRadiusRaw * config.viewRadiusRaw;
    this.stamp = new Int32Array(slots.length);
  }

  /** Sorts the entities into cells by their positions now. */
  rebuild(): void {
    const { cellShift, cellsPerAxis: cpa, regionRaw: region } = this.#config;
    const cellStart = this.#cellStart;
    const outside = this.#outside;
    const X = this.#X;
    const Y = this.#Y;
    const slots = this.#slots;
    cellStart.fill(0);
    for (let i = 0; i < slots.length; i++) {
      const x = X[slots[i]];
      const y = Y[slots[i]];
      const c = x < 0 || y < 0 || x >= region || y >= region ? outside : (y >> cellShift) * cpa + (x >> cellShift);
      this.#cellOf[i] = c;
      cellStart[c + 1]++;
    }
    for (let c = 0; c <= outside; c++) cellStart[c + 1] += cellStart[c];
    const fill = cellStart.slice(0, outside + 1);
    for (let i = 0; i < slots.length; i++) this.#cellItems[fill[this.#cellOf[i]]++] = i;
  }

  /**
   * The entities within the view radius (horizontal, inclusive) of (vx, vy), `self` left out,
   * into idx / d2 / count, and stamped. Nothing for a viewer outside the region.
   */
  inRange(vx: number, vy: number, self: number): void {
    const { cellShift, cellsPerAxis: cpa, cellRadius, regionRaw: region } = this.#config;
    const X = this.#X;
    const Y = this.#Y;
    const slots = this.#slots;
    const cellStart = this.#cellStart;
    const items = this.#cellItems;
    const r2 = this.#radiusSq;
    const st = ++this.current;
    let n = 0;
    if (vx >= 0 && vy >= 0 && vx < region && vy < region) {
      const cx = vx >> cellShift;
      const cy = vy >> cellShift;
      for (let gy = Math.max(0, cy - cellRadius); gy <= Math.min(cpa - 1, cy + cellRadius); gy++) {
        for (let gx = Math.max(0, cx - cellRadius); gx <= Math.min(cpa - 1, cx + cellRadius); gx++) {
          const c = gy * cpa + gx;
          for (let j = cellStart[c]; j < cellStart[c + 1]; j++) {
            const e = items[j];
            if (e === self) continue;
            const s = slots[e];
            const dx = X[s] - vx;
            const dy = Y[s] - vy;
            const d2 = dx * dx + dy * dy;
            if (d2 > r2) continue;
            if (n === this.idx.length) {
              const a = new Int32Array(2 * n);
              a.set(this.idx);
              this.idx = a;
              const b = new Float64Array(2 * n);
              b.set(this.d2);
              this.d2 = b;
            }
            this.idx[n] = e;
            this.d2[n] = d2;
            this.stamp[e] = st;
            n++;
          }
        }
      }
    }
    this.count = n;
  }
}

// measureBeliefs's predicted position (raw).
const PREDICTED = new Float64Array(3);

// Band edges in raw² (squared distance).
const BAND_EDGE_SQ = QUALITY_BANDS.slice(0, -1).map((b) => (b.maxM * RAW_PER_METER) ** 2);

/** The band of a squared horizontal distance (raw²). */
export function bandOf(d2: number): number {
  return d2 < BAND_EDGE_SQ[0] ? 0 : d2 < BAND_EDGE_SQ[1] ? 1 : d2 < BAND_EDGE_SQ[2] ? 2 : 3;
}

/** A set of entities observed from one viewer: entity indices and squared horizontal distances (raw²). */
export interface Observed {
  readonly idx: Int32Array;
  readonly d2: Float64Array;
  readonly count: number;
}

/**
 * The candidates the engine's capped gather returns for a viewer at (vx, vy) raw (its avatar
 * `self` left out), as entity indices: what umwelt-rs's harness measures over.
 */
export class GatheredSet implements Observed {
  idx = new Int32Array(1024);
  d2 = new Float64Array(1024);
  count = 0;
  fill(world: World, vx: number, vy: number, self: EntityId, indexOfId: (id: number) => number): void {
    const g = world.gather({ x: vx / RAW_PER_METER, y: vy / RAW_PER_METER }, { exclude: self });
    const n = g.ids.length;
    if (this.idx.length < n) {
      this.idx = new Int32Array(2 * n);
      this.d2 = new Float64Array(2 * n);
    }
    for (let i = 0; i < n; i++) {
      this.idx[i] = indexOfId(g.ids[i]);
      this.d2[i] = g.distancesSq[i];
    }
    this.count = n;
  }
}

/**
 * Compares what one client believes with the truth for a set of entities observed from its viewer
 * (the in-range set, or the gathered one), at tick `tick`, adding to `bands` (one BandStats per band). `extrapolation`: the
 * believed position is first extrapolated to `tick` (the `extrapolated` moment); null: as held.
 *
 * Angular error as umwelt-rs's harness computes it: |believed − true| / max(|true − viewer|, 1 m),
 * in mrad (3D distances).
 */
export function measureBeliefs(
  beliefs: ViewerBeliefs,
  seen: Observed,
  bands: readonly BandStats[],
  slots: Uint32Array,
  X: Int32Array,
  Y: Int32Array,
  Z: Int32Array,
  vx: number,
  vy: number,
  vz: number,
  tick: number,
  extrapolation: Extrapolation | null,
): void {
  const { tick: bt } = beliefs;
  const { idx, d2 } = seen;
  const at = PREDICTED;
  for (let i = 0; i < seen.count; i++) {
    const e = idx[i];
    const st = bands[bandOf(d2[i])];
    st.observations++;
    const r = beliefs.find(e);
    if (r < 0) continue;
    st.held++;
    const es = slots[e];
    const tx = X[es];
    const ty = Y[es];
    const tz = Z[es];
    beliefs.predict(r, tick, extrapolation, at);
    const ex = at[0] - tx;
    const ey = at[1] - ty;
    const ez = at[2] - tz;
    const errRaw = Math.sqrt(ex * ex + ey * ey + ez * ez);
    const pos = errRaw / RAW_PER_METER;
    const wx = tx - vx;
    const wy = ty - vy;
    const wz = tz - vz;
    const sep = Math.sqrt(wx * wx + wy * wy + wz * wz);
    const ang = (errRaw * 1000) / Math.max(sep, RAW_PER_METER);
    const stale = tick - bt[r];
    st.sumPos += pos;
    st.sumAng += ang;
    st.sumStale += stale;
    st.posHist[logBin(pos)]++;
    st.angHist[logBin(ang)]++;
    st.staleHist[stale < st.staleHist.length ? stale : st.staleHist.length - 1]++;
  }
}
