// Peers of sightline for the per-tick comparison in bench/run.mjs: what a Node.js server does
// without it. Both read the same positions as the sightline world (raw fixed point, 1 m = 1024),
// both serve a sample of viewers, and their per-viewer cost is scaled to every viewer.
//
// - BruteForcePeer: the per-client filter a typical TypeScript server writes: for each viewer,
//   loop over every entity, keep those within the view radius, serialize them into a Buffer
//   (u32 id + 3 × f32 position = 16 bytes per entity, after a u32 count). No byte budget.
// - ColyseusPeer: @colyseus/schema StateView filtering: a Schema state holding a map of entities
//   tagged `.view()`, one StateView per client holding the entities within its radius (added and
//   removed as they come and go, found by the same distance loop), and every view encoded each
//   tick with Encoder.encodeView after one shared Encoder.encode. No byte budget.

/** Monotonic clock, ms. */
const now = () => performance.now();

/**
 * Evenly spaced sample of `k` indices from [0, n).
 * @param {number} n
 * @param {number} k
 * @returns {number[]}
 */
export function sampleIndices(n, k) {
  const m = Math.min(n, k);
  const out = [];
  for (let i = 0; i < m; i++) out.push(Math.floor((i * n) / m));
  return out;
}

/**
 * The brute-force peer. Game state: an array of plain objects { id, x, y, z } in meters, the shape
 * a typical server keeps; `sync` copies the engine's positions into it (not part of the measured
 * work: it is the game's own state).
 */
export class BruteForcePeer {
  /**
   * @param {Uint32Array} slots entity slots in spawn order (herd.slots)
   * @param {number[]} viewerEntities entity indices (spawn order) of the sampled viewers
   * @param {number} viewRadius view radius, m
   */
  constructor(slots, viewerEntities, viewRadius) {
    this.slots = slots;
    this.entities = Array.from(slots, (_, i) => ({ id: i, x: 0, y: 0, z: 0 }));
    this.viewers = viewerEntities.map((i) => this.entities[i]);
    this.r2 = viewRadius * viewRadius;
    this.visible = [];
    /** Bytes serialized in the last `serve`, summed over the sampled viewers. */
    this.bytes = 0;
  }

  /** Copies positions (raw Int32 arrays by slot) into the game objects, in meters. */
  sync(X, Y, Z) {
    const { entities, slots } = this;
    for (let i = 0; i < entities.length; i++) {
      const e = entities[i];
      const s = slots[i];
      e.x = X[s] / 1024;
      e.y = Y[s] / 1024;
      e.z = Z[s] / 1024;
    }
  }

  /**
   * Serves every sampled viewer once. Returns the time taken, ms.
   * @returns {number}
   */
  serve() {
    const t0 = now();
    const { entities, r2, visible } = this;
    let bytes = 0;
    for (const viewer of this.viewers) {
      visible.length = 0;
      for (const e of entities) {
        if (e === viewer) continue;
        const dx = e.x - viewer.x;
        const dy = e.y - viewer.y;
        if (dx * dx + dy * dy <= r2) visible.push(e);
      }
      const buf = Buffer.allocUnsafe(4 + visible.length * 16);
      buf.writeUInt32LE(visible.length, 0);
      let o = 4;
      for (const e of visible) {
        buf.writeUInt32LE(e.id, o);
        buf.writeFloatLE(e.x, o + 4);
        buf.writeFloatLE(e.y, o + 8);
        buf.writeFloatLE(e.z, o + 12);
        o += 16;
      }
      bytes += buf.length;
    }
    this.bytes = bytes;
    return now() - t0;
  }
}

/**
 * The @colyseus/schema StateView peer.
 */
