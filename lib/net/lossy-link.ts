// An in-process link for tests and simulations: carries a tick's packets to ClientWorlds and their
// acks back, losing, delaying (reordering) and duplicating datagrams on a seeded PRNG.
// Browser-safe: imports nothing from Node.

import { SightlineError, describe, readOptions } from '../errors.js';
import { checkListenerOptions } from './options.js';
import { mulberry32 } from '../random.js';
import type { EntityId } from '../world.js';
import type { ClientWorld } from './client-world.js';
import {
  acknowledgeOf,
  checkTickPackets,
  classifyAckError,
  zeroCounters,
  type AcknowledgeFn,
  type DisconnectReason,
  type TickPackets,
  type Transport,
  type TransportCounters,
  type TransportListener,
} from './transport.js';

export { mulberry32 } from '../random.js';

const CONDITIONS: readonly string[] = ['loss', 'duplicate', 'maxDelay', 'ackLoss'];
const LINK_OPTIONS: readonly string[] = [
  ...CONDITIONS, 'seed', 'world', 'maxInFlight', 'drop', 'onConnect', 'onDisconnect', 'onAck', 'onInput', 'onError',
];

/** How the link mistreats datagrams. Probabilities are per datagram, in [0, 1]. */
export interface LinkConditions {
  /** Probability a game packet is lost. Default 0. */
  loss?: number;
  /** Probability a game packet is delivered twice (the copy with its own delay). Default 0. */
  duplicate?: number;
  /** Each datagram is delayed a uniform whole number of steps in [0, maxDelay]: reordering. Default 0. */
  maxDelay?: number;
  /** Probability an ACK is lost. Default: `loss`. */
  ackLoss?: number;
}

export interface LossyLinkOptions extends TransportListener, LinkConditions {
  /** PRNG seed. Default 1. */
  seed?: number;
  /** The World: when it has `acknowledge(viewer, ack, ackBits)`, delivered acks go to it (after onAck). */
  world?: object;
  /** Datagrams in flight (both directions), at most; a send beyond it is dropped. Default 65536. */
  maxInFlight?: number;
  /**
   * Targeted loss: a game packet for which this returns true is lost (counted in `lost`), whatever
   * the random conditions say. Called once per packet sent, with the bytes about to be sent.
   */
  drop?: (viewer: EntityId, bytes: Uint8Array) => boolean;
}

/** Counters of a {@link LossyLink}. */
export interface LossyLinkCounters extends TransportCounters {
  /** Game packets lost by the link. */
  lost: number;
  /** Extra copies the link made. */
  duplicated: number;
  /** Game packets handed to a ClientWorld. */
  delivered: number;
  /** ACKs lost by the link. */
  acksLost: number;
}

interface Down {
  due: number;
  viewer: EntityId;
  bytes: Uint8Array;
}

interface Up {
  due: number;
  viewer: EntityId;
  ack: number;
  ackBits: number;
}

