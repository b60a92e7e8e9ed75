// Over 500 lines as one file: one state machine (the client's session, handshake to BYE); its types and options are in client-session-types.ts.
// The client side of the session protocol, whatever carries it (docs/transport.md): the cookie
// handshake, the session token on every message, game packets into a ClientWorld, acks, input
// (unreliable and reliable, resent until the game packet header acknowledges it), keepalives and
// BYE. UdpClient and WsClient extend it with their channel. Browser-safe: imports nothing from Node.

import { SightlineError, describe, isUint8Array } from '../errors.js';
import type { EntityId } from '../world.js';
import { getU16, hex32, tokenMatches, getU32 } from './bytes.js';
import { ClientWorld, type ReceiveStatus } from './client-world.js';
import { checkLayout, type PacketLayoutConfig } from '../decode.js';
import { encodeBye, encodeHello, encodeInput, encodePing } from './control-encode.js';
import { datagramKind, tryDecodeControl } from './control-decode.js';
import { layoutOf, refuseError, welcomeCarriesLayout } from './control-layout.js';
import {
  ByeReason,
  CONNECT_TOKEN_MAX_BYTES,
  MSG_BYE,
  MSG_CHALLENGE,
  MSG_PING,
  MSG_REFUSE,
  MSG_WELCOME,
  type WelcomeMessage,
} from './control-types.js';
import { InputSender, inputKindOf } from './input.js';
import { checkListenerOptions, intOption, nowMs } from './options.js';
import { CLIENT_CALLBACKS, type ClientDisconnectReason, type SessionClientCounters, type SessionClientOptions } from './client-session-types.js';

export { SESSION_CLIENT_OPTIONS } from './client-session-types.js';
export type { ClientDisconnectReason, SessionClientCounters, SessionClientOptions } from './client-session-types.js';

type State = 'idle' | 'connecting' | 'connected' | 'closed';

/**
 * The session client both channels share. A subclass opens its channel, then calls
 * `handshake`; it hands every message it receives to `receive` and reports channel errors and
 * closes with `channelError` / `channelClosed`.
 */
/**
 * @internal connect()'s `protocol` argument (a client's, a swarm's): the server's protocol hash
 * (u32), or its WorldConfig (any packet layout with its `protocolHash`), returned with the layout.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (not a u32, nor a layout with one).
 */
export function connectProtocol(protocol: number | (PacketLayoutConfig & { readonly protocolHash: number })): {
  protocolHash: number;
  layout: PacketLayoutConfig | undefined;
} {
  const layout = typeof protocol === 'object' && protocol !== null ? protocol : undefined;
  if (layout !== undefined) checkLayout(layout, 'protocol');
  const protocolHash = layout === undefined ? protocol : layout.protocolHash;
  intOption('protocolHash', protocolHash, 0, 0, 0xffffffff);
  return { protocolHash: protocolHash as number, layout };
}

