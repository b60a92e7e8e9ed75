// The UDP transport, client side: handshake, game packets into a ClientWorld, acks, keepalives
// and BYE, on a node:dgram socket connected to the server.
import dgram from 'node:dgram';
import { SightlineError, describe } from '../errors.js';
import type { EntityId } from '../world.js';
import {
  ClientWorld,
  type DespawnListener,
  type EventListener,
  type ReceiveStatus,
  type SpawnListener,
  type UpdateListener,
} from './client-world.js';
import {
  ByeReason,
  MSG_BYE,
  MSG_PING,
  MSG_REFUSE,
  MSG_WELCOME,
  datagramKind,
  tryDecodeControl,
  encodeBye,
  encodeHello,
  encodePing,
  hex32,
  layoutOf,
  refuseError,
  type ControlMessage,
  type WelcomeMessage,
} from './protocol.js';
import { checkListenerOptions, intOption, lookupLiteral, nowMs } from './udp-common.js';

const CLIENT_OPTIONS: readonly (keyof UdpClientOptions)[] = [
  'onSpawn', 'onUpdate', 'onDespawn', 'onEvent', 'onPacket', 'onDisconnect', 'onError', 'ackIntervalMs', 'helloIntervalMs',
  'connectTimeoutMs', 'serverTimeoutMs', 'keepaliveMs', 'maxLateness', 'maxQueuedSends', 'type', 'bindAddress',
];

/** Why a connected client's session ended without `close()`. */
export type ClientDisconnectReason =
  /** The server sent BYE; its reason is the second argument (a {@link ByeReason}). */
  | 'bye'
  /** Nothing was heard from the server within `serverTimeoutMs`. */
  | 'timeout';

export interface UdpClientOptions {
  onSpawn?: SpawnListener;
  onUpdate?: UpdateListener;
  onDespawn?: DespawnListener;
  /** Each reliable event once, in order (see ClientWorld). */
  onEvent?: EventListener;
  /** After each game packet: how the world took it. */
  onPacket?: (status: ReceiveStatus, world: ClientWorld) => void;
  /** The session ended from the server's side; the socket is closed. */
  onDisconnect?: (reason: ClientDisconnectReason, byeReason?: number) => void;
  /** A listener threw, or the socket reported an error. */
  onError?: (error: unknown) => void;
  /** 0: an ACK after every game packet. More: at most one ACK per this many ms. Default 0. */
  ackIntervalMs?: number;
  /** HELLO is repeated this often until answered, ms. Default 250. */
  helloIntervalMs?: number;
  /** `connect` gives up after this long without an answer, ms. Default 5000. */
  connectTimeoutMs?: number;
  /** A connected client hearing nothing for this long ends the session ('timeout'), ms; 0 disables. Default 5000. */
  serverTimeoutMs?: number;
  /** A client that sent nothing for this long sends its ACK (or a PING before any packet), ms; 0 disables. Default 1000. */
  keepaliveMs?: number;
  /** A packet more than this many sequences older than the newest is discarded (see ClientWorldOptions). Default 32. */
  maxLateness?: number;
  /** Sends waiting in the socket queue, at most; an ACK beyond it is dropped. Default 64. */
  maxQueuedSends?: number;
  /** Socket family. Default `'udp4'`. */
  type?: 'udp4' | 'udp6';
  /** Local address to bind. Default: any. */
  bindAddress?: string;
}

/** Counters of a {@link UdpClient}. */
export interface UdpClientCounters {
  datagramsReceived: number;
  bytesReceived: number;
  /** Game packets handed to the world (see the world's counters for what it did with them). */
  gamePackets: number;
  /** Datagrams that were not a well-formed message, or not one a client expects. */
  malformed: number;
  /** Game packets that arrived before the WELCOME: dropped. */
  early: number;
  helloSent: number;
  acksSent: number;
  /** ACKs not sent: the socket queue was at its cap. */
  acksDropped: number;
  pingsSent: number;
  sendErrors: number;
  socketErrors: number;
  listenerErrors: number;
}

type State = 'idle' | 'connecting' | 'connected' | 'closed';

/**
 * UDP transport, client side, wrapping a {@link ClientWorld}.
 *
 * ```ts
 * const client = new UdpClient({ onSpawn, onUpdate, onDespawn });
 * const avatar = await client.connect('127.0.0.1', 7777, config.protocolHash);
 * // client.world.entities: what this client perceives
 * await client.close();
 * ```
 */