function probability(name: string, v: unknown): number {
  if (typeof v !== 'number' || !(v >= 0 && v <= 1)) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${name} must be a number from 0 to 1, received ${describe(v)}`);
  }
  return v;
}

/**
 * An in-process {@link Transport}. Time advances in steps (one per tick): a datagram sent during
 * step t with delay d is delivered by the step() that ends step t + d, in random order among those
 * due. Each ClientWorld acks every packet it is handed; acks take the same kind of path back.
 *
 * ```ts
 * const link = new LossyLink({ loss: 0.05, maxDelay: 3, seed: 7, world, onConnect: spawnViewer });
 * const viewer = link.connect('client-1', new ClientWorld(config));
 * for (;;) { link.sendTick(await world.tick()); link.step(); }
 * ```
 */
export class LossyLink implements Transport {
  readonly #listener: TransportListener;
  readonly #acknowledge: AcknowledgeFn | undefined;
  readonly #random: () => number;
  readonly #maxInFlight: number;
  readonly #drop: ((viewer: EntityId, bytes: Uint8Array) => boolean) | undefined;
  readonly #clients = new Map<EntityId, ClientWorld>();
  readonly #counters: LossyLinkCounters = { ...zeroCounters(), lost: 0, duplicated: 0, delivered: 0, acksLost: 0 };
  #loss = 0;
  #duplicate = 0;
  #maxDelay = 0;
  #ackLoss = 0;
  #down: Down[] = [];
  #up: Up[] = [];
  #time = 0;
  #closed = false;

  /**
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an ordinary object, a condition out of
   *   range, onConnect or another listener not a function), ERR_SIGHTLINE_UNKNOWN_OPTION (a plain
   *   object with a key that is not an option; an instance of a class is not checked for them).
   */
  constructor(options: LossyLinkOptions) {
    checkListenerOptions('LossyLink', options, LINK_OPTIONS, ['onConnect', 'onDisconnect', 'onAck', 'onInput', 'onError', 'drop']);
    if (typeof options.onConnect !== 'function') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `LossyLink onConnect must be a function, received ${describe(options.onConnect)}`);
    }
    this.#listener = options;
    this.#acknowledge = acknowledgeOf(options.world);
    this.#random = mulberry32(options.seed ?? 1);
    const cap = options.maxInFlight ?? 65536;
    if (!Number.isInteger(cap) || cap < 1) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `maxInFlight must be a positive integer, received ${describe(cap)}`);
    }
    this.#maxInFlight = cap;
    if (options.drop !== undefined && typeof options.drop !== 'function') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `drop must be a function, received ${describe(options.drop)}`);
    }
    this.#drop = options.drop;
    this.#apply(options);
  }

  /**
   * Changes the conditions for datagrams sent from now on (those in flight keep their fate).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (not an ordinary object, a condition out of range),
   *   ERR_SIGHTLINE_UNKNOWN_OPTION (a key that is not a condition); nothing changes then.
   */
  setConditions(c: LinkConditions): void {
    if (c === undefined || c === null) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `conditions must be an object, received ${describe(c)}`);
    }
    this.#apply(readOptions('LossyLink conditions', c, CONDITIONS) as LinkConditions);
  }

  #apply(c: LinkConditions): void {
    const loss = probability('loss', c.loss ?? 0);
    const duplicate = probability('duplicate', c.duplicate ?? 0);
    const ackLoss = probability('ackLoss', c.ackLoss ?? loss);
    const maxDelay = c.maxDelay ?? 0;
    if (!Number.isInteger(maxDelay) || maxDelay < 0 || maxDelay > 1_000_000) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `maxDelay must be an integer from 0 to 1000000, received ${describe(maxDelay)}`);
    }
    this.#loss = loss;
    this.#duplicate = duplicate;
    this.#ackLoss = ackLoss;
    this.#maxDelay = maxDelay;
  }

  /** Steps taken so far. */
  get time(): number {
    return this.#time;
  }

  /** Datagrams in flight, both directions. */
  get inFlight(): number {
    return this.#down.length + this.#up.length;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  get counters(): Readonly<LossyLinkCounters> {
    return this.#counters;
  }

  has(viewer: EntityId): boolean {
    return this.#clients.has(viewer);
  }

  /**
   * Joins a client: calls `onConnect(clientKey)` and routes that viewer's packets to `client`.
   * Returns the avatar id. @throws what onConnect throws; ERR_SIGHTLINE_INVALID_ARGUMENT when it
   * returns something other than a u32 or a viewer that already has a client.
   */
  connect(clientKey: string, client: ClientWorld): EntityId {
    const avatar: unknown = this.#listener.onConnect.call(this.#listener, clientKey, { clientKey, address: clientKey, port: 0, nonce: 0, connectToken: new Uint8Array(0) });
    if (typeof avatar !== 'number' || !Number.isInteger(avatar) || avatar < 0 || avatar > 0xffffffff || this.#clients.has(avatar)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `onConnect must return a new avatar entity id (u32), returned ${describe(avatar)}`);
    }
    this.#clients.set(avatar, client);
    this.#counters.connects++;
    return avatar;
  }

  /** Ends a viewer's session (`onDisconnect(viewer, 'kicked')`); its datagrams in flight are discarded on arrival. */
  disconnect(viewer: EntityId): boolean {
    return this.#end(viewer, 'kicked');
  }

  sendTick(result: TickPackets): number {
    checkTickPackets(result);
    let issued = 0;
    for (let i = 0, n = result.count; i < n; i++) {
      if (this.send(result.viewerAt(i), result.bytesAt(i))) issued++;
    }
    return issued;
  }

  /** Sends one game packet (copied) through the link. False when no client or the link is full. */
  send(viewer: EntityId, bytes: Uint8Array): boolean {
    const c = this.#counters;
    if (this.#closed || !this.#clients.has(viewer)) {
      c.packetsUnrouted++;
      return false;
    }
    if (this.inFlight >= this.#maxInFlight) {
      c.packetsDropped++;
      return false;
    }
    c.packetsSent++;
    c.bytesSent += bytes.length;
    const dropped = this.#drop !== undefined && this.#drop(viewer, bytes);
    if (this.#random() < this.#loss || dropped) {
      c.lost++;
      return true;
    }
    const copy = bytes.slice();
    this.#down.push({ due: this.#time + this.#delay(), viewer, bytes: copy });
    if (this.#random() < this.#duplicate && this.inFlight < this.#maxInFlight) {
      c.duplicated++;
      this.#down.push({ due: this.#time + this.#delay(), viewer, bytes: copy });
    }
    return true;
  }

  /**
   * Ends the current step: delivers every game packet due (random order), then every ack due,
   * including acks of packets just delivered whose delay is 0.
   */
  step(): void {
    this.#deliver(false);
    this.#time++;
  }

  /** Delivers everything in flight, packets and the acks they cause, as if all delays were over. */
  flush(): void {
    while (this.#down.length > 0 || this.#up.length > 0) this.#deliver(true);
  }

  /** Reports every session as `onDisconnect(viewer, 'closed')` and discards what is in flight. */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      for (const viewer of [...this.#clients.keys()]) this.#end(viewer, 'closed');
      this.#down = [];
      this.#up = [];
    }
    return Promise.resolve();
  }

  // ---------------------------------------------------------------------------------------------

  #delay(): number {
    return this.#maxDelay === 0 ? 0 : Math.floor(this.#random() * (this.#maxDelay + 1));
  }

  #take<T extends { due: number }>(list: T[], all: boolean): { due: T[]; rest: T[] } {
    const due: T[] = [];
    const rest: T[] = [];
    for (const d of list) (all || d.due <= this.#time ? due : rest).push(d);
    // Fisher–Yates: datagrams due together arrive in random order.
    for (let i = due.length - 1; i > 0; i--) {
      const j = Math.floor(this.#random() * (i + 1));
      const t = due[i];
      due[i] = due[j];
      due[j] = t;
    }
    return { due, rest };
  }

  #deliver(all: boolean): void {
    const c = this.#counters;
    const down = this.#take(this.#down, all);
    this.#down = down.rest;
    for (const d of down.due) {
      const client = this.#clients.get(d.viewer);
      if (client === undefined) continue;
      c.delivered++;
      try {
        client.receive(d.bytes);
      } catch (e) {
        // A ClientWorld listener threw; the packet was applied.
        this.#listenerError(e);
      }
      const a = client.ack();
      if (a === null) continue;
      if (this.#random() < this.#ackLoss) {
        c.acksLost++;
        continue;
      }
      if (this.inFlight >= this.#maxInFlight) continue;
      this.#up.push({ due: this.#time + this.#delay(), viewer: d.viewer, ack: a.ack, ackBits: a.ackBits });
    }
    const up = this.#take(this.#up, all);
    this.#up = up.rest;
    for (const u of up.due) {
      c.datagramsReceived++;
      c.bytesReceived += 7;
      if (!this.#clients.has(u.viewer)) {
        c.strays++;
        continue;
      }
      c.acks++;
      const onAck = this.#listener.onAck;
      if (onAck !== undefined) {
        try {
          onAck.call(this.#listener, u.viewer, u.ack, u.ackBits);
        } catch (e) {
          this.#listenerError(e);
        }
      }
      if (this.#acknowledge !== undefined) {
        try {
          this.#acknowledge(u.viewer, u.ack, u.ackBits);
        } catch (e) {
          const kind = classifyAckError(e);
          if (kind === 'unused') c.acksUnused++;
          else if (kind === 'bad') c.badAcks++;
          else this.#listenerError(e);
        }
      }
    }
  }

  #listenerError(e: unknown): void {
    this.#counters.listenerErrors++;
    const fn = this.#listener.onError;
    if (fn === undefined) return;
    try {
      fn.call(this.#listener, e);
    } catch {
      // onError itself failed: nothing further to tell
    }
  }

  #end(viewer: EntityId, reason: DisconnectReason): boolean {
    if (!this.#clients.delete(viewer)) return false;
    this.#counters.disconnects++;
    const fn = this.#listener.onDisconnect;
    if (fn !== undefined) {
      try {
        fn.call(this.#listener, viewer, reason);
      } catch (e) {
        this.#listenerError(e);
      }
    }
    return true;
  }
}
