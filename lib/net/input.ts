// Client input, both ends (docs/transport.md, "Input"): the server's per-session receiver (latest
// wins for unreliable input; a 16-message reorder window and in-order delivery for reliable input,
// acknowledged in the game packet header) and the client's sender (a bounded queue of reliable
// messages resent until acknowledged). Browser-safe: imports nothing from Node.

import { SightlineError, describe } from '../errors.js';
import { INPUT_WINDOW } from './control-types.js';

/** What {@link InputReceiver.reliable} did with a reliable input. */
export type ReliableOutcome =
  /** It was the one expected: passed on, with any held ones it unblocked. */
  | 'delivered'
  /** Ahead of the expected one, within the window: held until the gap is filled. */
  | 'held'
  /** Already passed on, or already held: dropped. */
  | 'repeated'
  /** More than {@link INPUT_WINDOW} ahead of the expected one: dropped (the client resends it). */
  | 'ahead';

/** Called for each input passed on: bytes (valid during the call), its per-kind sequence. */
export type InputDelivery = (bytes: Uint8Array, sequence: number) => void;

/**
 * One session's input, server side. Unreliable input: a message is passed on only when its
 * sequence is newer (mod 65536, by less than half the ring) than every one passed on before.
 * Reliable input: passed on exactly once each, in sequence order from 0; up to {@link INPUT_WINDOW}
 * messages after a gap are held (copied), further ones dropped.
 */
export class InputReceiver {
  #newestUnreliable = -1;
  #expected = 0;
  // Bit i: reliable sequence (expected + 1 + i) mod 65536 is held in #held.
  #bits = 0;
  readonly #held: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(INPUT_WINDOW).fill(undefined);

  /** Whether an unreliable input with this sequence (u16) is newer than all before; if so it becomes the newest. */
  unreliable(sequence: number): boolean {
    const n = this.#newestUnreliable;
    if (n >= 0) {
      const d = (sequence - n) & 0xffff;
      if (d === 0 || d >= 0x8000) return false;
    }
    this.#newestUnreliable = sequence;
    return true;
  }

