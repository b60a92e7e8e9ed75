// Coverage of sampled viewers in a herd run: which entities each was in range of, had among its
// 10 nearest (brute force) or among its eligible candidates (the capped gather), and which of
// those it ever received in an update record. Costs one decode per sampled viewer and (sampled
// viewers × entities) distance checks per tick on the JavaScript thread.
import { createRawPacket, decodePacketRaw, type EntityId, type RawPacket, type TickResult, type World } from 'sightline';
import type { CoverageReport } from './metrics-report.js';

/** Entries of `values` below `limit`. */
function countBelow(values: Float64Array, limit: number): number {
  let n = 0;
  for (let i = 0; i < values.length; i++) n += values[i] < limit ? 1 : 0;
  return n;
}

/** The nearest entities (brute force) whose delivery the coverage checks: {@link MetricsReport}. */
const NEAREST_K = 10;

/** The coverage state of the sampled viewers (see MetricsReport.coverage), chosen on the first tick. */
export class Coverage {
  readonly #world: World;
  readonly #raw: RawPacket;
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

  /**
   * Samples up to `sampleViewers` viewers evenly from `viewers` (a tick's packets in order, or the
   * world's viewers; fewer when `maxChecksPerTick` / entities allows fewer), and indexes the live
   * `entities`.
   */
  constructor(world: World, entities: ArrayLike<EntityId>, sampleViewers: number, maxChecksPerTick: number, viewers: { readonly count: number; viewerAt(i: number): EntityId }) {
    this.#world = world;
    this.#raw = createRawPacket(world.config.payloadBytes);
    const entityIndex = new Map<EntityId, number>();
    const entitySlots: number[] = [];
    for (let j = 0; j < entities.length; j++) {
      const id = entities[j];
      if (entityIndex.has(id) || !world.isLive(id)) continue;
      entityIndex.set(id, entitySlots.length);
      entitySlots.push(world.slotOf(id));
    }
    const n = entitySlots.length;
    const count = viewers.count;
    const budget = Math.max(1, Math.floor(maxChecksPerTick / Math.max(1, n)));
    const take = Math.min(sampleViewers, count, budget);
    const viewerIndex = new Map<EntityId, number>();
    const viewerSlots: number[] = [];
    const viewerSelf: number[] = [];
    for (let k = 0; k < take; k++) {
      const id = viewers.viewerAt(Math.floor((k * count) / take));
      if (viewerIndex.has(id) || !world.isLive(id)) continue;
      viewerIndex.set(id, viewerSlots.length);
      viewerSlots.push(world.slotOf(id));
      viewerSelf.push(entityIndex.get(id) ?? -1);
    }
    this.viewerIndex = viewerIndex;
    this.viewerSlots = Int32Array.from(viewerSlots);
    this.viewerSelf = Int32Array.from(viewerSelf);
    this.entityIndex = entityIndex;
    this.entitySlots = Int32Array.from(entitySlots);
    this.ex = new Float64Array(n);
    this.ey = new Float64Array(n);
    this.inRange = viewerSlots.map(() => new Uint8Array(n));
    this.received = viewerSlots.map(() => new Uint8Array(n));
    this.eligible = viewerSlots.map(() => new Uint8Array(n));
    this.nearest = viewerSlots.map(() => new Uint8Array(n));
  }

  /** Measures one tick: the sampled viewers' packets, in-range and nearest by brute force, eligible by the capped gather. */
  measure(result: TickResult): void {
    const c = this;
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
    this.#measurePositions(c.inRange, c.nearest, c.eligible);
  }

  /**
   * Runs the brute force and the gathers once on the current positions into scratch arrays, so
   * that the JavaScript engine has compiled them before a loop's first tick (the first run costs
   * 3-4 times a later one, about 20 ms in crowd-50k); counts nothing.
   */
  warm(): void {
    const n = this.entitySlots.length;
    const scratch = (): Uint8Array[] => this.viewerSlots.length === 0 ? [] : Array.from(this.viewerSlots, () => new Uint8Array(n));
    this.#measurePositions(scratch(), scratch(), scratch());
  }

  // In range and nearest by brute force over the current positions (those of the snapshot just
  // served), eligible by the capped gather, marked in the arrays given (per sampled viewer).
  #measurePositions(inRangeOf: Uint8Array[], nearestOf: Uint8Array[], eligibleOf: Uint8Array[]): void {
    const c = this;
    const config = this.#world.config;
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
      const inRange = inRangeOf[k];
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
      const nearest = nearestOf[k];
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
      const eligible = eligibleOf[k];
      for (let i = 0; i < d2.length; i++) {
        if (d2[i] > threshold || (d2[i] === threshold && atThreshold-- <= 0)) continue;
        const j = c.entityIndex.get(g.ids[i]);
        if (j !== undefined) eligible[j] = 1;
      }
    }
  }

  /** The pairs counted so far. */
  report(): CoverageReport {
    const div = (a: number, b: number): number => (b > 0 ? a / b : 0);
    let inRange = 0;
    let neverSent = 0;
    let eligible = 0;
    let eligibleNeverSent = 0;
    let nearest = 0;
    let nearestNeverSent = 0;
    const c = this;
    {
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
    return {
      sampledViewers: c.viewerSlots.length,
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
}
