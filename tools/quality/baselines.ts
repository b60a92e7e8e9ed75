// The quality harness's baselines: nearest-first and round-robin packets from a viewer's in-range
// set, at the bytes the engine's packets have.
import { DESPAWN_RECORD_BYTES, HEADER_BYTES, RECORD_BYTES, type WorldConfig } from 'sightline';
import type { ViewerBeliefs } from './beliefs.js';
import { encodePacket } from './encode.js';
import type { TruthGrid } from './measure.js';

/**
 * Builds baseline packets for one world's configuration: despawns first (every held entity that
 * left the radius, at most half the state bytes, as the engine does), then as many update records
 * as fit, chosen nearest-first or round-robin (in entity order after the last one sent, wrapping).
 */
export class BaselinePackets {
  readonly #config: WorldConfig;
  readonly #stateBytes: number;
  readonly #maxDespawns: number;
  readonly #pkt: Uint8Array;
  readonly #view: DataView;
  readonly #dIds: Uint32Array;
  readonly #uIds: Uint32Array;
  readonly #uX: Int32Array;
  readonly #uY: Int32Array;
  readonly #uZ: Int32Array;
  #sortD2 = new Float64Array(1024);
  #sortIdx = new Int32Array(1024);

  constructor(config: WorldConfig) {
    this.#config = config;
    const payloadBytes = config.payloadBytes;
    this.#stateBytes = payloadBytes - HEADER_BYTES - config.eventReserveBytes;
    this.#maxDespawns = Math.floor(this.#stateBytes / 2 / DESPAWN_RECORD_BYTES);
    this.#pkt = new Uint8Array(payloadBytes);
    this.#view = new DataView(this.#pkt.buffer);
    this.#dIds = new Uint32Array(this.#maxDespawns);
    const slots = Math.floor(this.#stateBytes / RECORD_BYTES);
    this.#uIds = new Uint32Array(slots);
    this.#uX = new Int32Array(slots);
    this.#uY = new Int32Array(slots);
    this.#uZ = new Int32Array(slots);
  }

  /**
   * The packet (a view, valid until the next call) of `strategy` for a viewer whose client holds
   * `beliefs`, whose in-range set is the grid's last, with despawns queued in `queue` (entity
   * indices) and, for round-robin, its cursor in `cursor[v]`.
   */
  packet(
    strategy: 'nearest-first' | 'round-robin',
    beliefs: ViewerBeliefs,
    queue: number[],
    cursor: Int32Array,
    v: number,
    grid: TruthGrid,
    ids: Uint32Array,
    slots: Uint32Array,
    X: Int32Array,
    Y: Int32Array,
    Z: Int32Array,
    sequence: number,
    tick: number,
  ): Uint8Array {
    const stamp = grid.stamp;
    const now = grid.current;
    const n = grid.count;
    const inIdx = grid.idx;
    const inD2 = grid.d2;
    // Queue a despawn for every held entity that left the radius and is not queued yet.
    const keys = beliefs.keys;
    for (let h = 0; h < keys.length; h++) {
      const e = keys[h];
      if (e >= 0 && stamp[e] !== now && beliefs.queued[h] === 0) {
        beliefs.queued[h] = 1;
        queue.push(e);
      }
    }
    const dIds = this.#dIds;
    let despawns = 0;
    let keep = 0;
    for (let i = 0; i < queue.length; i++) {
      const e = queue[i];
      if (stamp[e] === now) {
        const h = beliefs.find(e); // back in range: it stays
        if (h >= 0) beliefs.queued[h] = 0;
        continue;
      }
      if (despawns < this.#maxDespawns) dIds[despawns++] = ids[e];
      else queue[keep++] = e;
    }
    queue.length = keep;
    const slotsLeft = Math.floor((this.#stateBytes - despawns * DESPAWN_RECORD_BYTES) / RECORD_BYTES);
    const take = Math.min(slotsLeft, n);
    if (this.#sortD2.length < n) {
      this.#sortD2 = new Float64Array(2 * n);
      this.#sortIdx = new Int32Array(2 * n);
    }
    const uIds = this.#uIds;
    const uX = this.#uX;
    const uY = this.#uY;
    const uZ = this.#uZ;
    let u = 0;
    // Appends entity e (an index into ids/slots) as the next update record.
    const push = (e: number): void => {
      uIds[u] = ids[e];
      uX[u] = X[slots[e]];
      uY[u] = Y[slots[e]];
      uZ[u] = Z[slots[e]];
      u++;
    };
    if (strategy === 'nearest-first') {
      if (take < n) {
        // Threshold: the take-th smallest squared distance; ties broken by entity index.
        const sd = this.#sortD2.subarray(0, n);
        sd.set(inD2.subarray(0, n));
        sd.sort();
        const t = sd[take - 1];
        let below = 0;
        for (let i = 0; i < n; i++) if (inD2[i] < t) below++;
        let ties = 0;
        const ti = this.#sortIdx;
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
      const order = this.#sortIdx.subarray(0, n);
      order.set(inIdx.subarray(0, n));
      order.sort();
      const c = cursor[v];
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (order[mid] <= c) lo = mid + 1;
        else hi = mid;
      }
      for (let j = 0; j < take; j++) push(order[(lo + j) % n]);
      if (take > 0) cursor[v] = order[(lo + take - 1) % n];
    }
    const len = encodePacket(this.#pkt, this.#view, this.#config, sequence, tick, dIds, despawns, uIds, uX, uY, uZ, u);
    return this.#pkt.subarray(0, len);
  }
}
