// Per-band accumulators of the quality harness (one band, one strategy, one moment): log-binned
// error histograms and staleness.
import type { QualityMomentReport } from './types.js';

// Histograms: log-spaced bins for errors (ratio 1.02 between bin edges), integer bins for ticks.

const LOG_MIN = 1e-6;
const LOG_RATIO = Math.log(1.02);
export const LOG_BINS = 1 + Math.ceil(Math.log(1e6 / LOG_MIN) / LOG_RATIO);

export function logBin(v: number): number {
  if (!(v > LOG_MIN)) return 0;
  const b = 1 + Math.floor(Math.log(v / LOG_MIN) / LOG_RATIO);
  return b >= LOG_BINS ? LOG_BINS - 1 : b;
}

// The value at quantile q of a log histogram: the geometric middle of the bin (0 for bin 0).
export function logQuantile(h: Float64Array, total: number, q: number): number {
  if (total === 0) return 0;
  const want = Math.ceil(q * total);
  let cum = 0;
  for (let b = 0; b < h.length; b++) {
    cum += h[b];
    if (cum >= want) return b === 0 ? 0 : LOG_MIN * Math.exp((b - 0.5) * LOG_RATIO);
  }
  return LOG_MIN * Math.exp((h.length - 1) * LOG_RATIO);
}

export function intQuantile(h: Float64Array, total: number, q: number): number {
  if (total === 0) return 0;
  const want = Math.ceil(q * total);
  let cum = 0;
  for (let b = 0; b < h.length; b++) {
    cum += h[b];
    if (cum >= want) return b;
  }
  return h.length - 1;
}

// Accumulators of one band of one strategy at one moment; `observations` is the band's (the same
// at every moment), `held` this moment's.
export class BandStats {
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
  report(): QualityMomentReport {
    const h = this.held;
    const div = (a: number, b: number): number => (b === 0 ? 0 : a / b);
    return {
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
