// UdpServer's native data path (Linux; docs/transport.md, "Native data path"): the socket, the
// sends and the receive thread are the addon's (NativePath). The World given as `world` takes the
// path's ACKs before each pass and sends its packets from the pool after it; the SessionHost keeps
// the handshake, BYE and input, which the receive thread hands over in batches, and its sessions
// are copied into the path as they begin and end (SessionHooks).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { SightlineError } from '../errors.js';
import { TickResult, sourceOf } from '../tick-result.js';
import { World, congestionObserverOf } from '../world.js';
import type { EntityId } from '../world-types.js';
import { ERRNO, NativePath, type NativeCounters } from './native-path.js';
import { nowMs } from './options.js';
import type { Endpoint, Session, SessionHooks, SessionHost, SessionServerOptions } from './session-host.js';
import type { TickPackets } from './transport.js';
import { endpointKey } from './udp-common.js';
import type { UdpServerCounters } from './udp-options.js';

export interface NativeSocketOptions {
  address: string;
  port: number;
  type: 'udp4' | 'udp6';
  maxClients: number;
  recvBufferSize: number;
  sendBufferSize: number;
  listener: SessionServerOptions;
  /** The JavaScript side's counts (the host's and the socket's); the path's are added when read. */
  counters: UdpServerCounters;
}

/** The send buffer the native path asks for unless told otherwise: a tick's burst of packets leaves at once. */
export const NATIVE_SEND_BUFFER_BYTES = 4 << 20;

/** @internal UdpServer's socket on the native data path. */
export class NativeSocket {
  readonly #o: NativeSocketOptions;
  #host: SessionHost<Endpoint> | undefined;
  #path: NativePath | undefined;
  #world: World | undefined;
  // Whether the ACKs go to JavaScript: an onAck listener, a world that is not a World, or a
  // World's congestion control (it times each acknowledgement as it reaches JavaScript).
  #forwardAcks = false;
  #observe: ((viewer: EntityId, ack: number, ackBits: number) => void) | undefined;
  #sentTick = -1;
  #buffers: { send: number; recv: number } | undefined;
  // Datagrams of the path's batches taken in here, and their bytes: the path counts them as
  // received when its thread reads them, this side once it has handled them.
  #taken = 0;
  #takenBytes = 0;
  readonly #view: UdpServerCounters;

  constructor(options: NativeSocketOptions) {
    this.#o = options;
    this.#view = { ...options.counters };
  }

  /** The host the batch's datagrams go to (set once, before listen). */
  set host(h: SessionHost<Endpoint>) {
    this.#host = h;
  }

  /** The sessions' copies in the path. */
  readonly hooks: SessionHooks<Endpoint> = {
    opened: (s: Session<Endpoint>) => {
      const r = this.#path?.addSession(s.viewer, s.peer.address, s.peer.port, s.token.bytes);
      if (r !== undefined && r !== 'added') this.#host?.report(new SightlineError('ERR_SIGHTLINE_INTERNAL', `the native data path refused session ${s.key}: ${r}`));
    },
    closed: (s: Session<Endpoint>) => {
      this.#path?.removeSession(s.viewer);
    },
    inputAcked: (s: Session<Endpoint>) => {
      this.#path?.setInputAck(s.viewer, s.input.ack, s.input.ackBits);
    },
  };