export class ColyseusPeer {
  /**
   * @param {object} colyseus the @colyseus/schema module
   * @param {Uint32Array} slots entity slots in spawn order (herd.slots)
   * @param {number[]} viewerEntities entity indices (spawn order) of the sampled viewers
   * @param {number} viewRadius view radius, m
   */
  constructor(colyseus, slots, viewerEntities, viewRadius) {
    const { schema, t, Encoder, StateView } = colyseus;
    const Entity = schema({ x: t.float32(), y: t.float32(), z: t.float32() }, 'BenchEntity');
    const State = schema({ entities: t.map(Entity).view() }, 'BenchState');
    // Room for the shared patch plus one view's patch (a town-square view's first patch holds
    // every entity); avoids the encoder's grow-and-warn path.
    Encoder.BUFFER_SIZE = Math.max(Encoder.BUFFER_SIZE, 64 + slots.length * 48);
    this.slots = slots;
    this.state = new State();
    this.items = [];
    for (let i = 0; i < slots.length; i++) {
      const e = new Entity();
      e.x = 0;
      e.y = 0;
      e.z = 0;
      this.state.entities.set(String(i), e);
      this.items.push(e);
    }
    this.encoder = new Encoder(this.state);
    this.viewerEntities = viewerEntities;
    this.views = viewerEntities.map(() => new StateView());
    /** Per sampled viewer: entity indices currently in its view. */
    this.members = viewerEntities.map(() => new Set());
    this.r2 = viewRadius * viewRadius;
    this.px = new Float64Array(slots.length);
    this.py = new Float64Array(slots.length);
    /** Bytes of the last tick's view patches, summed over the sampled viewers. */
    this.bytes = 0;
  }

  /**
   * Writes the positions into the Schema entities (the game writing its state; Colyseus tracks
   * changes on assignment). Returns the time taken, ms.
   * @returns {number}
   */
  write(X, Y, Z) {
    const t0 = now();
    const { items, slots, px, py } = this;
    for (let i = 0; i < items.length; i++) {
      const s = slots[i];
      const e = items[i];
      const x = X[s] / 1024;
      const y = Y[s] / 1024;
      e.x = x;
      e.y = y;
      e.z = Z[s] / 1024;
      px[i] = x;
      py[i] = y;
    }
    return now() - t0;
  }

  /**
   * Updates each sampled view's membership: the distance loop over every entity, then
   * `view.add` for arrivals and `view.remove` for departures. Returns the time taken, ms.
   * @returns {number}
   */
  membership() {
    const t0 = now();
    const { px, py, r2, items } = this;
    const n = items.length;
    for (let k = 0; k < this.views.length; k++) {
      const self = this.viewerEntities[k];
      const vx = px[self];
      const vy = py[self];
      const view = this.views[k];
      const members = this.members[k];
      const next = new Set();
      for (let i = 0; i < n; i++) {
        if (i === self) continue;
        const dx = px[i] - vx;
        const dy = py[i] - vy;
        if (dx * dx + dy * dy <= r2) next.add(i);
      }
      for (const i of next) if (!members.has(i)) view.add(items[i]);
      for (const i of members) if (!next.has(i)) view.remove(items[i]);
      this.members[k] = next;
    }
    return now() - t0;
  }

  /**
   * Encodes the tick: one shared Encoder.encode, then Encoder.encodeView per sampled view, then
   * discardChanges. Returns the once-per-tick time (shared encode and discardChanges) and the
   * time of the view encodes, ms.
   * @returns {{ sharedMs: number, viewsMs: number }}
   */
  encode() {
    const enc = this.encoder;
    const t0 = now();
    const it = { offset: 0 };
    enc.encode(it);
    const shared = it.offset;
    const t1 = now();
    let bytes = 0;
    for (const view of this.views) {
      it.offset = shared;
      bytes += enc.encodeView(view, shared, it).length;
    }
    const t2 = now();
    enc.discardChanges();
    const t3 = now();
    this.bytes = bytes;
    return { sharedMs: t1 - t0 + (t3 - t2), viewsMs: t2 - t1 };
  }
}
