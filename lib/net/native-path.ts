// The native UDP data path (Linux): the addon's socket, sessions, send path and receive thread
// (native/net/), as UdpServer drives it. Internal to the package: UdpServer is the API.
import { native, type NativeUdp } from '../binding.js';
import { SightlineError } from '../errors.js';
import { engineOf, type World } from '../world.js';
import type { EntityId } from '../world-types.js';
import type { TickPackets } from './transport.js';

/** Fields of the data path's running totals (the addon's udpCounterFields, checked when loaded). */
export const NATIVE_COUNTER_FIELDS = [
  'datagramsReceived', 'bytesReceived', 'malformed', 'strays', 'badAcks', 'acks', 'acksThrottled',
  'forwarded', 'batchDropped', 'socketErrors', 'pings', 'packetsSent', 'bytesSent', 'packetsDropped',
  'sendErrors', 'packetsUnrouted', 'acksApplied', 'acksUnused', 'acksInvalid', 'badTokens',
  'longWrongDirection', 'longBadMagic', 'longMalformed', 'longOversized', 'longUnknownType', 'forwardedBytes',
] as const;
export type NativeCounters = Record<(typeof NATIVE_COUNTER_FIELDS)[number], number>;

/** Fields of what a tick's part did (the addon's udpTickFields). Times in µs. */
export const NATIVE_TICK_FIELDS = [
  'tick', 'sent', 'bytes', 'dropped', 'failed', 'unrouted', 'sendMicros', 'acksApplied', 'acksUnused',
  'acksInvalid', 'ackMicros',
] as const;
export type NativeTickTransport = Record<(typeof NATIVE_TICK_FIELDS)[number], number>;

if (native.udpCounterFields !== undefined && native.udpCounterFields.join() !== NATIVE_COUNTER_FIELDS.join()) {
  throw new Error(`sightline: the addon's UDP counters (${native.udpCounterFields.join()}) are not this package's (rebuild the addon: npm run build)`);
}
if (native.udpTickFields !== undefined && native.udpTickFields.join() !== NATIVE_TICK_FIELDS.join()) {
  throw new Error(`sightline: the addon's UDP tick fields (${native.udpTickFields.join()}) are not this package's (rebuild the addon: npm run build)`);
}

/** Whether this platform's addon has the native data path (Linux). */
export function nativePathAvailable(): boolean {
  return process.platform === 'linux' && typeof native.NativeUdp === 'function';
}

/** The errno values the data path reports. */
export const ERRNO = { ENOENT: 2, EBADF: 9, EAGAIN: 11, ENOBUFS: 105 } as const;

export interface NativePathOptions {
  /** Numeric address to bind (no names). */
  address: string;
  port: number;
  type: 'udp4' | 'udp6';
  /** Sessions at most. */
  maxSessions: number;
  /** SO_SNDBUF / SO_RCVBUF asked for, bytes; undefined: the kernel's default. */
  sendBufferSize?: number;
  recvBufferSize?: number;
  /** Hand each queued ACK to onAck too. */
  forwardAcks: boolean;
}

/** What the receive thread hands to JavaScript. Called on the JavaScript thread, in arrival order. */
export interface NativePathListener {
  /** A datagram the data path did not handle itself (HELLO, BYE). `bytes` is the caller's to keep. */
  onDatagram(bytes: Uint8Array, address: string, port: number): void;
  /** An ACK the data path queued for the engine (forwardAcks only). */
  onAck(viewer: EntityId, ack: number, ackBits: number): void;
  /** One of the two above threw (the rest of the batch is still delivered). */
  onError(error: unknown): void;
}

const latin1 = new TextDecoder('latin1');

/** @internal The addon's NativeUdp, with its batch parsed and its counters named. */
export class NativePath {
  readonly #udp: NativeUdp;
  readonly #listener: NativePathListener;
  readonly #counters = new Float64Array(NATIVE_COUNTER_FIELDS.length);
  readonly #tick = new Float64Array(NATIVE_TICK_FIELDS.length);
  #world: World | undefined;
  #closed = false;
  #index = new Uint32Array(0);

