// One tick's result on the JavaScript side: its packets (views into the reused output buffer,
// with their lifetime enforced) and its stats.
import type { NativeTickResult } from './binding.js';
import { SightlineError, describe } from './errors.js';
import type { EntityId, Packet, TickStats } from './world-types.js';

/**
 * The packets and stats of one tick.
 *
 * Lifetime: a result's bytes live in one of two output buffers that ticks use alternately. They
 * stay valid while the next tick runs (so sending may overlap the next pass) and until the tick
 * after that starts. From then on `packets`, `viewerAt` and `bytesAt` throw
 * `ERR_SIGHTLINE_RESULT_EXPIRED`; a `Uint8Array` kept from earlier never dangles but reads
 * whatever its buffer holds by then (a later tick's bytes), so copy what must outlive that
 * (`bytes.slice()`).
 */
/** @internal The World a result came from (UdpServer's native data path asks: has it sent these packets already?). */
export let sourceOf: (result: TickResult) => object;
/**
 * @internal A result's packet index (viewer, offset, length for each packet) and one view over
 * its whole buffer, or null once expired: for reading many packets' headers without a view each.
 */
export let packetIndexOf: (result: TickResult) => { index: Uint32Array; bytes: Uint8Array } | null;

export class TickResult {
  static {
    sourceOf = (result) => result.#world;
    packetIndexOf = (result) => (result.valid ? { index: result.#index, bytes: new Uint8Array(result.#buffer) } : null);
  }
  /** The tick number (starts at 1). */
  readonly tick: number;
  /** Number of packets (one per served viewer). */
  readonly count: number;
  readonly stats: TickStats;
  readonly #world: { epochValid(epoch: number): boolean };
  readonly #epoch: number;
  readonly #buffer: ArrayBuffer;
  readonly #index: Uint32Array;
  #packets: readonly Packet[] | undefined;

  /** @internal */
  constructor(world: { epochValid(epoch: number): boolean }, epoch: number, r: NativeTickResult) {
    this.tick = r.tick;
    this.count = r.count;
    this.stats = r.stats;
    this.#world = world;
    this.#epoch = epoch;
    this.#buffer = r.buffer;
    this.#index = r.index;
  }

  /** Whether the bytes are still valid (see the class docs). */
  get valid(): boolean {
    return this.#world.epochValid(this.#epoch);
  }

  #check(): void {
    if (!this.valid) {
      throw new SightlineError(
        'ERR_SIGHTLINE_RESULT_EXPIRED',
        `the packets of tick ${this.tick} expired when a later tick started: their buffer is reused two ticks later; copy bytes you need to keep`,
      );
    }
  }

  /** Every packet of the tick, in viewer order. Built once on first access; the array is frozen (every access returns it). */
  get packets(): readonly Packet[] {
    this.#check();
    if (!this.#packets) {
      const out: Packet[] = new Array(this.count);
      const ix = this.#index;
      for (let i = 0; i < this.count; i++) {
        out[i] = { viewer: ix[3 * i], bytes: new Uint8Array(this.#buffer, ix[3 * i + 1], ix[3 * i + 2]) };
      }
      this.#packets = Object.freeze(out);
    }
    return this.#packets;
  }

  #checkIndex(i: number): void {
    if (typeof i !== 'number' || (i >>> 0) !== i || i >= this.count) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `packet index must be an integer from 0 to count-1 (count is ${this.count}), received ${describe(i)}`,
      );
    }
  }

  /**
   * The viewer of packet i (0 ≤ i < count).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (i not an integer in [0, count)), ERR_SIGHTLINE_RESULT_EXPIRED.
   */
  viewerAt(i: number): EntityId {
    this.#checkIndex(i);
    this.#check();
    return this.#index[3 * i];
  }

  /**
   * The bytes of packet i (0 ≤ i < count): a view into the reused output buffer.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (i not an integer in [0, count)), ERR_SIGHTLINE_RESULT_EXPIRED.
   */
  bytesAt(i: number): Uint8Array {
    this.#checkIndex(i);
    this.#check();
    return new Uint8Array(this.#buffer, this.#index[3 * i + 1], this.#index[3 * i + 2]);
  }
}