export class UdpClient {
  readonly #options: UdpClientOptions;
  readonly #ackIntervalMs: number;
  readonly #helloIntervalMs: number;
  readonly #connectTimeoutMs: number;
  readonly #serverTimeoutMs: number;
  readonly #keepaliveMs: number;
  readonly #maxQueued: number;
  readonly #counters: UdpClientCounters = {
    datagramsReceived: 0,
    bytesReceived: 0,
    gamePackets: 0,
    malformed: 0,
    early: 0,
    helloSent: 0,
    acksSent: 0,
    acksDropped: 0,
    pingsSent: 0,
    sendErrors: 0,
    socketErrors: 0,
    listenerErrors: 0,
  };
  #state: State = 'idle';
  #socket: dgram.Socket | undefined;
  #world: ClientWorld | undefined;
  #welcome: WelcomeMessage | undefined;
  #nonce = 0;
  #hash = 0;
  #heardAt = 0;
  #sentAt = 0;
  #ackDirty = false;
  #ackAt = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #settle: ((error: Error | undefined) => void) | undefined;
  #lastSocketError: Error | undefined;

  /**
   * @param options `undefined` or `null`: every option takes its default
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object, an option out of range, a
   *   listener not a function), ERR_SIGHTLINE_UNKNOWN_OPTION (a plain object with a key that is
   *   not an option; an instance of a class, a listener with fields of its own, is not checked for them).
   */
  constructor(options?: UdpClientOptions | null) {
    if (options === undefined || options === null) options = {};
    if (typeof options !== 'object') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `options must be an object or undefined, received ${describe(options)}`);
    }
    checkListenerOptions('UdpClient', options, CLIENT_OPTIONS, ['onSpawn', 'onUpdate', 'onDespawn', 'onEvent', 'onPacket', 'onDisconnect', 'onError']);
    this.#options = options;
    this.#ackIntervalMs = intOption('ackIntervalMs', options.ackIntervalMs, 0, 0, 60_000);
    this.#helloIntervalMs = intOption('helloIntervalMs', options.helloIntervalMs, 250, 1, 60_000);
    this.#connectTimeoutMs = intOption('connectTimeoutMs', options.connectTimeoutMs, 5000, 1, 3_600_000);
    this.#serverTimeoutMs = intOption('serverTimeoutMs', options.serverTimeoutMs, 5000, 0, 3_600_000);
    this.#keepaliveMs = intOption('keepaliveMs', options.keepaliveMs, 1000, 0, 3_600_000);
    this.#maxQueued = intOption('maxQueuedSends', options.maxQueuedSends, 64, 0, 1 << 20);
    intOption('maxLateness', options.maxLateness, 32, 0, 32767);  // checked now: the world is made at WELCOME
    const type = options.type ?? 'udp4';
    if (type !== 'udp4' && type !== 'udp6') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `type must be 'udp4' or 'udp6', received ${describe(type)}`);
    }
  }

  /** `'idle'`, `'connecting'`, `'connected'` or `'closed'`. */
  get state(): State {
    return this.#state;
  }

  /** The perceived world. @throws ERR_SIGHTLINE_NET_NOT_CONNECTED before the WELCOME. */
  get world(): ClientWorld {
    if (this.#world === undefined) {
      throw new SightlineError('ERR_SIGHTLINE_NET_NOT_CONNECTED', `the client has no world until connect() resolves (state: ${this.#state})`);
    }
    return this.#world;
  }

  /** The avatar's entity id (the viewer id packets name), once connected. */
  get avatar(): EntityId | undefined {
    return this.#welcome?.avatar;
  }

  /** The server's WELCOME, once connected. */
  get welcome(): WelcomeMessage | undefined {
    return this.#welcome;
  }

  /** Running totals (live object). */
  get counters(): Readonly<UdpClientCounters> {
    return this.#counters;
  }

  /** The local port (0 before connect). */
  get localPort(): number {
    try {
      return this.#socket?.address().port ?? 0;
    } catch {
      return 0;
    }
  }

  /**
   * Joins a server: repeats HELLO every `helloIntervalMs` until a WELCOME or REFUSE answers it.
   * Resolves with the avatar's entity id.
   *
   * @param host server address or name
   * @param port server UDP port
   * @param protocolHash the client's `WorldConfig.protocolHash` (u32); the server refuses another
   * @throws (rejects) ERR_SIGHTLINE_NET_REFUSED_PROTOCOL_HASH, ERR_SIGHTLINE_NET_REFUSED_VERSION,
   *   ERR_SIGHTLINE_NET_REFUSED_SERVER_FULL, ERR_SIGHTLINE_NET_REFUSED_REJECTED,
   *   ERR_SIGHTLINE_NET_REFUSED_CLOSING, ERR_SIGHTLINE_NET_REFUSED (the server's REFUSE, with its
   *   reason in the message); ERR_SIGHTLINE_NET_CONNECT_TIMEOUT (no answer);
   *   ERR_SIGHTLINE_NET_CONNECT (the socket could not bind or connect); ERR_SIGHTLINE_NET_PROTOCOL_HASH
   *   (the WELCOME carries another hash); ERR_SIGHTLINE_NET_CLOSED (closed while connecting);
   *   ERR_SIGHTLINE_NET_STATE (connect called twice); ERR_SIGHTLINE_INVALID_ARGUMENT.
   */
  async connect(host: string, port: number, protocolHash: number): Promise<EntityId> {
    if (this.#state !== 'idle') throw new SightlineError('ERR_SIGHTLINE_NET_STATE', `connect() needs a new client, this one is ${this.#state}`);
    if (typeof host !== 'string' || host === '') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `host must be a non-empty string, received ${describe(host)}`);
    }
    intOption('port', port, 0, 1, 65535);
    intOption('protocolHash', protocolHash, 0, 0, 0xffffffff);
    this.#state = 'connecting';
    this.#hash = protocolHash;
    const nonceWords = new Uint32Array(1);
    globalThis.crypto.getRandomValues(nonceWords);
    this.#nonce = nonceWords[0];

    const socket = dgram.createSocket({ type: this.#options.type ?? 'udp4', lookup: lookupLiteral });
    this.#socket = socket;
    socket.on('message', this.#onMessage);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.once('close', () => reject(new Error('socket closed')));
        socket.bind({ address: this.#options.bindAddress, port: 0 }, () => {
          // A name that does not resolve fails here (ENOTFOUND), not as a timeout later.
          socket.connect(port, host, (err?: Error) => {
            socket.off('error', reject);
            if (err) reject(err);
            else resolve();
          });
        });
      });
    } catch (e) {
      const closed = (this.#state as State) === 'closed';
      await this.#shutdown();
      if (closed) throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting');
      throw new SightlineError('ERR_SIGHTLINE_NET_CONNECT', `cannot open a UDP socket to ${host}:${port}: ${(e as Error).message}`);
    }
    socket.on('error', this.#onSocketError);
    if ((this.#state as State) !== 'connecting') throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting');

    const hello = encodeHello({ protocolHash, nonce: this.#nonce });
    const outcome = new Promise<Error | undefined>((resolve) => {
      this.#settle = resolve;
    });
    const sendHello = () => {
      this.#counters.helloSent++;
      this.#send(hello);
    };
    sendHello();
    const helloTimer = setInterval(sendHello, this.#helloIntervalMs);
    const giveUp = setTimeout(() => {
      const last = this.#lastSocketError ? ` (last socket error: ${this.#lastSocketError.message})` : '';
      this.#settle?.(
        new SightlineError('ERR_SIGHTLINE_NET_CONNECT_TIMEOUT', `no answer from ${host}:${port} within ${this.#connectTimeoutMs} ms${last}`),
      );
    }, this.#connectTimeoutMs);
    const error = await outcome;
    clearInterval(helloTimer);
    clearTimeout(giveUp);
    this.#settle = undefined;
    if (error !== undefined) {
      await this.#shutdown();
      throw error;
    }
    return this.#welcome!.avatar;
  }

  /**
   * Sends BYE when connected, or connecting once a HELLO went out (a server that placed the client
   * already ends that session now rather than at its timeout), then closes the socket. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    if (this.#state === 'connected' || (this.#state === 'connecting' && this.#counters.helloSent > 0)) this.#send(encodeBye(ByeReason.CLOSED));
    this.#settle?.(new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting'));
    await this.#shutdown();
  }

  /** Sends the current ACK now (when there is one). False when not sent. */
  sendAck(): boolean {
    if (this.#state !== 'connected' || this.#world === undefined) return false;
    const bytes = this.#world.encodeAck();
    if (bytes === null) return false;
    if (!this.#canSend()) {
      this.#counters.acksDropped++;
      return false;
    }
    this.#counters.acksSent++;
    this.#ackDirty = false;
    this.#ackAt = nowMs();
    this.#send(bytes);
    return true;
  }

  // ---------------------------------------------------------------------------------------------

  #shutdown(): Promise<void> {
    this.#state = 'closed';
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    const socket = this.#socket;
    if (socket === undefined) return Promise.resolve();
    this.#socket = undefined;
    return new Promise((resolve) => {
      try {
        socket.close(() => resolve());
      } catch {
        resolve();
      }
    });
  }

  #canSend(): boolean {
    const s = this.#socket;
    return s !== undefined && s.getSendQueueCount() < this.#maxQueued;
  }

  #send(bytes: Uint8Array): void {
    const s = this.#socket;
    if (s === undefined) return;
    this.#sentAt = nowMs();
    try {
      s.send(bytes, this.#afterSend);
    } catch (e) {
      this.#counters.sendErrors++;
      this.#report(e);
    }
  }

  readonly #afterSend = (err: Error | null): void => {
    if (err) {
      this.#counters.sendErrors++;
      this.#lastSocketError = err;
    }
  };

  readonly #onSocketError = (e: Error): void => {
    this.#counters.socketErrors++;
    this.#lastSocketError = e;
    this.#report(e);
  };

  #report(e: unknown): void {
    const fn = this.#options.onError;
    if (fn === undefined) return;
    try {
      fn(e);
    } catch {
      // onError itself failed: nothing further to tell
    }
  }

  readonly #onMessage = (msg: Buffer): void => {
    const c = this.#counters;
    c.datagramsReceived++;
    c.bytesReceived += msg.length;
    try {
      this.#handle(msg);
    } catch (e) {
      c.listenerErrors++;
      this.#report(e);
    }
  };

  #handle(msg: Buffer): void {
    const c = this.#counters;
    const kind = datagramKind(msg);
    if (kind === 'game') {
      if (this.#state !== 'connected' || this.#world === undefined) {
        c.early++;
        return;
      }
      this.#heardAt = nowMs();
      c.gamePackets++;
      const world = this.#world;
      let status: ReceiveStatus;
      try {
        status = world.receive(msg);
      } finally {
        // The packet is applied even when a listener threw: acknowledge it either way.
        this.#ackDirty = true;
        if (this.#ackIntervalMs === 0) this.sendAck();
      }
      const onPacket = this.#options.onPacket;
      if (onPacket !== undefined) onPacket(status, world);
      return;
    }
    if (kind !== 'control') {
      c.malformed++;
      return;
    }
    const m = tryDecodeControl(msg);
    if (m === undefined) {
      c.malformed++;
      return;
    }
    switch (m.type) {
      case MSG_WELCOME:
        if (this.#state !== 'connecting') return; // a repeat of the WELCOME already taken
        if (m.nonce !== this.#nonce) {
          c.malformed++;
          return;
        }
        if (m.protocolHash !== this.#hash) {
          this.#settle?.(
            new SightlineError(
              'ERR_SIGHTLINE_NET_PROTOCOL_HASH',
              `the server welcomed with protocol hash 0x${hex32(m.protocolHash)}, the client asked for 0x${hex32(this.#hash)}`,
            ),
          );
          return;
        }
        this.#welcome = m;
        this.#world = new ClientWorld(layoutOf(m), {
          payloadBytes: Math.max(16, m.payloadBytes),
          maxLateness: this.#options.maxLateness,
          onSpawn: this.#options.onSpawn,
          onUpdate: this.#options.onUpdate,
          onDespawn: this.#options.onDespawn,
          onEvent: this.#options.onEvent,
        });
        this.#state = 'connected';
        this.#heardAt = nowMs();
        this.#startTimer();
        this.#settle?.(undefined);
        return;
      case MSG_REFUSE:
        if (this.#state !== 'connecting' || m.nonce !== this.#nonce) {
          c.malformed++;
          return;
        }
        this.#settle?.(refuseError(m, this.#hash));
        return;
      case MSG_BYE:
        if (this.#state !== 'connected') return;
        void this.#shutdown();
        this.#notifyDisconnect('bye', m.reason);
        return;
      case MSG_PING:
        if (this.#state === 'connected') this.#heardAt = nowMs();
        return;
      default:
        // HELLO and ACK travel from client to server only.
        c.malformed++;
    }
  }

  #notifyDisconnect(reason: ClientDisconnectReason, byeReason?: number): void {
    const fn = this.#options.onDisconnect;
    if (fn === undefined) return;
    try {
      fn(reason, byeReason);
    } catch (e) {
      this.#counters.listenerErrors++;
      this.#report(e);
    }
  }

  #startTimer(): void {
    const periods = [this.#ackIntervalMs, this.#keepaliveMs, this.#serverTimeoutMs].filter((p) => p > 0);
    if (periods.length === 0) return;
    const period = Math.max(5, Math.floor(Math.min(...periods) / 4));
    this.#timer = setInterval(this.#onTimer, period);
    this.#timer.unref();
  }

  readonly #onTimer = (): void => {
    if (this.#state !== 'connected') return;
    const now = nowMs();
    if (this.#serverTimeoutMs > 0 && now - this.#heardAt > this.#serverTimeoutMs) {
      void this.#shutdown();
      this.#notifyDisconnect('timeout');
      return;
    }
    if (this.#ackDirty && this.#ackIntervalMs > 0 && now - this.#ackAt >= this.#ackIntervalMs) {
      this.sendAck();
      return;
    }
    if (this.#keepaliveMs > 0 && now - this.#sentAt >= this.#keepaliveMs) {
      if (!this.sendAck()) {
        this.#counters.pingsSent++;
        this.#send(encodePing());
      }
    }
  };
}
