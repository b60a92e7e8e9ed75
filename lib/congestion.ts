// Per-client congestion control from acknowledgements: round-trip time and loss per viewer, and a
// good/bad mode per viewer (Glenn Fiedler, "Reliability and Flow Control", 2008) that sends a
// congested client fewer, smaller packets until its link has been good for a while.
import { SightlineError, describe, readOptions } from './errors.js';
import { NO_SHED, type Shed } from './shedding.js';
import type { EntityId } from './world-types.js';

/** Options of congestion control (`new World(config, { congestion })`). */
export interface CongestionOptions {
  /** Smoothed round-trip time above which a viewer's link counts as congested, ms. Default 250 (Fiedler's). */
  rttThresholdMs?: number;
  /** Smoothed share of packets lost above which a viewer's link counts as congested, 0 to 1. Default 0.1. */
  lossThreshold?: number;
  /** Weight of each new RTT sample and each packet's outcome in the smoothed figures, (0, 1]. Default 0.1. */
  smoothing?: number;
  /** Resolved packets a viewer needs before its loss counts. Default 16. */
  minSamples?: number;
  /** Bad mode: send period × this (an integer ≥ 1). Default 2. */
  badPeriod?: number;
  /** Bad mode: packet size × this, (0, 1]. Default 0.5 (with `badPeriod` 2: a quarter of the bytes a second). */
  badPayload?: number;
  /** Good conditions needed to leave bad mode, at first, ms. Default 4,000. */
  penaltyMs?: number;
  /** The penalty at most (it doubles when a viewer falls back to bad mode soon after leaving it), ms. Default 60,000. */
  maxPenaltyMs?: number;
  /** The penalty at least (it halves for each `settleMs` spent in good mode), ms. Default 1,000. */
  minPenaltyMs?: number;
  /** Good mode this long halves the penalty; bad mode within this long of leaving it doubles it, ms. Default 10,000. */
  settleMs?: number;
  /** The clock, ms (monotonic). Default performance.now. */
  clock?: () => number;
}

/** A viewer's link as congestion control sees it (`world.congestionStats(viewer)`). */
export interface CongestionStats {
  /** 'good': its own settings; 'bad': fewer, smaller packets (CongestionOptions.badPeriod, badPayload). */
  readonly mode: 'good' | 'bad';
  /** Smoothed round-trip time, ms: from a packet's hand-off (its tick resolving) to the acknowledgement naming it newest; null before the first. */
  readonly rttMs: number | null;
  /** Smoothed share of packets lost (acknowledged later counts as delivered; left out by an acknowledgement 3 or more sequences newer counts as lost). */
  readonly loss: number;
  /** Packets tracked, acknowledged and taken as lost since the viewer was added. */
  readonly sent: number;
  readonly acked: number;
  readonly lost: number;
  /** Times it went from good to bad mode. */
  readonly congestions: number;
  /** The good conditions it needs to leave bad mode now, ms. */
  readonly penaltyMs: number;
}

const OPTIONS = ['rttThresholdMs', 'lossThreshold', 'smoothing', 'minSamples', 'badPeriod', 'badPayload', 'penaltyMs', 'maxPenaltyMs', 'minPenaltyMs', 'settleMs', 'clock'] as const;

// Packets remembered per viewer: the engine's acknowledgement log keeps 64.
const RING = 64;
// An acknowledgement this many sequences newer that leaves a packet out makes it lost (the engine's reorder tolerance).
const REORDER = 3;

interface Link {
  seq: Uint16Array;
  sentAt: Float64Array;
  // 0 free, 1 in flight, 2 resolved
  state: Uint8Array;
  head: number; // next slot
  rtt: number; // -1 before the first sample
  loss: number;
  sent: number;
  acked: number;
  lost: number;
  resolved: number;
  bad: boolean;
  congestions: number;
  penalty: number;
  // bad: when conditions last turned good (-1: not good now); good: when good mode began, and the last halving
  goodSince: number;
  enteredGood: number;
  lastHalving: number;
}

function invalid(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', message);
}