  /** @throws ERR_SIGHTLINE_NET_BIND (the kernel refused the socket or the bind; a name, not a numeric address). */
  constructor(options: NativePathOptions, listener: NativePathListener) {
    const Udp = native.NativeUdp;
    if (Udp === undefined) throw new SightlineError('ERR_SIGHTLINE_NET_UNAVAILABLE', `the native UDP data path is not built for ${process.platform}`);
    this.#listener = listener;
    this.#udp = new Udp(
      {
        address: options.address,
        port: options.port,
        family: options.type === 'udp6' ? 6 : 4,
        maxSessions: options.maxSessions,
        sendBufferBytes: options.sendBufferSize,
        recvBufferBytes: options.recvBufferSize,
        forwardAcks: options.forwardAcks,
      },
      () => this.#drain(),
    );
  }

  /** Starts the receive thread. */
  start(): void {
    this.#udp.start();
  }

  /** The bound address, and the buffer sizes the kernel granted (bytes, as getsockopt says). */
  info(): { address: string; port: number; family: 4 | 6; sendBuffer: number; recvBuffer: number } {
    return this.#udp.info();
  }

  /**
   * From the next tick on, `world` applies this path's ACKs before each pass and sends its packets
   * after it, on the pool's threads. One world at a time; not while it ticks.
   * @throws ERR_SIGHTLINE_TICK_IN_PROGRESS, ERR_SIGHTLINE_WORLD_CLOSED.
   */
  attach(world: World): void {
    const engine = engineOf(world);
    if (engine.attachTransport === undefined) throw new SightlineError('ERR_SIGHTLINE_NET_UNAVAILABLE', 'this addon has no native data path');
    if (this.#world !== undefined && this.#world !== world) this.detach();
    engine.attachTransport(this.#udp);
    this.#world = world;
  }

  /** The world attached, if any. */
  get world(): World | undefined {
    return this.#world;
  }

  /** Detaches the world (it ticks on without this path). Not while it ticks; a closed world is let go. */
  detach(): void {
    const w = this.#world;
    this.#world = undefined;
    if (w === undefined || w.closed) return;
    engineOf(w).attachTransport?.(null);
  }

  /** A session for `viewer` at address:port whose messages carry `token` (8 bytes). */
  addSession(viewer: EntityId, address: string, port: number, token: Uint8Array): 'added' | 'full' | 'viewer' | 'peer' {
    return this.#udp.addSession(viewer, address, port, token);
  }

  /** Returns once no send to it is in progress: nothing goes to it afterwards. */
  removeSession(viewer: EntityId): boolean {
    return this.#closed ? false : this.#udp.removeSession(viewer);
  }

  /** Refreshes a session's time heard from and/or sent to. */
  touch(viewer: EntityId, heard: boolean, sent: boolean): boolean {
    return !this.#closed && this.#udp.touch(viewer, heard, sent);
  }

  /** Per session: its viewer, ms since it was last heard from, ms since it was last sent to (three numbers each). */
  times(): Float64Array {
    return this.#closed ? new Float64Array(0) : this.#udp.times();
  }

  /** The input acknowledgement (u16 ack, u16 ackBits) a viewer's game packets carry from now on. */
  setInputAck(viewer: EntityId, ack: number, ackBits: number): boolean {
    return !this.#closed && this.#udp.setInputAck(viewer, ack, ackBits);
  }

  /** One datagram (a control message): 0 when the kernel took it, else the errno. */
  sendTo(address: string, port: number, bytes: Uint8Array): number {
    return this.#closed ? ERRNO.EBADF : this.#udp.sendTo(address, port, bytes);
  }

  /** A game packet of the caller's own to a viewer's session: 0, ENOENT (none) or the errno. */
  sendOne(viewer: EntityId, bytes: Uint8Array): number {
    return this.#closed ? ERRNO.ENOENT : this.#udp.sendOne(viewer, bytes);
  }

  /**
   * A tick's packets from this thread (a result of a world not attached): one native call, the
   * packets in batches of sendmmsg. Packets of one buffer go from it; otherwise they are copied
   * into one first.
   */
  sendPackets(result: TickPackets): { sent: number; bytes: number; dropped: number; failed: number; unrouted: number } {
    const n = result.count;
    if (n === 0 || this.#closed) return { sent: 0, bytes: 0, dropped: 0, failed: 0, unrouted: this.#closed ? n : 0 };
    if (this.#index.length < 3 * n) this.#index = new Uint32Array(3 * n + 64);
    const ix = this.#index;
    const views: Uint8Array[] = new Array(n);
    let buffer: ArrayBufferLike | undefined;
    let shared = true;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const b = result.bytesAt(i);
      views[i] = b;
      ix[3 * i] = result.viewerAt(i);
      ix[3 * i + 1] = b.byteOffset;
      ix[3 * i + 2] = b.length;
      total += b.length;
      if (buffer === undefined) buffer = b.buffer;
      else if (b.buffer !== buffer) shared = false;
    }
    let base = buffer;
    if (!shared || !(base instanceof ArrayBuffer)) {
      const arena = new Uint8Array(total);
      let off = 0;
      for (let i = 0; i < n; i++) {
        arena.set(views[i], off);
        ix[3 * i + 1] = off;
        off += views[i].length;
      }
      base = arena.buffer;
    }
    const r = this.#udp.sendPackets(base as ArrayBuffer, ix, n);
    return { sent: r[0], bytes: r[1], dropped: r[2], failed: r[3], unrouted: r[4] };
  }

  /** Running totals. */
  counters(): NativeCounters {
    if (!this.#closed) this.#udp.counters(this.#counters);
    const out = {} as NativeCounters;
    NATIVE_COUNTER_FIELDS.forEach((f, i) => (out[f] = this.#counters[i]));
    return out;
  }

  /** What the last tick of the attached world did here (read after the tick ended). */
  lastTick(): NativeTickTransport {
    if (!this.#closed) this.#udp.lastTick(this.#tick);
    const out = {} as NativeTickTransport;
    NATIVE_TICK_FIELDS.forEach((f, i) => (out[f] = this.#tick[i]));
    return out;
  }

  /** A datagram sorted as if from address:port (tests: a forged source address). */
  inject(bytes: Uint8Array, address: string, port: number): void {
    this.#udp.inject(bytes, address, port);
    this.#drain();
  }

  /**
   * Detaches the world (unless it is ticking: then the tick in progress ends without sending, and
   * later ticks find the path closed), waits for a send in progress, joins the receive thread and
   * closes the socket. What was queued for JavaScript is delivered first. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#drain();
    this.#udp.counters(this.#counters);
    this.#udp.lastTick(this.#tick);
    try {
      this.detach();
    } catch {
      // a tick runs: the world keeps a closed path, which its ticks skip
    }
    this.#closed = true;
    this.#udp.close();
  }

  // The receive thread's batch: datagrams for the handshake and session ends, forwarded ACKs.
  #drain(): void {
    if (this.#closed) return;
    const ab = this.#udp.takeBatch();
    if (ab === null) return;
    const view = new DataView(ab);
    const bytes = new Uint8Array(ab);
    let at = 0;
    while (at + 8 <= ab.byteLength) {
      const kind = bytes[at];
      const addressLength = bytes[at + 1];
      const port = view.getUint16(at + 2, true);
      const length = view.getUint32(at + 4, true);
      const body = at + 8 + addressLength;
      try {
        if (kind === 0) {
          const address = latin1.decode(bytes.subarray(at + 8, body));
          this.#listener.onDatagram(Buffer.from(ab, body, length), address, port);
        } else if (kind === 1 && length === 10) {
          this.#listener.onAck(view.getUint32(body, true), view.getUint16(body + 4, true), view.getUint32(body + 6, true));
        }
      } catch (e) {
        this.#listener.onError(e);
      }
      at = body + length;
    }
  }
}