  /**
   * Takes a reliable input. `deliver` runs for it and for every held one it unblocks, in order;
   * an exception from `deliver` is passed to `onError` and delivery carries on (the input counts
   * as passed on).
   */
  reliable(sequence: number, bytes: Uint8Array, deliver: InputDelivery, onError: (e: unknown) => void): ReliableOutcome {
    const d = (sequence - this.#expected) & 0xffff;
    if (d >= 0x8000) return 'repeated';
    if (d > INPUT_WINDOW) return 'ahead';
    if (d > 0) {
      const bit = 1 << (d - 1);
      if ((this.#bits & bit) !== 0) return 'repeated';
      this.#held[sequence % INPUT_WINDOW] = bytes.slice();
      this.#bits |= bit;
      return 'held';
    }
    let payload: Uint8Array = bytes;
    for (;;) {
      try {
        deliver(payload, this.#expected);
      } catch (e) {
        onError(e);
      }
      this.#expected = (this.#expected + 1) & 0xffff;
      const next = this.#bits & 1;
      this.#bits >>>= 1;
      if (next === 0) break;
      const slot = this.#expected % INPUT_WINDOW;
      payload = this.#held[slot]!;
      this.#held[slot] = undefined;
    }
    return 'delivered';
  }

  /** The header's `ack`: the reliable sequence expected next (every earlier one was passed on), u16. */
  get ack(): number {
    return this.#expected;
  }

  /** The header's `ackBits`: bit i set, reliable sequence (ack + 1 + i) mod 65536 is held (i = 0..15), u16. */
  get ackBits(): number {
    return this.#bits;
  }
}

interface Pending {
  bytes: Uint8Array;
  /** When last sent, ms; -1: not sent yet. */
  sentAt: number;
  /** The server said it holds it (ackBits): no resend needed. */
  held: boolean;
}

/**
 * A client's reliable input queue: messages numbered from 0, kept (copied) until a game packet's
 * header acknowledges them, sent while within the server's window (the oldest unacknowledged and
 * the {@link INPUT_WINDOW} after it) and resent every `resendMs` until acknowledged or held.
 */
export class InputSender {
  readonly maxQueued: number;
  readonly resendMs: number;
  #base = 0;
  readonly #queue: Pending[] = [];
  #head = 0;
  #nextUnreliable = 0;

  /**
   * @param maxQueued reliable messages kept at most (1 to 65,536 / 2)
   * @param resendMs an unacknowledged message is sent again after this long, ms
   */
  constructor(maxQueued: number, resendMs: number) {
    this.maxQueued = maxQueued;
    this.resendMs = resendMs;
  }

  /** Reliable messages not yet acknowledged. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** Sequence the next reliable message gets, u16. */
  get nextReliable(): number {
    return (this.#base + this.pending) & 0xffff;
  }

  /** Takes the next unreliable sequence (u16): 0, 1, 2, … */
  takeUnreliable(): number {
    const s = this.#nextUnreliable;
    this.#nextUnreliable = (s + 1) & 0xffff;
    return s;
  }

  /**
   * Queues a reliable message (copied). Returns its sequence.
   * @throws ERR_SIGHTLINE_NET_INPUT_QUEUE_FULL (maxQueued messages wait for acknowledgement; nothing queued).
   */
  push(bytes: Uint8Array): number {
    if (this.pending >= this.maxQueued) {
      throw new SightlineError(
        'ERR_SIGHTLINE_NET_INPUT_QUEUE_FULL',
        `reliable input queue is full: ${this.maxQueued} messages wait for the server's acknowledgement (maxReliableInputs)`,
      );
    }
    const seq = this.nextReliable;
    this.#queue.push({ bytes: bytes.slice(), sentAt: -1, held: false });
    return seq;
  }

  /**
   * Applies a game packet header's input acknowledgement: every message before `ack` is done;
   * bit i of `ackBits` says (ack + 1 + i) is held. An `ack` outside the queue (older than its
   * oldest message or past its newest) is ignored. Returns the messages newly acknowledged.
   */
  acknowledge(ack: number, ackBits: number): number {
    const n = this.pending;
    const d = (ack - this.#base) & 0xffff;
    if (d > n) return 0;
    this.#head += d;
    this.#base = ack;
    for (let i = 0; i < INPUT_WINDOW; i++) {
      if ((ackBits & (1 << i)) === 0) continue;
      const k = this.#head + 1 + i;
      if (k < this.#queue.length) this.#queue[k].held = true;
    }
    if (this.#head > 64 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    return d;
  }

  /**
   * Sends what is due: each message in the window not held by the server, never sent, or last sent
   * `resendMs` ago or more. `send` returns false when the channel did not take it (it is retried
   * at the next call). Returns [first sends, resends].
   */
  due(now: number, send: (sequence: number, bytes: Uint8Array) => boolean): [number, number] {
    let first = 0;
    let again = 0;
    const end = Math.min(this.#queue.length, this.#head + INPUT_WINDOW + 1);
    for (let k = this.#head; k < end; k++) {
      const p = this.#queue[k];
      if (p.held) continue;
      if (p.sentAt >= 0 && now - p.sentAt < this.resendMs) continue;
      if (!send((this.#base + k - this.#head) & 0xffff, p.bytes)) break;
      if (p.sentAt < 0) first++;
      else again++;
      p.sentAt = now;
    }
    return [first, again];
  }

  /** Forgets every message and starts both sequences at 0 again. */
  reset(): void {
    this.#base = 0;
    this.#queue.length = 0;
    this.#head = 0;
    this.#nextUnreliable = 0;
  }
}

/** @internal Checks an input kind argument: 'unreliable' | 'reliable' or 0 | 1; returns 0 or 1. */
export function inputKindOf(kind: unknown): 0 | 1 {
  if (kind === 'unreliable' || kind === 0) return 0;
  if (kind === 'reliable' || kind === 1) return 1;
  throw new SightlineError(
    'ERR_SIGHTLINE_INVALID_ARGUMENT',
    `kind must be 'unreliable' (InputKind.UNRELIABLE, 0) or 'reliable' (InputKind.RELIABLE, 1), received ${describe(kind)}`,
  );
}
