// What the quality harness's clients believe (a small hash table per viewer), and the pairs that
// were ever updated.
import { extrapolateAxis, isJump, type Extrapolation } from 'sightline/net';

// What one client believes: an open-addressing hash table (linear probing, backward-shift
// deletion) from entity index to the believed position (raw) and the tick of its last update, the
// update before it (raw, tick; -1: none since it appeared) as ClientWorld keeps it for
// extrapolation, and a despawn-queued flag per entry for the baselines. Small enough to stay in
// cache while the viewer is measured.
export class ViewerBeliefs {
  // Assigned by allocate(), which the constructor calls.
  keys!: Int32Array;
  x!: Int32Array;
  y!: Int32Array;
  z!: Int32Array;
  tick!: Int32Array;
  px!: Int32Array;
  py!: Int32Array;
  pz!: Int32Array;
  ptick!: Int32Array;
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
    this.px = new Int32Array(n);
    this.py = new Int32Array(n);
    this.pz = new Int32Array(n);
    this.ptick = new Int32Array(n);
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
  /** Sets the belief of entity e from an update of `tick`; the one it replaces becomes the previous. Returns its entry. */
  set(e: number, x: number, y: number, z: number, tick: number): number {
    if (2 * (this.size + 1) > this.keys.length) this.rehash(this.keys.length * 2);
    const keys = this.keys;
    let h = this.home(e);
    for (;;) {
      const k = keys[h];
      if (k === e) {
        if (tick > this.tick[h]) {
          this.px[h] = this.x[h];
          this.py[h] = this.y[h];
          this.pz[h] = this.z[h];
          this.ptick[h] = this.tick[h];
        }
        break;
      }
      if (k < 0) {
        keys[h] = e;
        this.queued[h] = 0;
        this.ptick[h] = -1;
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
  /**
   * Where entry h's entity is predicted at `tick` (raw, fractional), written to out[0..2]: as
   * ClientWorld.predict with its extrapolation (null: the held position).
   */
  predict(h: number, tick: number, e: Extrapolation | null, out: Float64Array): void {
    if (e === null) {
      out[0] = this.x[h];
      out[1] = this.y[h];
      out[2] = this.z[h];
      return;
    }
    const p = this.ptick[h];
    const last = this.tick[h];
    const x = this.x[h];
    const y = this.y[h];
    const z = this.z[h];
    const jump = p >= 0 && isJump(x - this.px[h], y - this.py[h], z - this.pz[h], last - p, e.maxStepRaw);
    out[0] = extrapolateAxis(this.px[h], p, x, last, tick, e.maxTicks, jump);
    out[1] = extrapolateAxis(this.py[h], p, y, last, tick, e.maxTicks, jump);
    out[2] = extrapolateAxis(this.pz[h], p, z, last, tick, e.maxTicks, jump);
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
      this.px[i] = this.px[j];
      this.py[i] = this.py[j];
      this.pz[i] = this.pz[j];
      this.ptick[i] = this.ptick[j];
      this.queued[i] = this.queued[j];
      i = j;
    }
    keys[i] = -1;
    this.size--;
  }
  private rehash(n: number): void {
    const { keys, x, y, z, tick, px, py, pz, ptick, queued } = this;
    this.allocate(n);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] < 0) continue;
      const h = this.set(keys[i], x[i], y[i], z[i], tick[i]);
      this.px[h] = px[i];
      this.py[h] = py[i];
      this.pz[h] = pz[i];
      this.ptick[h] = ptick[i];
      this.queued[h] = queued[i];
    }
  }
}

// A bit per (viewer, entity index), one row of ceil(E / 32) words per viewer.
export class PairBits {
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
