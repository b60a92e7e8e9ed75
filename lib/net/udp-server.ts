// The UDP transport, server side: one node:dgram socket for every client. Handshake, per-client
// routing of a tick's packets, acks to the game and the engine, timeouts, bounded sends.
import dgram from 'node:dgram';
import { HEADER_BYTES, MAX_PAYLOAD_BYTES, PROTOCOL_VERSION } from '../config.js';
import type { WorldConfig } from '../config.js';
import { SightlineError, describe, isUint8Array } from '../errors.js';
import type { EntityId } from '../world.js';
import {
  ByeReason,
  MAX_CONTROL_BYTES,
  MSG_ACK,
  MSG_BYE,
  MSG_HELLO,
  MSG_PING,
  RefuseCode,
  tryDecodeControl,
  encodeBye,
  encodePing,
  encodeRefuse,
  encodeWelcome,
  hex32,
  type ControlMessage,
  type HelloMessage,
} from './protocol.js';
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
import { checkListenerOptions, endpointKey, intOption, lookupLiteral, nowMs } from './udp-common.js';

/** The configuration fields the server announces in WELCOME. A {@link WorldConfig} qualifies. */
export type ServerLayout = Pick<WorldConfig, 'protocolHash' | 'regionRaw' | 'verticalRaw' | 'quantShift' | 'payloadBytes'> & {
  readonly input?: { readonly tickHz?: number };
};

export interface UdpServerOptions extends TransportListener {
  /** The world's configuration: its protocol hash gates the handshake, its layout goes in WELCOME. */
  config: ServerLayout;
  /**
   * The World (or any object with `acknowledge(viewer, ack, ackBits)`): every accepted ACK is passed
   * to its `acknowledge` (after `onAck`). Without it, acks reach `onAck` only. An object without an
   * `acknowledge` method, or whose `config.protocolHash` differs from `config`'s, is refused.
   */
  world?: { acknowledge(viewer: EntityId, ack: number, ackBits: number): unknown; readonly config?: { readonly protocolHash?: number } };
  /** Address to bind. Default `'0.0.0.0'` (`'::'` for udp6). */
  address?: string;
  /** Port to bind; 0 picks a free one (see {@link UdpServer.port}). Default 0. */
  port?: number;
  /** Socket family. Default `'udp4'`. */
  type?: 'udp4' | 'udp6';
  /** Most connected clients; a HELLO beyond it is refused (SERVER_FULL). Default 4096. */
  maxClients?: number;
  /** A client heard from for no longer than this is disconnected ('timeout'), ms. Default 5000. */
  timeoutMs?: number;
  /** A client sent nothing for this long gets a PING, ms; 0 disables. Default 1000. */
  keepaliveMs?: number;
  /**
   * Sends issued whose completion callback has not run yet, at most. A send beyond it is dropped
   * and counted. Also the most packets one `sendTick` can issue. Default 65536.
   */
  maxInFlightSends?: number;
  /**
   * Sends waiting in the socket's queue (the kernel buffer was full), at most. While the queue
   * holds this many, sends are dropped and counted. Default 256.
   */
  maxQueuedSends?: number;
  /**
   * SO_RCVBUF, bytes (the OS may cap or double it; on Linux the cap is net.core.rmem_max).
   * Default 4 MiB. Every client's ACK arrives in the same few milliseconds after a tick's packets:
   * with the usual OS default (about 208 KiB, some 250 small datagrams) a burst from more clients
   * overflows it, and the kernel drops the excess without telling anyone.
   */
  recvBufferSize?: number;
  /** SO_SNDBUF, bytes (the OS may cap or double it). Default: the OS default. */
  sendBufferSize?: number;
}

/** Counters of a {@link UdpServer}. */
export interface UdpServerCounters extends TransportCounters {
  /** Control datagrams sent (WELCOME, REFUSE, BYE, PING). */
  controlSent: number;
  /** Control datagrams not sent: the send cap was reached. */
  controlDropped: number;
  /** Errors the socket emitted. */
  socketErrors: number;
  /** Acks dropped because the client sent more acks than it was sent packets (see docs/transport.md). */
  acksThrottled: number;
}

