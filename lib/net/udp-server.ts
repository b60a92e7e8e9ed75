// The UDP transport, server side: one socket for every client. The session protocol (handshake,
// token checks, acks, input, timeouts) is the SessionHost's; this file owns the socket, the
// per-client routing of a tick's packets and the bounded sends. Two data paths: the native one
// (Linux, the default where the addon has it: udp-native.ts) and node:dgram (here).
import dgram from 'node:dgram';
import { SightlineError, describe, isUint8Array } from '../errors.js';
import type { EntityId } from '../world.js';
import { ByeReason } from './control-types.js';
import { checkListenerOptions, intOption } from './options.js';
import { nativePathAvailable } from './native-path.js';
import { SERVER_CALLBACKS, SessionHost, type Endpoint } from './session-host.js';
import { sendOneVia, sendTickVia, type RouteHooks, type RouteScratch } from './tick-route.js';
import { checkPacketBytes, checkTickPackets, zeroSessionCounters, type TickPackets, type Transport } from './transport.js';
import { checkAddress, endpointKey, lookupLiteral } from './udp-common.js';
import { NATIVE_SEND_BUFFER_BYTES, NativeSocket } from './udp-native.js';
import { DEFAULT_RECV_BUFFER_BYTES, SERVER_OPTIONS, type UdpServerCounters, type UdpServerOptions } from './udp-options.js';

export type { ServerLayout } from './session-host.js';
export type { UdpServerOptions, UdpServerCounters } from './udp-options.js';

/**
 * UDP transport, server side.
 *
 * ```ts
 * const server = new UdpServer({
 *   config, world, port: 7777,
 *   onConnect: () => { const id = world.spawn(spawnPoint); world.addViewer(id, { acks: true }); return id; },
 *   onDisconnect: (id) => { world.removeViewer(id); world.despawn(id); },
 *   onInput: (id, bytes, kind) => game.input(id, bytes, kind),
 * });
 * await server.listen();
 * for (;;) { await sleepUntilNextTick(); server.sendTick(await world.tick()); }
 * ```
 *
 * The socket handler never throws: malformed, truncated or oversized datagrams are dropped and
 * counted, listener errors are counted and reported to `onError`. Sends never queue without
 * bound: see `maxInFlightSends` and `maxQueuedSends`.
 */
