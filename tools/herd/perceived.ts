// Perceived position error of a networked herd: what clients believe against the truth at the
// tick they were last told about. The truth is kept for the last two seconds of ticks; beliefs
// come from the bots over the network, and from in-process twins: ClientWorlds in the server's own
// process fed each tick with the TickResult's packet of a few sampled viewers (a client that
// receives every packet at once), the reference the bots' error is read against.
import { RAW_PER_METER, mulberry32, type EntityId, type TickResult, type World } from 'sightline';
import { ClientWorld } from 'sightline/net';
import type { BotBelief } from './bot-messages.js';
import { beliefOf } from './heartbeat-check.js';
import { summarize } from './metrics.js';
import type { PerceivedError } from './net-report.js';

// Position errors kept for percentiles (a uniform sample beyond that); mean and worst stay exact.
const ERROR_RESERVOIR = 1 << 20;
/** In-process twins at most (each decodes its viewer's packet every tick on the JavaScript thread). */
export const MAX_TWINS = 16;

// Exact count, sum and maximum of position errors, with a uniform sample for percentiles.
class ErrorSample {
  count = 0;
  sum = 0;
  worst = 0;
  #values = new Float64Array(4096);
  #length = 0;
  readonly #rand = mulberry32(0x5eed);

  push(v: number): void {
    this.count++;
    this.sum += v;
    if (v > this.worst) this.worst = v;
    if (this.#length < ERROR_RESERVOIR) {
      if (this.#length === this.#values.length) {
        const grown = new Float64Array(this.#values.length * 2);
        grown.set(this.#values);
        this.#values = grown;
      }
      this.#values[this.#length++] = v;
      return;
    }
    const j = Math.floor(this.#rand() * this.count);
    if (j < ERROR_RESERVOIR) this.#values[j] = v;
  }

  report(rounds: number, skipped: number): PerceivedError {
    const n = this.count;
    const d = summarize(this.#values.subarray(0, this.#length));
    return {
      samples: n,
      rounds,
      skipped,
      mean: n > 0 ? this.sum / n : null,
      p50: n > 0 ? d.p50 : null,
      p99: n > 0 ? d.p99 : null,
      worst: n > 0 ? this.worst : null,
    };
  }
}

/** The truth, the bots' beliefs and the twins' of one networked herd run. */
export class PerceivedErrors {
  readonly #world: World;
  readonly #slots: Uint32Array;
  readonly #ringTick: Float64Array;
  readonly #ringX: Int32Array[];
  readonly #ringY: Int32Array[];
  readonly #indexOf = new Map<number, number>();
  readonly #bots = new ErrorSample();
  readonly #twinErrors = new ErrorSample();
  readonly #twins = new Map<EntityId, ClientWorld>();
  #rounds = 0;
  #skipped = 0;
  #twinRounds = 0;
  #twinSkipped = 0;

  /** `ids` and `slots`: the herd's entities and their slots in `world.positions`, in the same order. */
  constructor(world: World, ids: Uint32Array, slots: Uint32Array) {
    this.#world = world;
    this.#slots = slots;
    const ring = Math.max(8, 2 * world.config.tickHz);
    this.#ringTick = new Float64Array(ring).fill(-1);
    this.#ringX = Array.from({ length: ring }, () => new Int32Array(ids.length));
    this.#ringY = Array.from({ length: ring }, () => new Int32Array(ids.length));
    for (let i = 0; i < ids.length; i++) this.#indexOf.set(ids[i], i);
  }

  /** After a tick: its true positions, and its packets for the twins. */
  recordTick(result: TickResult): void {
    const k = result.tick % this.#ringTick.length;
    const X = this.#world.positions.x;
    const Y = this.#world.positions.y;
    const tx = this.#ringX[k];
    const ty = this.#ringY[k];
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      tx[i] = X[s];
      ty[i] = Y[s];
    }
    this.#ringTick[k] = result.tick;
    if (this.#twins.size === 0) return;
    for (let i = 0; i < result.count; i++) {
      const twin = this.#twins.get(result.viewerAt(i));
      if (twin !== undefined) twin.receive(result.bytesAt(i));
    }
  }

  /**
   * The bots' beliefs of one sample round. The first rounds also choose the twins: the sampled
   * avatars, up to {@link MAX_TWINS}; a twin starts from its viewer's next packet.
   */
  takeBeliefs(beliefs: readonly BotBelief[]): void {
    this.#rounds++;
    for (const b of beliefs) {
      if (!this.#measure(b, this.#bots)) this.#skipped++;
      if (this.#twins.size < MAX_TWINS && !this.#twins.has(b.avatar)) {
        const c = this.#world.config;
        const layout = { regionRaw: c.regionRaw, regionShift: c.regionShift, verticalRaw: c.verticalRaw, zBits: c.zBits, quantShift: c.quantShift };
        this.#twins.set(b.avatar, new ClientWorld(layout, { payloadBytes: c.payloadBytes }));
      }
    }
  }

  /** The twins' beliefs now (their newest packet is this tick's). */
  sampleTwins(): void {
    if (this.#twins.size === 0) return;
    this.#twinRounds++;
    for (const [avatar, twin] of this.#twins) {
      const b = beliefOf(avatar, twin);
      if (b !== undefined && !this.#measure(b, this.#twinErrors)) this.#twinSkipped++;
    }
  }

  /** Over the network (the bots), and in-process (the twins). */
  report(): { bots: PerceivedError; twins: PerceivedError & { clients: number } } {
    return {
      bots: this.#bots.report(this.#rounds, this.#skipped),
      twins: { ...this.#twinErrors.report(this.#twinRounds, this.#twinSkipped), clients: this.#twins.size },
    };
  }

  // Each held entity's 2D distance from the truth at the belief's tick; false when that tick has
  // left the history.
  #measure(b: BotBelief, into: ErrorSample): boolean {
    const ring = this.#ringTick;
    const k = b.tick % ring.length;
    if (ring[k] !== b.tick) return false;
    const tx = this.#ringX[k];
    const ty = this.#ringY[k];
    const index = this.#indexOf;
    for (let j = 0; j < b.ids.length; j++) {
      const i = index.get(b.ids[j]);
      if (i === undefined) continue;
      const dx = b.x[j] - tx[i];
      const dy = b.y[j] - ty[i];
      into.push(Math.sqrt(dx * dx + dy * dy) / RAW_PER_METER);
    }
    return true;
  }
}