function range(name: string, v: unknown, lo: number, hi: number, loOpen = false): number {
  if (typeof v !== 'number' || !(loOpen ? v > lo : v >= lo) || !(v <= hi)) {
    invalid(`congestion.${name} must be a number ${loOpen ? 'above' : 'from'} ${lo} ${loOpen ? 'and at most' : 'to'} ${hi}, received ${describe(v)}`);
  }
  return v;
}

/** Reads `congestion` of WorldOptions: true (the defaults), false (off: null), or options. */
export function readCongestion(value: unknown): Required<CongestionOptions> | null {
  if (value === false) return null;
  const o = (value === true ? {} : readOptions('congestion', value as object, OPTIONS)) as CongestionOptions;
  if (o.clock !== undefined && typeof o.clock !== 'function') invalid(`congestion.clock must be a function, received ${describe(o.clock)}`);
  const badPeriod = o.badPeriod ?? 2;
  if (!Number.isInteger(badPeriod) || badPeriod < 1 || badPeriod > 64) invalid(`congestion.badPeriod must be an integer from 1 to 64, received ${describe(badPeriod)}`);
  const minSamples = o.minSamples ?? 16;
  if (!Number.isInteger(minSamples) || minSamples < 1 || minSamples > 1000) invalid(`congestion.minSamples must be an integer from 1 to 1000, received ${describe(minSamples)}`);
  const r = {
    rttThresholdMs: range('rttThresholdMs', o.rttThresholdMs ?? 250, 0, 1e6, true),
    lossThreshold: range('lossThreshold', o.lossThreshold ?? 0.1, 0, 1, true),
    smoothing: range('smoothing', o.smoothing ?? 0.1, 0, 1, true),
    minSamples,
    badPeriod,
    badPayload: range('badPayload', o.badPayload ?? 0.5, 0, 1, true),
    penaltyMs: range('penaltyMs', o.penaltyMs ?? 4000, 0, 1e7),
    maxPenaltyMs: range('maxPenaltyMs', o.maxPenaltyMs ?? 60_000, 0, 1e7),
    minPenaltyMs: range('minPenaltyMs', o.minPenaltyMs ?? 1000, 0, 1e7),
    settleMs: range('settleMs', o.settleMs ?? 10_000, 0, 1e7, true),
    clock: o.clock ?? (() => performance.now()),
  };
  if (r.minPenaltyMs > r.maxPenaltyMs) invalid(`congestion.minPenaltyMs (${r.minPenaltyMs}) must not exceed maxPenaltyMs (${r.maxPenaltyMs})`);
  r.penaltyMs = Math.min(Math.max(r.penaltyMs, r.minPenaltyMs), r.maxPenaltyMs);
  return r;
}

/**
 * Congestion control for the viewers with acknowledgements of one World. It hears of each packet
 * when its tick resolves ({@link sent}) and of each acknowledgement ({@link acknowledged}), and
 * after each tick says which viewers' sheds changed ({@link update}).
 *
 * Mode, per viewer (Fiedler's good/bad mode with a doubling penalty): congested when the smoothed
 * RTT is above `rttThresholdMs` or the smoothed loss above `lossThreshold` (once `minSamples`
 * packets are resolved). Good → bad at once when congested. Bad → good once conditions have been
 * good for the penalty (4 s at first). Falling back to bad within `settleMs` (10 s) of leaving it
 * doubles the penalty (to 60 s at most); each `settleMs` in good mode halves it (to 1 s at least).
 * Bad mode sheds `badPeriod` × the send period and `badPayload` × the packet size.
 */
export class CongestionControl {
  readonly options: Required<CongestionOptions>;
  readonly #links = new Map<EntityId, Link>();

  constructor(options: Required<CongestionOptions>) {
    this.options = options;
  }