export abstract class SessionClient {
  readonly #options: SessionClientOptions;
  readonly #ackIntervalMs: number;
  readonly #helloIntervalMs: number;
  readonly #connectTimeoutMs: number;
  readonly #serverTimeoutMs: number;
  readonly #keepaliveMs: number;
  readonly #input: InputSender;
  readonly #counters: SessionClientCounters = {
    datagramsReceived: 0,
    bytesReceived: 0,
    gamePackets: 0,
    malformed: 0,
    early: 0,
    helloSent: 0,
    challenges: 0,
    acksSent: 0,
    acksDropped: 0,
    pingsSent: 0,
    inputsSent: 0,
    inputsResent: 0,
    inputsAcked: 0,
    inputsDropped: 0,
    badTokens: 0,
    sendErrors: 0,
    socketErrors: 0,
    listenerErrors: 0,
  };
  #state: State = 'idle';
  #world: ClientWorld | undefined;
  #welcome: WelcomeMessage | undefined;
  #tokenLo = 0;
  #tokenHi = 0;
  #nonce = 0;
  #hash = 0;
  // The server's packet layout, when connect() was given its WorldConfig (else the WELCOME's).
  #layout: PacketLayoutConfig | undefined;
  #connectToken: Uint8Array = new Uint8Array(0);
  #hello: Uint8Array | undefined;
  #heardAt = 0;
  #sentAt = 0;
  #ackDirty = false;
  #ackAt = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #settle: ((error: Error | undefined) => void) | undefined;
  #lastChannelError: Error | undefined;

  /**
   * @param what the class's name, for messages
   * @param valid every option key the subclass takes (these and its own)
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an ordinary object, an option out of range,
   *   a listener not a function), ERR_SIGHTLINE_UNKNOWN_OPTION (a plain object with a key that is
   *   not an option; an instance of a class, a listener with fields of its own, is not checked for them).
   */
  protected constructor(what: string, options: SessionClientOptions | null | undefined, valid: readonly string[]) {
    if (options === undefined || options === null) options = {};
    checkListenerOptions(what, options, valid, CLIENT_CALLBACKS);
    this.#options = options;
    this.#ackIntervalMs = intOption('ackIntervalMs', options.ackIntervalMs, 0, 0, 60_000);
    this.#helloIntervalMs = intOption('helloIntervalMs', options.helloIntervalMs, 250, 1, 60_000);
    this.#connectTimeoutMs = intOption('connectTimeoutMs', options.connectTimeoutMs, 5000, 1, 3_600_000);
    this.#serverTimeoutMs = intOption('serverTimeoutMs', options.serverTimeoutMs, 5000, 0, 3_600_000);
    this.#keepaliveMs = intOption('keepaliveMs', options.keepaliveMs, 1000, 0, 3_600_000);
    intOption('maxLateness', options.maxLateness, 32, 0, 32767); // checked now: the world is made at WELCOME
    this.#input = new InputSender(
      intOption('maxReliableInputs', options.maxReliableInputs, 256, 1, 32768),
      intOption('inputResendMs', options.inputResendMs, 100, 1, 60_000),
    );
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
  get counters(): Readonly<SessionClientCounters> {
    return this.#counters;
  }

  /** Reliable inputs sent or queued and not yet acknowledged. */
  get pendingInputs(): number {
    return this.#input.pending;
  }

  /**
   * Sends the current ACK now (when there is one). False when not sent (no packet yet, not
   * connected, or the channel's queue at its cap: counted in `acksDropped`).
   */
  sendAck(): boolean {
    if (this.#state !== 'connected' || this.#world === undefined) return false;
    const bytes = this.#world.encodeAck(this.#welcome!.token);
    if (bytes === null) return false;
    if (!this.channelCanSend()) {
      this.#counters.acksDropped++;
      return false;
    }
    this.#counters.acksSent++;
    this.#ackDirty = false;
    this.#ackAt = nowMs();
    this.#send(bytes);
    return true;
  }

  /**
   * Sends game input. `'unreliable'` (InputKind.UNRELIABLE): sent once, now; the server passes on
   * only inputs newer than every one before (movement: latest wins); when the channel's queue is
   * at its cap it is not sent (`inputsDropped`). `'reliable'` (InputKind.RELIABLE): queued (copied)
   * and sent, resent every `inputResendMs` until a game packet's header acknowledges it; the
   * server passes each on exactly once, in order (chat, commands).
   * Returns the input's per-kind sequence (u16, from 0), which the server's `onInput` receives too.
   * @throws ERR_SIGHTLINE_NET_NOT_CONNECTED (not connected), ERR_SIGHTLINE_INVALID_ARGUMENT (bytes
   *   not a Uint8Array or longer than the server's `maxInputBytes` from the WELCOME, kind not one of
   *   the two), ERR_SIGHTLINE_NET_INPUT_QUEUE_FULL (`maxReliableInputs` reliable inputs wait for
   *   acknowledgement); nothing is sent or queued then.
   */
  sendInput(bytes: Uint8Array, kind: 'unreliable' | 'reliable' | 0 | 1 = 'unreliable'): number {
    const k = inputKindOf(kind);
    if (this.#state !== 'connected' || this.#welcome === undefined) {
      throw new SightlineError('ERR_SIGHTLINE_NET_NOT_CONNECTED', `sendInput needs a connected client (state: ${this.#state})`);
    }
    const max = this.#welcome.maxInputBytes;
    if (!isUint8Array(bytes) || bytes.length > max) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `input must be a Uint8Array of at most ${max} bytes (the server's maxInputBytes), received ${describe(bytes)}`,
      );
    }
    const token = this.#welcome.token;
    if (k === 0) {
      const sequence = this.#input.takeUnreliable();
      if (!this.channelCanSend()) {
        this.#counters.inputsDropped++;
        return sequence;
      }
      this.#counters.inputsSent++;
      this.#send(encodeInput({ token, kind: 0, sequence, payload: bytes }));
      return sequence;
    }
    const sequence = this.#input.push(bytes);
    this.#flushInputs(nowMs());
    return sequence;
  }

  /**
   * Sends BYE when connected (a client still connecting has no token yet: a server that placed it
   * ends that session at its timeout), then closes the channel. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    if (this.#state === 'connected') this.#send(encodeBye(this.#welcome!.token, ByeReason.CLOSED));
    this.#settle?.(new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting'));
    await this.shutdown();
  }

  // --------------------------------------------------------------------------------------------
  // For the channel subclasses.

  /** Hands one message to the channel. Returns false when it was not taken. Must not throw. */
  protected abstract channelSend(bytes: Uint8Array): boolean;
  /** Whether the channel takes a message now (its queue is under its cap). */
  protected abstract channelCanSend(): boolean;
  /** Closes the channel (idempotent). */
  protected abstract channelClose(): Promise<void>;

  /**
   * Checks connect()'s shared arguments and makes the client `'connecting'`. Returns the connect token.
   * `protocol`: the server's protocol hash, or its WorldConfig (any packet layout with its
   * `protocolHash`), which a client needs when the server's packets carry fields or attributes.
   * @throws ERR_SIGHTLINE_NET_STATE (connect called twice), ERR_SIGHTLINE_INVALID_ARGUMENT
   *   (protocolHash not a u32 nor a layout with one, options not an object or with a key other than
   *   connectToken, a connect token not a Uint8Array of at most 1,024 bytes).
   */
  protected beginConnect(protocol: number | (PacketLayoutConfig & { readonly protocolHash: number }), options: { connectToken?: Uint8Array } | undefined): void {
    if (this.#state !== 'idle') throw new SightlineError('ERR_SIGHTLINE_NET_STATE', `connect() needs a new client, this one is ${this.#state}`);
    const { protocolHash, layout } = connectProtocol(protocol);
    this.#layout = layout;
    if (options !== undefined) checkListenerOptions('connect', options, ['connectToken'], []);
    const token = options?.connectToken ?? new Uint8Array(0);
    if (!isUint8Array(token) || token.length > CONNECT_TOKEN_MAX_BYTES) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `connectToken must be a Uint8Array of at most ${CONNECT_TOKEN_MAX_BYTES} bytes, received ${describe(token)}`,
      );
    }
    this.#hash = protocolHash;
    this.#connectToken = token.slice();
    this.#state = 'connecting';
  }

  /** Whether close() ran since beginConnect (the subclass stops opening its channel). */
  protected get closedWhileConnecting(): boolean {
    return this.#state === 'closed';
  }

  /**
   * The handshake, once the channel is open: HELLO every `helloIntervalMs` (with the CHALLENGE's
   * cookie once one came) until a WELCOME or REFUSE answers. Resolves with the avatar's id; on
   * failure the channel is closed and the error thrown.
   */
  protected async handshake(target: string): Promise<EntityId> {
    const nonceWords = new Uint32Array(1);
    globalThis.crypto.getRandomValues(nonceWords);
    this.#nonce = nonceWords[0];
    this.#hello = encodeHello({ protocolHash: this.#hash, nonce: this.#nonce, connectToken: this.#connectToken });
    const outcome = new Promise<Error | undefined>((resolve) => {
      this.#settle = resolve;
    });
    const sendHello = () => {
      this.#counters.helloSent++;
      this.#send(this.#hello!);
    };
    sendHello();
    const helloTimer = setInterval(sendHello, this.#helloIntervalMs);
    const giveUp = setTimeout(() => {
      const last = this.#lastChannelError ? ` (last channel error: ${this.#lastChannelError.message})` : '';
      this.#settle?.(new SightlineError('ERR_SIGHTLINE_NET_CONNECT_TIMEOUT', `no answer from ${target} within ${this.#connectTimeoutMs} ms${last}`));
    }, this.#connectTimeoutMs);
    const error = await outcome;
    clearInterval(helloTimer);
    clearTimeout(giveUp);
    this.#settle = undefined;
    if (error !== undefined) {
      await this.shutdown();
      throw error;
    }
    return this.#welcome!.avatar;
  }

  /** Closes the client: no more timers, the channel closed. */
  protected shutdown(): Promise<void> {
    this.#state = 'closed';
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    return this.channelClose();
  }

  /** The channel reported an error. */
  protected channelError(e: Error): void {
    this.#counters.socketErrors++;
    this.#lastChannelError = e;
    this.#report(e);
  }

  /** A send the channel had taken failed later. */
  protected sendFailed(e: Error): void {
    this.#counters.sendErrors++;
    this.#lastChannelError = e;
  }

  /** The channel closed by itself (a WebSocket's close): the session is over. */
  protected channelClosed(why: string): void {
    if (this.#state === 'connecting') {
      this.#settle?.(new SightlineError('ERR_SIGHTLINE_NET_CONNECT', `the connection to the server closed during the handshake: ${why}`));
      return;
    }
    if (this.#state !== 'connected') return;
    void this.shutdown();
    this.#notifyDisconnect('closed');
  }

  /** One message from the server. Never throws: what cannot be used is counted. */
  protected receive(msg: Uint8Array): void {
    const c = this.#counters;
    c.datagramsReceived++;
    c.bytesReceived += msg.length;
    try {
      this.#handle(msg);
    } catch (e) {
      c.listenerErrors++;
      this.#report(e);
    }
  }

  // --------------------------------------------------------------------------------------------

  #send(bytes: Uint8Array): void {
    this.#sentAt = nowMs();
    if (!this.channelSend(bytes)) this.#counters.sendErrors++;
  }

  #report(e: unknown): void {
    const fn = this.#options.onError;
    if (fn === undefined) return;
    try {
      fn.call(this.#options, e);
    } catch {
      // onError itself failed: nothing further to tell
    }
  }

  #flushInputs(now: number): void {
    const token = this.#welcome!.token;
    const [first, again] = this.#input.due(now, (sequence, payload) => {
      if (!this.channelCanSend()) return false;
      this.#send(encodeInput({ token, kind: 1, sequence, payload }));
      return true;
    });
    this.#counters.inputsSent += first;
    this.#counters.inputsResent += again;
  }

  #handle(msg: Uint8Array): void {
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
      let status: ReceiveStatus = 'malformed';
      try {
        status = world.receive(msg);
      } catch (e) {
        status = 'applied'; // a listener threw: the packet was applied whole (ClientWorld.receive)
        throw e;
      } finally {
        if (status !== 'malformed') {
          // Header bytes 8..11: the server's acknowledgement of reliable input (docs/wire-format.md).
          const acked = this.#input.acknowledge(getU16(msg, 8), getU16(msg, 10));
          if (acked > 0) {
            c.inputsAcked += acked;
            if (this.#input.pending > 0) this.#flushInputs(nowMs());
          }
          this.#ackDirty = true;
          if (this.#ackIntervalMs === 0) this.sendAck();
        }
      }
      const onPacket = this.#options.onPacket;
      if (onPacket !== undefined) onPacket.call(this.#options, status, world);
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
      case MSG_CHALLENGE:
        if (this.#state !== 'connecting' || m.nonce !== this.#nonce) return; // late, or not ours
        c.challenges++;
        this.#hello = encodeHello({ protocolHash: this.#hash, nonce: this.#nonce, cookie: m.cookie, connectToken: this.#connectToken });
        c.helloSent++;
        this.#send(this.#hello);
        return;
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
        if (this.#layout === undefined && !welcomeCarriesLayout(m)) {
          this.#settle?.(
            new SightlineError(
              'ERR_SIGHTLINE_NET_LAYOUT_UNKNOWN',
              `the server's packets carry fast fields or attributes (protocol hash 0x${hex32(m.protocolHash)} is not its position layout's): pass its WorldConfig to connect(), not only the hash`,
            ),
          );
          return;
        }
        this.#welcome = m;
        this.#tokenLo = getU32(m.token, 0);
        this.#tokenHi = getU32(m.token, 4);
        this.#input.reset();
        this.#world = new ClientWorld(this.#layout ?? layoutOf(m), {
          payloadBytes: Math.max(16, m.payloadBytes),
          maxLateness: this.#options.maxLateness,
          onSpawn: this.#options.onSpawn?.bind(this.#options),
          onUpdate: this.#options.onUpdate?.bind(this.#options),
          onDespawn: this.#options.onDespawn?.bind(this.#options),
          onKind: this.#options.onKind?.bind(this.#options),
          onAttributes: this.#options.onAttributes?.bind(this.#options),
          onEvent: this.#options.onEvent?.bind(this.#options),
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
        if (!tokenMatches(msg, 1, this.#tokenLo, this.#tokenHi)) {
          c.badTokens++;
          return;
        }
        void this.shutdown();
        this.#notifyDisconnect('bye', m.reason);
        return;
      case MSG_PING:
        if (this.#state !== 'connected') return;
        if (!tokenMatches(msg, 1, this.#tokenLo, this.#tokenHi)) {
          c.badTokens++;
          return;
        }
        this.#heardAt = nowMs();
        return;
      default:
        // HELLO, ACK and INPUT travel from client to server only.
        c.malformed++;
    }
  }

  #notifyDisconnect(reason: ClientDisconnectReason, byeReason?: number): void {
    const fn = this.#options.onDisconnect;
    if (fn === undefined) return;
    try {
      fn.call(this.#options, reason, byeReason);
    } catch (e) {
      this.#counters.listenerErrors++;
      this.#report(e);
    }
  }

  #startTimer(): void {
    const periods = [this.#ackIntervalMs, this.#keepaliveMs, this.#serverTimeoutMs, this.#input.resendMs].filter((p) => p > 0);
    const period = Math.max(5, Math.floor(Math.min(...periods) / 4));
    this.#timer = setInterval(this.#onTimer, period);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  readonly #onTimer = (): void => {
    if (this.#state !== 'connected') return;
    try {
      const now = nowMs();
      if (this.#serverTimeoutMs > 0 && now - this.#heardAt > this.#serverTimeoutMs) {
        void this.shutdown();
        this.#notifyDisconnect('timeout');
        return;
      }
      if (this.#input.pending > 0) this.#flushInputs(now);
      if (this.#ackDirty && this.#ackIntervalMs > 0 && now - this.#ackAt >= this.#ackIntervalMs) {
        this.sendAck();
        return;
      }
      if (this.#keepaliveMs > 0 && now - this.#sentAt >= this.#keepaliveMs) {
        if (!this.sendAck()) {
          this.#counters.pingsSent++;
          this.#send(encodePing(this.#welcome!.token));
        }
      }
    } catch (e) {
      this.#counters.listenerErrors++;
      this.#report(e);
    }
  };
}