// Ack credit: each packet sent earns a client this many acks, up to ACK_CREDIT_MAX.
/** The receive buffer a server asks for unless told otherwise (see UdpServerOptions.recvBufferSize). */
const DEFAULT_RECV_BUFFER_BYTES = 4 << 20;
const SERVER_OPTIONS: readonly (keyof UdpServerOptions)[] = [
  'config', 'world', 'address', 'port', 'type', 'maxClients', 'timeoutMs', 'keepaliveMs', 'maxInFlightSends',
  'maxQueuedSends', 'recvBufferSize', 'sendBufferSize', 'onConnect', 'onDisconnect', 'onAck', 'onError',
];
const ACK_CREDIT_PER_PACKET = 2;
const ACK_CREDIT_MAX = 64;
const ACK_CREDIT_START = 8;

interface Session {
  readonly key: string;
  readonly address: string;
  readonly port: number;
  readonly viewer: EntityId;
  readonly nonce: number;
  readonly welcome: Uint8Array;
  heardAt: number;
  sentAt: number;
  /** Sequence (u16) of the newest game packet sent; -1 before the first. */
  lastSequence: number;
  /** Acks this client may still have passed on. */
  ackCredit: number;
}

/**
 * UDP transport, server side.
 *
 * ```ts
 * const server = new UdpServer({
 *   config, world, port: 7777,
 *   onConnect: () => { const id = world.spawn(spawnPoint); world.addViewer(id, { acks: true }); return id; },
 *   onDisconnect: (id) => { world.removeViewer(id); world.despawn(id); },
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
  readonly #listener: TransportListener;
  readonly #config: ServerLayout;
  readonly #acknowledge: AcknowledgeFn | undefined;
  readonly #socket: dgram.Socket;
  readonly #address: string;
  readonly #requestedPort: number;
  readonly #maxClients: number;
  readonly #timeoutMs: number;
  readonly #keepaliveMs: number;
  readonly #maxInFlight: number;
  readonly #maxQueued: number;
  readonly #recvBufferSize: number;
  readonly #sendBufferSize: number | undefined;
  readonly #tickMicros: number;
  readonly #counters: UdpServerCounters = {
    ...zeroCounters(),
    controlSent: 0,
    controlDropped: 0,
    socketErrors: 0,
    acksThrottled: 0,
  };
  readonly #byKey = new Map<string, Session>();
  readonly #byViewer = new Map<EntityId, Session>();
  #inFlight = 0;
  #state: 'idle' | 'binding' | 'listening' | 'closing' | 'closed' = 'idle';
  #sweepTimer: ReturnType<typeof setInterval> | undefined;
  #abortListen: (() => void) | undefined;
  #port = 0;
  // Per-tick scratch: the routed packets of the tick being sent.
  readonly #routeSessions: Session[] = [];
  readonly #routeBytes: Uint8Array[] = [];

  /**
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (config without a protocol hash, onConnect or another
   *   listener not a function, an option out of range), ERR_SIGHTLINE_UNKNOWN_OPTION (a plain
   *   object with a key that is not an option; see checkListenerOptions).
   */
  constructor(options: UdpServerOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `options must be an object, received ${describe(options)}`);
    }
    const { config } = options;
    if (typeof config !== 'object' || config === null || typeof config.protocolHash !== 'number') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `config must be a WorldConfig, received ${describe(config)}`);
    }
    if (typeof options.onConnect !== 'function') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `onConnect must be a function, received ${describe(options.onConnect)}`);
    }
    checkListenerOptions('UdpServer', options, SERVER_OPTIONS, ['onConnect', 'onDisconnect', 'onAck', 'onError']);
    const type = options.type ?? 'udp4';
    if (type !== 'udp4' && type !== 'udp6') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `type must be 'udp4' or 'udp6', received ${describe(type)}`);
    }
    this.#listener = options;
    this.#config = config;
    const world: unknown = options.world;
    if (world !== undefined) {
      if (typeof world !== 'object' || world === null || typeof (world as { acknowledge?: unknown }).acknowledge !== 'function') {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `world must be a World (an object with acknowledge(viewer, ack, ackBits)), received ${describe(world)}`);
      }
      const hash = (world as { config?: { protocolHash?: unknown } }).config?.protocolHash;
      if (hash !== undefined && hash !== config.protocolHash) {
        throw new SightlineError(
          'ERR_SIGHTLINE_INVALID_ARGUMENT',
          `world's config (protocol hash ${describe(hash)}) is not config (protocol hash ${config.protocolHash}): pass world.config`,
        );
      }
    }
    this.#acknowledge = acknowledgeOf(options.world);
    this.#address = options.address ?? (type === 'udp6' ? '::' : '0.0.0.0');
    this.#requestedPort = intOption('port', options.port, 0, 0, 65535);
    this.#maxClients = intOption('maxClients', options.maxClients, 4096, 1, 1 << 20);
    this.#timeoutMs = intOption('timeoutMs', options.timeoutMs, 5000, 1, 3_600_000);
    this.#keepaliveMs = intOption('keepaliveMs', options.keepaliveMs, 1000, 0, 3_600_000);
    this.#maxInFlight = intOption('maxInFlightSends', options.maxInFlightSends, 65536, 1, 1 << 24);
    this.#maxQueued = intOption('maxQueuedSends', options.maxQueuedSends, 256, 1, 1 << 24);
    this.#recvBufferSize = intOption('recvBufferSize', options.recvBufferSize, DEFAULT_RECV_BUFFER_BYTES, 1, 2 ** 31 - 1);
    this.#sendBufferSize = options.sendBufferSize === undefined ? undefined : intOption('sendBufferSize', options.sendBufferSize, 0, 1, 2 ** 31 - 1);
    const tickHz = config.input?.tickHz;
    this.#tickMicros = typeof tickHz === 'number' && tickHz > 0 ? Math.min(0xffffffff, Math.round(1e6 / tickHz)) : 0;
    this.#socket = dgram.createSocket({ type, lookup: lookupLiteral });
    this.#socket.on('message', this.#onMessage);
    this.#socket.on('error', this.#onSocketError);
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
    return new Promise((resolve, reject) => {
      const settle = () => {
        this.#socket.off('error', onError);
        this.#socket.off('listening', onListening);
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
          this.#socket.close();
        } catch {
          // already closed
        }
        reject(new SightlineError('ERR_SIGHTLINE_NET_BIND', `cannot bind UDP ${endpointKey(this.#address, this.#requestedPort)}: ${e.message}`));
      };
      const onListening = () => {
        settle();
        this.#state = 'listening';
        try {
          this.#socket.setRecvBufferSize(this.#recvBufferSize);
        } catch (e) {
          this.#counters.socketErrors++;  // the OS refused the size: it keeps its own
          this.#report(e);
        }
        if (this.#sendBufferSize !== undefined) this.#socket.setSendBufferSize(this.#sendBufferSize);
        const a = this.#socket.address();
        this.#port = a.port;
        const period = Math.max(10, Math.floor(Math.min(this.#timeoutMs, this.#keepaliveMs || this.#timeoutMs) / 4));
        this.#sweepTimer = setInterval(this.#sweep, period);
        this.#sweepTimer.unref();
        resolve({ address: a.address, port: a.port });
      };
      this.#socket.once('error', onError);
      this.#socket.once('listening', onListening);
      this.#socket.bind(this.#requestedPort, this.#address);
    });
  }

  /** The bound port (0 before `listen` resolves). */
  get port(): number {
    return this.#port;
  }

  /** Connected clients. */
  get clientCount(): number {
    return this.#byViewer.size;
  }

  /** Running totals (live object). */
  get counters(): Readonly<UdpServerCounters> {
    return this.#counters;
  }

  /** Sends issued whose completion has not been reported yet. */
  get inFlightSends(): number {
    return this.#inFlight;
  }

  /** Whether a client is connected for this viewer. */
  has(viewer: EntityId): boolean {
    return this.#byViewer.has(viewer);
  }

  /** The client key (`address:port`) of a viewer's client, or undefined. */
  clientKeyOf(viewer: EntityId): string | undefined {
    return this.#byViewer.get(viewer)?.key;
  }

  /** Viewers with a connected client. */
  viewers(): IterableIterator<EntityId> {
    return this.#byViewer.keys();
  }

  /**
   * Sends each packet of a tick to its viewer's client. The tick's bytes are copied into one
   * buffer (the engine reuses its own two ticks later; a queued send may outlive that). Viewers
   * without a client are skipped (`packetsUnrouted`); packets beyond the send caps are dropped
   * (`packetsDropped`). Returns the number of packets issued. Never throws for I/O reasons.
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
    const sessions = this.#routeSessions;
    const views = this.#routeBytes;
    let total = 0;
    let unrouted = 0;
    try {
      for (let i = 0; i < n; i++) {
        const s = this.#byViewer.get(result.viewerAt(i));
        if (s === undefined) {
          unrouted++;
          continue;
        }
        const b = result.bytesAt(i);
        sessions.push(s);
        views.push(b);
        total += b.length;
      }
    } catch (e) {
      sessions.length = 0;
      views.length = 0;
      throw e;
    }
    c.packetsUnrouted += unrouted;
    const m = sessions.length;
    let issued = 0;
    if (m > 0) {
      const arena = Buffer.allocUnsafeSlow(total);
      const now = nowMs();
      let off = 0;
      for (let j = 0; j < m; j++) {
        if (!this.#canSend()) {
          c.packetsDropped += m - j;
          break;
        }
        const s = sessions[j];
        const b = views[j];
        const len = b.length;
        arena.set(b, off);
        this.#issue(arena.subarray(off, off + len), s);
        off += len;
        if (len >= 4) s.lastSequence = b[2] | (b[3] << 8);
        s.sentAt = now;
        s.ackCredit = Math.min(ACK_CREDIT_MAX, s.ackCredit + ACK_CREDIT_PER_PACKET);
        c.packetsSent++;
        c.bytesSent += len;
        issued++;
      }
    }
    sessions.length = 0;
    views.length = 0;
    return issued;
  }

  /**
   * Sends one game packet (copied) to a viewer's client.
   * Returns false when not issued: no client (`packetsUnrouted`) or the send caps (`packetsDropped`).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT when bytes is not a Uint8Array holding a packet: 16 to
   *   65,507 bytes, version byte 1 (docs/wire-format.md).
   */
  send(viewer: EntityId, bytes: Uint8Array): boolean {
    if (!isUint8Array(bytes) || bytes.length < HEADER_BYTES || bytes.length > MAX_PAYLOAD_BYTES || bytes[0] !== PROTOCOL_VERSION) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `bytes must be a packet: a Uint8Array of ${HEADER_BYTES} to ${MAX_PAYLOAD_BYTES} bytes starting with version ${PROTOCOL_VERSION}, received ${describe(bytes)}` +
          (isUint8Array(bytes) ? ` (${bytes.length} bytes, version byte ${bytes[0]})` : ''),
      );
    }
    const c = this.#counters;
    const s = this.#state === 'listening' ? this.#byViewer.get(viewer) : undefined;
    if (s === undefined) {
      c.packetsUnrouted++;
      return false;
    }
    if (!this.#canSend()) {
      c.packetsDropped++;
      return false;
    }
    const copy = Buffer.from(bytes);
    this.#issue(copy, s);
    if (copy.length >= 4) s.lastSequence = copy[2] | (copy[3] << 8);
    s.sentAt = nowMs();
    s.ackCredit = Math.min(ACK_CREDIT_MAX, s.ackCredit + ACK_CREDIT_PER_PACKET);
    c.packetsSent++;
    c.bytesSent += copy.length;
    return true;
  }

  /** Ends a viewer's session: sends BYE (KICKED), then `onDisconnect(viewer, 'kicked')`. False when none. */
  disconnect(viewer: EntityId): boolean {
    const s = this.#byViewer.get(viewer);
    if (s === undefined) return false;
    this.#end(s, 'kicked', ByeReason.KICKED);
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
    for (const s of [...this.#byViewer.values()]) this.#end(s, 'closed', wasOpen ? ByeReason.SHUTDOWN : undefined);
    return new Promise((resolve) => {
      try {
        this.#socket.close(() => {
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
    return this.#inFlight < this.#maxInFlight && (this.#inFlight === 0 || this.#socket.getSendQueueCount() < this.#maxQueued);
  }

  #issue(bytes: Uint8Array, s: { port: number; address: string }): void {
    this.#inFlight++;
    try {
      this.#socket.send(bytes, s.port, s.address, this.#afterSend);
    } catch (e) {
      this.#inFlight--;
      this.#counters.sendErrors++;
      this.#report(e);
    }
  }

  readonly #afterSend = (err: Error | null): void => {
    this.#inFlight--;
    if (err) this.#counters.sendErrors++;
  };

  #sendControl(bytes: Uint8Array, s: { port: number; address: string }): void {
    if (!this.#canSend()) {
      this.#counters.controlDropped++;
      return;
    }
    this.#issue(bytes, s);
    this.#counters.controlSent++;
  }

  readonly #onSocketError = (e: Error): void => {
    this.#counters.socketErrors++;
    this.#report(e);
  };

  #report(e: unknown): void {
    const fn = this.#listener.onError;
    if (fn === undefined) return;
    try {
      fn.call(this.#listener, e);
    } catch {
      // onError itself failed: nothing further to tell
    }
  }

  readonly #onMessage = (msg: Buffer, rinfo: dgram.RemoteInfo): void => {
    const c = this.#counters;
    c.datagramsReceived++;
    c.bytesReceived += msg.length;
    if (this.#state !== 'listening') return;
    try {
      this.#handle(msg, rinfo);
    } catch (e) {
      // Only a defect lands here; the handler must not throw into the socket.
      c.listenerErrors++;
      this.#report(e);
    }
  };

  #handle(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const c = this.#counters;
    if (msg.length === 0 || msg.length > MAX_CONTROL_BYTES) {
      c.malformed++;
      return;
    }
    const m = tryDecodeControl(msg);
    if (m === undefined) {
      c.malformed++;
      return;
    }
    const key = endpointKey(rinfo.address, rinfo.port);
    const s = this.#byKey.get(key);
    switch (m.type) {
      case MSG_HELLO:
        this.#hello(m, key, rinfo, s);
        return;
      case MSG_ACK: {
        if (s === undefined) {
          c.strays++;
          return;
        }
        s.heardAt = nowMs();
        // An ack ahead of the newest packet sent acknowledges nothing real.
        const ahead = s.lastSequence < 0 ? 1 : (m.ack - s.lastSequence + 65536) % 65536;
        if (ahead !== 0 && ahead < 32768) {
          c.badAcks++;
          return;
        }
        if (s.ackCredit <= 0) {
          c.acksThrottled++;
          return;
        }
        s.ackCredit--;
        c.acks++;
        const onAck = this.#listener.onAck;
        if (onAck !== undefined) {
          try {
            onAck.call(this.#listener, s.viewer, m.ack, m.ackBits);
          } catch (e) {
            c.listenerErrors++;
            this.#report(e);
          }
        }
        const ackFn = this.#acknowledge;
        if (ackFn !== undefined && this.#byViewer.get(s.viewer) === s) {
          try {
            ackFn(s.viewer, m.ack, m.ackBits);
          } catch (e) {
            const kind = classifyAckError(e);
            if (kind === 'unused') c.acksUnused++;
            else if (kind === 'bad') c.badAcks++;
            else {
              c.listenerErrors++;
              this.#report(e);
            }
          }
        }
        return;
      }
      case MSG_BYE:
        if (s === undefined) c.strays++;
        else this.#end(s, 'bye', undefined);
        return;
      case MSG_PING:
        if (s === undefined) c.strays++;
        else s.heardAt = nowMs();
        return;
      default:
        // WELCOME and REFUSE travel from server to client only.
        c.malformed++;
    }
  }

  #hello(m: HelloMessage, key: string, rinfo: dgram.RemoteInfo, existing: Session | undefined): void {
    const c = this.#counters;
    const peer = { address: rinfo.address, port: rinfo.port };
    if (existing !== undefined) {
      if (existing.nonce === m.nonce) {
        // The WELCOME was lost: say it again.
        existing.heardAt = nowMs();
        this.#sendControl(existing.welcome, existing);
        return;
      }
    }
    const refuse = (code: number, detail: number, text: string): void => {
      c.refused++;
      this.#sendControl(encodeRefuse({ nonce: m.nonce, code, detail, text }), peer);
    };
    if (m.version !== PROTOCOL_VERSION) {
      refuse(RefuseCode.VERSION, PROTOCOL_VERSION, `protocol version ${m.version} is not supported: the server speaks version ${PROTOCOL_VERSION}`);
      return;
    }
    const hash = this.#config.protocolHash >>> 0;
    if (m.protocolHash !== hash) {
      refuse(RefuseCode.PROTOCOL_HASH, hash, `protocol hash mismatch: server 0x${hex32(hash)}, client 0x${hex32(m.protocolHash)}`);
      return;
    }
    // The HELLO is acceptable: only now does it end a session from the same address (the client
    // restarted). One refused above changes nothing.
    if (this.#byViewer.size - (existing !== undefined ? 1 : 0) >= this.#maxClients) {
      refuse(RefuseCode.SERVER_FULL, this.#maxClients, `server full: ${this.#maxClients} clients connected`);
      return;
    }
    if (existing !== undefined) this.#end(existing, 'replaced', undefined);
    let avatar: unknown;
    try {
      avatar = this.#listener.onConnect.call(this.#listener, key, { clientKey: key, nonce: m.nonce });
    } catch (e) {
      refuse(RefuseCode.REJECTED, 0, e instanceof Error ? e.message : String(e));
      return;
    }
    if (typeof avatar !== 'number' || !Number.isInteger(avatar) || avatar < 0 || avatar > 0xffffffff) {
      c.listenerErrors++;
      this.#report(
        new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `onConnect must return the avatar's entity id (a u32), returned ${describe(avatar)}`),
      );
      refuse(RefuseCode.REJECTED, 0, 'the server could not place the client');
      return;
    }
    if (this.#byViewer.has(avatar)) {
      c.listenerErrors++;
      this.#report(new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `onConnect returned avatar ${avatar}, which already has a client`));
      refuse(RefuseCode.REJECTED, 0, 'the server could not place the client');
      return;
    }
    const welcome = encodeWelcome({
      nonce: m.nonce,
      avatar,
      protocolHash: hash,
      regionRaw: this.#config.regionRaw,
      verticalRaw: this.#config.verticalRaw,
      quantShift: this.#config.quantShift,
      payloadBytes: Math.min(0xffff, this.#config.payloadBytes),
      tickMicros: this.#tickMicros,
    });
    const now = nowMs();
    const s: Session = {
      key,
      address: rinfo.address,
      port: rinfo.port,
      viewer: avatar,
      nonce: m.nonce,
      welcome,
      heardAt: now,
      sentAt: now,
      lastSequence: -1,
      ackCredit: ACK_CREDIT_START,
    };
    this.#byKey.set(key, s);
    this.#byViewer.set(avatar, s);
    c.connects++;
    this.#sendControl(welcome, s);
  }

  /** Forgets a session, optionally says BYE, then tells the game. */
  #end(s: Session, reason: DisconnectReason, bye: number | undefined): void {
    if (this.#byKey.get(s.key) === s) this.#byKey.delete(s.key);
    if (this.#byViewer.get(s.viewer) === s) this.#byViewer.delete(s.viewer);
    const c = this.#counters;
    c.disconnects++;
    if (reason === 'timeout') c.timeouts++;
    if (bye !== undefined) this.#sendControl(encodeBye(bye), s);
    const fn = this.#listener.onDisconnect;
    if (fn !== undefined) {
      try {
        fn.call(this.#listener, s.viewer, reason);
      } catch (e) {
        c.listenerErrors++;
        this.#report(e);
      }
    }
  }

  readonly #sweep = (): void => {
    try {
      const now = nowMs();
      let ping: Uint8Array | undefined;
      for (const s of [...this.#byViewer.values()]) {
        if (now - s.heardAt > this.#timeoutMs) {
          this.#end(s, 'timeout', ByeReason.TIMEOUT);
        } else if (this.#keepaliveMs > 0 && now - s.sentAt >= this.#keepaliveMs) {
          ping ??= encodePing();
          this.#sendControl(ping, s);
          s.sentAt = now;
        }
      }
    } catch (e) {
      this.#counters.listenerErrors++;
      this.#report(e);
    }
  };
}