  /** A packet with sequence `sequence` went to `viewer` now (its tick resolved). */
  sent(viewer: EntityId, sequence: number, now: number): void {
    let l = this.#links.get(viewer);
    if (l === undefined) {
      l = {
        seq: new Uint16Array(RING),
        sentAt: new Float64Array(RING),
        state: new Uint8Array(RING),
        head: 0,
        rtt: -1,
        loss: 0,
        sent: 0,
        acked: 0,
        lost: 0,
        resolved: 0,
        bad: false,
        congestions: 0,
        penalty: this.options.penaltyMs,
        goodSince: -1,
        enteredGood: -Infinity, // a first congestion does not double the penalty
        lastHalving: now,
      };
      this.#links.set(viewer, l);
    }
    const i = l.head;
    if (l.state[i] === 1) this.#resolve(l, i, true); // 64 packets on, unheard of: lost
    l.seq[i] = sequence & 0xffff;
    l.sentAt[i] = now;
    l.state[i] = 1;
    l.head = (i + 1) % RING;
    l.sent++;
  }

  /** `viewer`'s client acknowledged `ack` (newest) and, by bit i of `ackBits`, ack − 1 − i. */
  acknowledged(viewer: EntityId, ack: number, ackBits: number, now: number): void {
    const l = this.#links.get(viewer);
    if (l === undefined) return;
    const a = this.options.smoothing;
    for (let i = 0; i < RING; i++) {
      if (l.state[i] !== 1) continue;
      const d = (ack - l.seq[i] + 65536) % 65536; // how many sequences older than ack
      if (d >= 32768) continue; // newer than ack: not yet
      const received = d === 0 || (d <= 32 && ((ackBits >>> (d - 1)) & 1) === 1);
      if (received) {
        if (d === 0) {
          const sample = now - l.sentAt[i];
          l.rtt = l.rtt < 0 ? sample : l.rtt + a * (sample - l.rtt);
        }
        this.#resolve(l, i, false);
      } else if (d >= REORDER) {
        this.#resolve(l, i, true);
      }
    }
  }

  #resolve(l: Link, i: number, lost: boolean): void {
    l.state[i] = 2;
    l.resolved++;
    if (lost) l.lost++;
    else l.acked++;
    l.loss += this.options.smoothing * ((lost ? 1 : 0) - l.loss);
  }

  /**
   * Moves every tracked viewer's mode on to `now`; calls `apply(viewer, shed)` for each whose shed
   * changed (NO_SHED back in good mode), in the order viewers were first heard of.
   */
  update(now: number, apply: (viewer: EntityId, shed: Shed) => void): void {
    const o = this.options;
    for (const [viewer, l] of this.#links) {
      const congested = (l.rtt >= 0 && l.rtt > o.rttThresholdMs) || (l.resolved >= o.minSamples && l.loss > o.lossThreshold);
      if (!l.bad) {
        if (congested) {
          if (now - l.enteredGood < o.settleMs) l.penalty = Math.min(o.maxPenaltyMs, 2 * l.penalty);
          l.bad = true;
          l.congestions++;
          l.goodSince = -1;
          apply(viewer, { period: o.badPeriod, payload: o.badPayload, radius: 1 });
        } else if (now - l.lastHalving >= o.settleMs) {
          l.penalty = Math.max(o.minPenaltyMs, l.penalty / 2);
          l.lastHalving = now;
        }
      } else if (congested) {
        l.goodSince = -1;
      } else {
        if (l.goodSince < 0) l.goodSince = now;
        if (now - l.goodSince >= l.penalty) {
          l.bad = false;
          l.enteredGood = now;
          l.lastHalving = now;
          apply(viewer, NO_SHED);
        }
      }
    }
  }

  /** A viewer's figures, or null when none of its packets was tracked yet. */
  stats(viewer: EntityId): CongestionStats | null {
    const l = this.#links.get(viewer);
    if (l === undefined) return null;
    return {
      mode: l.bad ? 'bad' : 'good',
      rttMs: l.rtt < 0 ? null : l.rtt,
      loss: l.loss,
      sent: l.sent,
      acked: l.acked,
      lost: l.lost,
      congestions: l.congestions,
      penaltyMs: l.penalty,
    };
  }

  /** Forgets a viewer (removed). */
  forget(viewer: EntityId): void {
    this.#links.delete(viewer);
  }
}