export class UdpServer implements Transport {
  readonly #host: SessionHost<Endpoint>;
  readonly #socket: dgram.Socket | undefined;
  readonly #native: NativeSocket | undefined;
  readonly #address: string;
  readonly #requestedPort: number;
  readonly #maxInFlight: number;
  readonly #maxQueued: number;
  readonly #recvBufferSize: number;
  readonly #sendBufferSize: number | undefined;
  readonly #counters: UdpServerCounters = {
    ...zeroSessionCounters(),
    controlSent: 0,
    controlDropped: 0,
    socketErrors: 0,
    receiveDropped: 0,
  };
  #inFlight = 0;
  #state: 'idle' | 'binding' | 'listening' | 'closing' | 'closed' = 'idle';
  #sweepTimer: ReturnType<typeof setInterval> | undefined;
  #abortListen: (() => void) | undefined;
  #port = 0;
  // Per-tick scratch and what sendTickVia asks of this adapter (dgram path).
  readonly #route: RouteScratch<Endpoint> = { sessions: [], views: [] };
  readonly #routeHooks: RouteHooks<Endpoint> = {
    canSend: () => this.#canSend(),
    issue: (copy, s) => this.#issue(copy, s.peer),
  };

  /**
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object; config without a protocol hash;
   *   onConnect or another listener not a function; an option out of range; an address that is
   *   neither an IP literal of the socket's family nor a host name, `''` included), ERR_SIGHTLINE_UNKNOWN_OPTION
   *   (a plain object with a key that is not an option; an instance of a class is not checked for them).
   */
  constructor(options: UdpServerOptions) {
    checkListenerOptions('UdpServer', options, SERVER_OPTIONS, SERVER_CALLBACKS);
    const type = options.type ?? 'udp4';
    if (type !== 'udp4' && type !== 'udp6') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `type must be 'udp4' or 'udp6', received ${describe(type)}`);
    }
    const dataPath = options.dataPath ?? (nativePathAvailable() ? 'native' : 'dgram');
    if (dataPath !== 'native' && dataPath !== 'dgram') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `dataPath must be 'native' or 'dgram', received ${describe(dataPath)}`);
    }
    if (dataPath === 'native' && !nativePathAvailable()) {
      throw new SightlineError('ERR_SIGHTLINE_NET_UNAVAILABLE', `dataPath 'native' needs Linux and an addon built with it; this is ${process.platform}: use 'dgram'`);
    }
    this.#address = options.address === undefined ? (type === 'udp6' ? '::' : '0.0.0.0') : checkAddress('address', options.address, type);
    this.#requestedPort = intOption('port', options.port, 0, 0, 65535);
    this.#maxInFlight = intOption('maxInFlightSends', options.maxInFlightSends, 65536, 1, 1 << 24);
    this.#maxQueued = intOption('maxQueuedSends', options.maxQueuedSends, 256, 1, 1 << 24);
    this.#recvBufferSize = intOption('recvBufferSize', options.recvBufferSize, DEFAULT_RECV_BUFFER_BYTES, 1, 2 ** 31 - 1);
    this.#sendBufferSize = options.sendBufferSize === undefined ? undefined : intOption('sendBufferSize', options.sendBufferSize, 0, 1, 2 ** 31 - 1);
    if (dataPath === 'native') {
      this.#native = new NativeSocket({
        address: this.#address,
        port: this.#requestedPort,
        type,
        maxClients: intOption('maxClients', options.maxClients, 4096, 1, 1 << 20),
        recvBufferSize: this.#recvBufferSize,
        sendBufferSize: this.#sendBufferSize ?? NATIVE_SEND_BUFFER_BYTES,
        listener: options,
        counters: this.#counters,
      });
      this.#host = new SessionHost('UdpServer', options, this.#counters, this.#sendControl, undefined, this.#native.hooks);
      this.#native.host = this.#host;
      return;
    }
    this.#host = new SessionHost('UdpServer', options, this.#counters, this.#sendControl);
    this.#socket = dgram.createSocket({ type, lookup: lookupLiteral });
    this.#socket.on('message', this.#onMessage);
    this.#socket.on('error', this.#onSocketError);
  }

  /** Whether this platform's addon has the native data path (Linux): the default `dataPath` then. */
  static get nativeDataPath(): boolean {
    return nativePathAvailable();
  }

  /** The data path in use: `'native'` or `'dgram'` (see {@link UdpServerOptions.dataPath}). */
  get dataPath(): 'native' | 'dgram' {
    return this.#native === undefined ? 'dgram' : 'native';
  }

  /**
   * Native path: what the attached World's last tick did here: packets sent, dropped (EAGAIN,
   * ENOBUFS), failed and unrouted; the send's and the ACKs' time on the pool, µs; ACKs applied,
   * refused as unused or invalid. Undefined on the dgram path or without a World.
   */
  get lastTick(): ReturnType<NativeSocket['lastTick']> {
    return this.#native?.lastTick();
  }

  /** The socket buffer sizes the kernel granted, bytes (getsockopt: Linux reports twice what it grants the payload), once listening on the native path. */
  get socketBuffers(): { send: number; recv: number } | undefined {
    return this.#native?.buffers;
  }

  /**
   * Binds the socket and starts the timeout sweep. Resolves with the bound address and port.
   * @throws ERR_SIGHTLINE_NET_STATE (already listening or closed), ERR_SIGHTLINE_NET_BIND (the OS refused the bind),
   *   ERR_SIGHTLINE_NET_CLOSED (close() was called before the bind completed).
   */
  listen(): Promise<{ address: string; port: number }> {
    if (this.#state !== 'idle') {
      return Promise.reject(new SightlineError('ERR_SIGHTLINE_NET_STATE', `listen() needs a new server, this one is ${this.#state}`));
    }
    this.#state = 'binding';
    if (this.#native !== undefined) return this.#listenNative(this.#native);
    const socket = this.#socket!;
    return new Promise((resolve, reject) => {
      const settle = () => {
        socket.off('error', onError);
        socket.off('listening', onListening);
        this.#abortListen = undefined;
      };
      // close() before the bind completed: listen() fails, and the socket is close()'s to close.
      this.#abortListen = () => {
        settle();
        reject(new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the server was closed before listen() had bound it'));
      };
      const onError = (e: Error) => {
        settle();
        this.#state = 'closed';
        try {
          socket.close();
        } catch {
          // already closed
        }
        reject(new SightlineError('ERR_SIGHTLINE_NET_BIND', `cannot bind UDP ${endpointKey(this.#address, this.#requestedPort)}: ${e.message}`));
      };
      const onListening = () => {
        settle();
        this.#state = 'listening';
        try {
          socket.setRecvBufferSize(this.#recvBufferSize);
        } catch (e) {
          this.#counters.socketErrors++; // the OS refused the size: it keeps its own
          this.#host.report(e);
        }
        if (this.#sendBufferSize !== undefined) socket.setSendBufferSize(this.#sendBufferSize);
        const a = socket.address();
        this.#port = a.port;
        this.#sweepTimer = setInterval(this.#sweep, this.#host.sweepPeriodMs);
        this.#sweepTimer.unref();
        resolve({ address: a.address, port: a.port });
      };
      socket.once('error', onError);
      socket.once('listening', onListening);
      socket.bind(this.#requestedPort, this.#address);
    });
  }

  async #listenNative(n: NativeSocket): Promise<{ address: string; port: number }> {
    let bound: { address: string; port: number };
    try {
      bound = await n.listen();
    } catch (e) {
      if (this.#state === 'binding') this.#state = 'closed';
      throw e;
    }
    // close() before the bind completed: listen() fails, and the path is closed now.
    if (this.#state !== 'binding') {
      n.close();
      throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the server was closed before listen() had bound it');
    }
    this.#state = 'listening';
    this.#port = bound.port;
    this.#sweepTimer = setInterval(this.#sweep, this.#host.sweepPeriodMs);
    this.#sweepTimer.unref();
    return bound;
  }

  /** The bound port (0 before `listen` resolves). */
  get port(): number {
    return this.#port;
  }

  /** Connected clients. */
  get clientCount(): number {
    return this.#host.byViewer.size;
  }

  /** Running totals (live object; on the native path its fields are brought up to date each time this is read). */
  get counters(): Readonly<UdpServerCounters> {
    return this.#native?.counters() ?? this.#counters;
  }

  /**
   * Malformed datagrams by the decoder's error code (live object; `ERR_SIGHTLINE_NET_WRONG_DIRECTION` for a WELCOME, REFUSE, CHALLENGE or
   * game packet sent to the server). On the native path, datagrams longer than any client message are counted before they reach
   * JavaScript, under the code the decoder gives them (the object is a copy then).
   */
  get malformedCodes(): Readonly<Record<string, number>> {
    const codes = this.#host.malformedCodes;
    const long = this.#native?.longCodes();
    if (long === undefined || Object.keys(long).length === 0) return codes;
    const merged: Record<string, number> = { ...codes };
    for (const [code, k] of Object.entries(long)) merged[code] = (merged[code] ?? 0) + k;
    return merged;
  }

  /** Sends issued whose completion has not been reported yet. */
  get inFlightSends(): number {
    return this.#inFlight;
  }

  /** Whether a client is connected for this viewer. */
  has(viewer: EntityId): boolean {
    return this.#host.byViewer.has(viewer);
  }

  /** The client key (`address:port`) of a viewer's client, or undefined. */
  clientKeyOf(viewer: EntityId): string | undefined {
    return this.#host.byViewer.get(viewer)?.key;
  }

  /** Viewers with a connected client. */
  viewers(): IterableIterator<EntityId> {
    return this.#host.byViewer.keys();
  }

  /**
   * Sends each packet of a tick to its viewer's client. The tick's bytes are copied into one
   * buffer (the engine reuses its own two ticks later; a queued send may outlive that), and each
   * copy's header bytes 8..11 get the session's input acknowledgement. Viewers without a client
   * are skipped (`packetsUnrouted`); packets beyond the send caps are dropped (`packetsDropped`).
   * Returns the number of packets issued. Never throws for I/O reasons.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (result not a TickResult), the result's own errors
   *   (ERR_SIGHTLINE_RESULT_EXPIRED); nothing is sent then.
   */
  sendTick(result: TickPackets): number {
    checkTickPackets(result);
    const c = this.#counters;
    const n = result.count;
    if (this.#state !== 'listening') {
      c.packetsUnrouted += n;
      return 0;
    }
    if (this.#native !== undefined) return this.#native.sendTick(result);
    return sendTickVia(this.#host, result, this.#route, this.#routeHooks);
  }

  /**
   * Sends one game packet (copied; the copy's header bytes 8..11 get the input acknowledgement)
   * to a viewer's client. Returns false when not issued: no client (`packetsUnrouted`) or the send
   * caps (`packetsDropped`).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT when bytes is not a Uint8Array holding a packet: 16 to
   *   65,507 bytes, version byte first (2: docs/wire-format.md).
   */
  send(viewer: EntityId, bytes: Uint8Array): boolean {
    checkPacketBytes(bytes);
    if (this.#native !== undefined) {
      if (this.#state === 'listening') return this.#native.send(viewer, bytes);
      this.#counters.packetsUnrouted++;
      return false;
    }
    return sendOneVia(this.#host, viewer, bytes, this.#state === 'listening', this.#routeHooks);
  }

  /** Ends a viewer's session: sends BYE (KICKED), then `onDisconnect(viewer, 'kicked')`. False when none. */
  disconnect(viewer: EntityId): boolean {
    const s = this.#host.byViewer.get(viewer);
    if (s === undefined) return false;
    this.#host.end(s, 'kicked', ByeReason.KICKED);
    return true;
  }

  /**
   * Sends BYE (SHUTDOWN) to every client, reports each as `onDisconnect(viewer, 'closed')`, stops
   * the sweep and closes the socket. Idempotent.
   */
  close(): Promise<void> {
    if (this.#state === 'closed' || this.#state === 'closing') return Promise.resolve();
    const wasOpen = this.#state === 'listening';
    this.#state = 'closing';
    this.#abortListen?.();
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
    this.#host.endAll('closed', wasOpen ? ByeReason.SHUTDOWN : undefined);
    const socket = this.#socket;
    if (socket === undefined) {
      this.#native?.close();
      this.#state = 'closed';
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      try {
        socket.close(() => {
          this.#state = 'closed';
          resolve();
        });
      } catch {
        this.#state = 'closed';
        resolve();
      }
    });
  }

  // ---------------------------------------------------------------------------------------------

  #canSend(): boolean {
    return this.#inFlight < this.#maxInFlight && (this.#inFlight === 0 || this.#socket!.getSendQueueCount() < this.#maxQueued);
  }

  #issue(bytes: Uint8Array, to: Endpoint): void {
    this.#inFlight++;
    try {
      this.#socket!.send(bytes, to.port, to.address, this.#afterSend);
    } catch (e) {
      this.#inFlight--;
      this.#counters.sendErrors++;
      this.#host.report(e);
    }
  }

  readonly #afterSend = (err: Error | null): void => {
    this.#inFlight--;
    if (err) this.#counters.sendErrors++;
  };

  readonly #sendControl = (bytes: Uint8Array, to: Endpoint): void => {
    if (this.#state !== 'listening' && this.#state !== 'closing') return;
    if (this.#native !== undefined) {
      this.#native.sendControl(bytes, to);
      return;
    }
    if (!this.#canSend()) {
      this.#counters.controlDropped++;
      return;
    }
    this.#issue(bytes, to);
    this.#counters.controlSent++;
  };

  readonly #onSocketError = (e: Error): void => {
    this.#counters.socketErrors++;
    this.#host.report(e);
  };

  readonly #onMessage = (msg: Buffer, rinfo: dgram.RemoteInfo): void => {
    const c = this.#counters;
    c.datagramsReceived++;
    c.bytesReceived += msg.length;
    if (this.#state !== 'listening') return;
    try {
      this.#host.handle(msg, endpointKey(rinfo.address, rinfo.port), rinfo);
    } catch (e) {
      // Only a defect lands here; the handler must not throw into the socket.
      c.listenerErrors++;
      this.#host.report(e);
    }
  };

  /**
   * Handles a datagram as if the socket had received it from `address:port`: what a receive path
   * of its own (or a test forging a sender) hands the server. Counted as received. Never throws
   * for what the bytes hold.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (msg not a Uint8Array, address not a string, port not 0 to 65535).
   */
  handleDatagram(msg: Uint8Array, address: string, port: number): void {
    if (!isUint8Array(msg)) throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `msg must be a Uint8Array, received ${describe(msg)}`);
    if (typeof address !== 'string') throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `address must be a string, received ${describe(address)}`);
    intOption('port', port, 0, 0, 65535);
    if (this.#native !== undefined) {
      if (this.#state === 'listening') this.#native.inject(msg, address, port);
      return;
    }
    this.#onMessage(Buffer.from(msg), { address, port, family: address.includes(':') ? 'IPv6' : 'IPv4', size: msg.length });
  }

  readonly #sweep = (): void => {
    if (this.#native !== undefined) this.#native.sweep();
    else this.#host.sweep();
  };
}