  /**
   * Opens the path on the address (a name is resolved first) and attaches the World.
   * @throws ERR_SIGHTLINE_NET_BIND (the kernel refused; the name did not resolve).
   */
  async listen(): Promise<{ address: string; port: number }> {
    const { type } = this.#o;
    // The SessionHost checked the world: a World, or an object with acknowledge().
    const w: unknown = this.#o.listener.world;
    if (w instanceof World) {
      this.#world = w;
      this.#observe = congestionObserverOf(w);
    }
    this.#forwardAcks = this.#o.listener.onAck !== undefined || (w !== undefined && this.#world === undefined) || this.#observe !== undefined;
    let address = this.#o.address;
    if (isIP(address) === 0) {
      try {
        address = (await lookup(address, { family: type === 'udp6' ? 6 : 4 })).address;
      } catch (e) {
        throw new SightlineError('ERR_SIGHTLINE_NET_BIND', `cannot bind UDP ${endpointKey(this.#o.address, this.#o.port)}: ${(e as Error).message}`);
      }
    }
    const path = new NativePath(
      {
        address,
        port: this.#o.port,
        type,
        maxSessions: this.#o.maxClients,
        sendBufferSize: this.#o.sendBufferSize,
        recvBufferSize: this.#o.recvBufferSize,
        // Acks reach JavaScript only when someone there takes them.
        forwardAcks: this.#forwardAcks,
      },
      { onDatagram: this.#onDatagram, onAck: this.#onAck, onError: (e) => this.#host?.report(e) },
    );
    this.#path = path;
    if (this.#world !== undefined) path.attach(this.#world);
    path.start();
    const i = path.info();
    this.#buffers = { send: i.sendBuffer, recv: i.recvBuffer };
    return { address: i.address, port: i.port };
  }

  /** The buffer sizes the kernel granted, bytes (as getsockopt reports them: Linux doubles the request); kept after close. */
  get buffers(): { send: number; recv: number } | undefined {
    return this.#buffers;
  }

  /** What the attached World's last tick sent and how long it took (µs), or undefined. */
  lastTick(): ReturnType<NativePath['lastTick']> | undefined {
    return this.#path?.world === undefined ? undefined : this.#path.lastTick();
  }

  sendControl(bytes: Uint8Array, to: Endpoint): void {
    const c = this.#o.counters;
    const r = this.#path === undefined ? ERRNO.EBADF : this.#path.sendTo(to.address, to.port, bytes);
    if (r === 0) c.controlSent++;
    else if (r === ERRNO.EAGAIN || r === ERRNO.ENOBUFS) c.controlDropped++;
    else c.sendErrors++;
  }

  /**
   * The attached World's ticks send their own packets (on the pool, after the pass): for such a
   * result this returns what was sent. Any other result is sent now from this thread.
   */
  sendTick(result: TickPackets): number {
    const path = this.#path;
    if (path === undefined) {
      this.#o.counters.packetsUnrouted += result.count;
      return 0;
    }
    if (this.#world !== undefined && result instanceof TickResult && sourceOf(result) === this.#world && path.world === this.#world) {
      const t = path.lastTick();
      if (t.tick === result.tick && this.#sentTick !== result.tick) {
        this.#sentTick = result.tick;
        return t.sent;
      }
    }
    return path.sendPackets(result).sent;
  }

  send(viewer: EntityId, bytes: Uint8Array): boolean {
    if (this.#path === undefined) {
      this.#o.counters.packetsUnrouted++;
      return false;
    }
    return this.#path.sendOne(viewer, bytes) === 0;
  }

  /** A datagram as if from address:port, sorted by the native receive path. */
  inject(msg: Uint8Array, address: string, port: number): void {
    this.#path?.inject(msg, address, port);
  }

  /** Timeouts and keepalives: the sessions' times as the native threads saw them, then the host's sweep. */
  sweep(): void {
    const host = this.#host;
    const path = this.#path;
    if (host === undefined || path === undefined) return;
    const now = nowMs();
    const t = path.times();
    for (let i = 0; i < t.length; i += 3) {
      const s = host.byViewer.get(t[i]);
      if (s === undefined) continue;
      s.heardAt = Math.max(s.heardAt, now - t[i + 1]);
      s.sentAt = Math.max(s.sentAt, now - t[i + 2]);
    }
    host.sweep(now);
  }

  /** The JavaScript side's counts with the path's added. */
  counters(): UdpServerCounters {
    const v = Object.assign(this.#view, this.#o.counters);
    if (this.#path === undefined) return v;
    const n: NativeCounters = this.#path.counters();
    v.packetsSent += n.packetsSent;
    v.bytesSent += n.bytesSent;
    v.packetsDropped += n.packetsDropped;
    v.packetsUnrouted += n.packetsUnrouted;
    v.sendErrors += n.sendErrors;
    // Received: what the path handled itself, and of what it handed over what was handled here (so
    // that a datagram counted as received has had its effect on the other counters).
    v.datagramsReceived += n.datagramsReceived - n.forwarded + this.#taken;
    v.bytesReceived += n.bytesReceived - n.forwardedBytes + this.#takenBytes;
    v.malformed += n.malformed;
    v.strays += n.strays;
    v.badTokens += n.badTokens;
    v.badAcks += n.badAcks + n.acksInvalid;
    v.acks += n.acks;
    v.acksUnused += n.acksUnused;
    v.acksThrottled += n.acksThrottled;
    v.socketErrors += n.socketErrors;
    v.receiveDropped += n.batchDropped;
    return v;
  }

  /**
   * Datagrams found malformed before they reached JavaScript (longer than any client message), by
   * the decoder's code for them: `SessionHost.malformedCodes` counts the rest.
   */
  longCodes(): Record<string, number> {
    const n = this.#path?.counters();
    if (n === undefined) return {};
    const out: Record<string, number> = {};
    const add = (code: string, k: number): void => {
      if (k > 0) out[code] = k;
    };
    add('ERR_SIGHTLINE_NET_WRONG_DIRECTION', n.longWrongDirection);
    add('ERR_SIGHTLINE_NET_BAD_MAGIC', n.longBadMagic);
    add('ERR_SIGHTLINE_NET_MALFORMED', n.longMalformed);
    add('ERR_SIGHTLINE_NET_OVERSIZED', n.longOversized);
    add('ERR_SIGHTLINE_NET_UNKNOWN_TYPE', n.longUnknownType);
    return out;
  }

  /** Detaches the World and closes the path (joins its receive thread). */
  close(): void {
    const path = this.#path;
    if (path === undefined) return;
    path.close(); // hands over what was still waiting for JavaScript first
    const final = { ...this.counters() };
    this.#path = undefined;
    Object.assign(this.#o.counters, final);
  }

  readonly #onDatagram = (bytes: Uint8Array, address: string, port: number): void => {
    const host = this.#host;
    this.#taken++;
    this.#takenBytes += bytes.length;
    if (host === undefined) return;
    try {
      host.handle(bytes, endpointKey(address, port), { address, port });
    } catch (e) {
      this.#o.counters.listenerErrors++;
      host.report(e);
    }
  };

  // An ACK the path passed on, for JavaScript: the onAck listener, and a `world` that is not a
  // World (whose acknowledge the path cannot call itself; a World has taken it natively).
  readonly #onAck = (viewer: EntityId, ack: number, ackBits: number): void => {
    this.#host?.passOn(viewer, ack, ackBits, this.#world === undefined);
    this.#observe?.(viewer, ack, ackBits);
  };
}
