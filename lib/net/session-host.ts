// Over 500 lines as one file: one state machine (the server's sessions, cookie to timeout) whose checks must be read together; its types are in session-types.ts.
// The server side of the session protocol, whatever carries it (docs/transport.md): the cookie
// handshake, the per-session token check on every client message, acks to the game and the
// engine, client input, timeouts and keepalives. UdpServer and WsServer each own one and give it
// the datagrams they receive and a way to send control messages.
import { PROTOCOL_VERSION } from '../wire.js';
import { SightlineError, describe } from '../errors.js';
import type { EntityId } from '../world.js';
import { getU16, getU32, hex32, putU16, tokenMatches } from './bytes.js';
import { encodeBye, encodeChallenge, encodePing, encodeRefuse, encodeWelcome } from './control-encode.js';
import { decodeControl } from './control-decode.js';
import {
  ACK_BYTES,
  BYE_BYTES,
  ByeReason,
  INPUT_HEADER_BYTES,
  INPUT_MAX_BYTES,
  MSG_ACK,
  MSG_BYE,
  MSG_HELLO,
  MSG_INPUT,
  MSG_PING,
  NET_VERSION,
  PING_BYTES,
  RefuseCode,
  type HelloMessage,
} from './control-types.js';
import { CookieJar, newToken } from './cookie.js';
import { InputReceiver } from './input.js';
import type { Endpoint, ServerLayout, Session, SessionServerOptions } from './session-types.js';

export { SERVER_CALLBACKS, SESSION_SERVER_OPTIONS } from './session-types.js';
export type { Endpoint, ServerLayout, Session, SessionServerOptions } from './session-types.js';
import { intOption, nowMs } from './options.js';
import {
  ConnectionRefusedError,
  acknowledgeOf,
  classifyAckError,
  type AcknowledgeFn,
  type DisconnectReason,
  type SessionCounters,
  type TransportListener,
} from './transport.js';

// Ack credit: each packet sent earns a client ACK_CREDIT_PER_PACKET acks, up to ACK_CREDIT_MAX.
const ACK_CREDIT_PER_PACKET = 2;
const ACK_CREDIT_MAX = 64;
const ACK_CREDIT_START = 8;
// The REFUSE text for an onConnect that threw something other than a ConnectionRefusedError.
const GENERIC_REFUSAL = 'the server refused the connection';

/**
 * What an adapter with a receive path of its own must hear of its host's sessions (UdpServer's
 * native data path keeps a copy of each, and checks and answers ACKs and PINGs without the host).
 */
export interface SessionHooks<P extends Endpoint> {
  /** A session began: it is in `byKey` and `byViewer`, its WELCOME not yet sent. */
  opened?(s: Session<P>): void;
  /** A session ended: it is out of `byKey` and `byViewer`; its BYE and `onDisconnect` follow. */
  closed?(s: Session<P>): void;
  /** A reliable input was taken: the session's input acknowledgement (`s.input.ack`, `ackBits`) may have changed. */
  inputAcked?(s: Session<P>): void;
}

/**
 * The session protocol's server half. Not a transport by itself: an adapter feeds it what it
 * receives (`handle`), stamps each game packet it sends (`stamp`) and sends the control messages
 * it asks for.
 */
export class SessionHost<P extends Endpoint> {
  readonly counters: SessionCounters;
  /** Malformed datagrams by the decoder's error code (`ERR_SIGHTLINE_NET_…`). */
  readonly malformedCodes: Record<string, number> = Object.create(null) as Record<string, number>;
  readonly byKey = new Map<string, Session<P>>();
  readonly byViewer = new Map<EntityId, Session<P>>();
  readonly timeoutMs: number;
  readonly keepaliveMs: number;
  readonly #listener: TransportListener;
  readonly #config: ServerLayout;
  readonly #acknowledge: AcknowledgeFn | undefined;
  readonly #send: (bytes: Uint8Array, to: P) => void;
  readonly #ended: ((s: Session<P>, reason: DisconnectReason) => void) | undefined;
  readonly #maxClients: number;
  readonly #maxInputBytes: number;
  readonly #inputRate: number;
  readonly #inputBurst: number;
  readonly #tickMicros: number;
  readonly #cookies: CookieJar;
  readonly #hooks: SessionHooks<P> | undefined;

  /**
   * @param what the adapter's name, for messages
   * @param sendControl sends one control message (the adapter applies its caps and counts)
   * @param ended called when a session ends, after its BYE was sent and before `onDisconnect`
   *   (a connection-oriented adapter closes the connection there)
   * @param hooks what the adapter hears of sessions beginning and ending (see {@link SessionHooks})
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (config without a protocol hash, onConnect not a
   *   function, an option out of range, a world that is not one or has another protocol hash).
   */
  constructor(
    what: string,
    options: SessionServerOptions,
    counters: SessionCounters,
    sendControl: (bytes: Uint8Array, to: P) => void,
    ended?: (s: Session<P>, reason: DisconnectReason) => void,
    hooks?: SessionHooks<P>,
  ) {
    const { config } = options;
    if (typeof config !== 'object' || config === null || typeof config.protocolHash !== 'number') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${what} config must be a WorldConfig, received ${describe(config)}`);
    }
    if (typeof options.onConnect !== 'function') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `${what} onConnect must be a function, received ${describe(options.onConnect)}`);
    }
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
    this.#listener = options;
    this.#config = config;
    this.#acknowledge = acknowledgeOf(options.world);
    this.#send = sendControl;
    this.#ended = ended;
    this.#hooks = hooks;
    this.counters = counters;
    this.#maxClients = intOption('maxClients', options.maxClients, 4096, 1, 1 << 20);
    this.timeoutMs = intOption('timeoutMs', options.timeoutMs, 5000, 1, 3_600_000);
    this.keepaliveMs = intOption('keepaliveMs', options.keepaliveMs, 1000, 0, 3_600_000);
    this.#maxInputBytes = intOption('maxInputBytes', options.maxInputBytes, 256, 0, INPUT_MAX_BYTES);
    this.#inputRate = intOption('inputRate', options.inputRate, 240, 1, 1_000_000);
    this.#inputBurst = intOption('inputBurst', options.inputBurst, 64, 1, 1_000_000);
    this.#cookies = new CookieJar(intOption('cookieLifetimeMs', options.cookieLifetimeMs, 10_000, 1, 3_600_000), nowMs());
    const tickHz = config.input?.tickHz;
    this.#tickMicros = typeof tickHz === 'number' && tickHz > 0 ? Math.min(0xffffffff, Math.round(1e6 / tickHz)) : 0;
  }

  /** Period of the sweep an adapter runs (`sweep`), ms: a quarter of the shorter of timeout and keepalive. */
  get sweepPeriodMs(): number {
    return Math.max(10, Math.floor(Math.min(this.timeoutMs, this.keepaliveMs || this.timeoutMs) / 4));
  }

  /** Passes an error to `onError` (which may not throw further). */
  report(e: unknown): void {
    const fn = this.#listener.onError;
    if (fn === undefined) return;
    try {
      fn.call(this.#listener, e);
    } catch {
      // onError itself failed: nothing further to tell
    }
  }

  /**
   * Handles one message from a client at `from`, whose stable name is `key`. Session messages
   * (ACK, BYE, PING, INPUT) are checked inline: exact layout, a session at that key, its token;
   * only then do they refresh the session's timeout. Never throws for what the bytes hold.
   */
  handle(msg: Uint8Array, key: string, from: P, now: number = nowMs()): void {
    const c = this.counters;
    const len = msg.length;
    let ok: boolean;
    switch (len === 0 ? -1 : msg[0]) {
      case MSG_ACK:
        ok = len === ACK_BYTES;
        break;
      case MSG_BYE:
        ok = len === BYE_BYTES;
        break;
      case MSG_PING:
        ok = len === PING_BYTES;
        break;
      case MSG_INPUT:
        ok = len >= INPUT_HEADER_BYTES && len <= INPUT_HEADER_BYTES + INPUT_MAX_BYTES && msg[9] <= 1;
        break;
      case MSG_HELLO:
        this.#hello(msg, key, from, now);
        return;
      default:
        ok = false;
    }
    if (!ok) {
      this.#malformed(msg);
      return;
    }
    const s = this.byKey.get(key);
    if (s === undefined) {
      c.strays++;
      return;
    }
    if (!tokenMatches(msg, 1, s.token.lo, s.token.hi)) {
      c.badTokens++;
      return;
    }
    s.heardAt = now;
    switch (msg[0]) {
      case MSG_ACK:
        this.#ack(s, getU16(msg, 9), getU32(msg, 11));
        return;
      case MSG_BYE:
        this.end(s, 'bye', undefined);
        return;
      case MSG_INPUT:
        this.#input(s, msg, now);
        return;
      default:
      // PING: the timeout is refreshed, nothing else.
    }
  }

  /**
   * Bookkeeping for a game packet about to go to s, in the adapter's own copy `bytes`: writes the
   * session's input acknowledgement into header bytes 8..11 (docs/wire-format.md), notes its
   * sequence, and earns the client ack credit.
   */
  stamp(s: Session<P>, bytes: Uint8Array, now: number): void {
    if (bytes.length >= 12) {
      putU16(bytes, 8, s.input.ack);
      putU16(bytes, 10, s.input.ackBits);
    }
    s.lastSequence = bytes[2] | (bytes[3] << 8);
    s.sentAt = now;
    s.ackCredit = Math.min(ACK_CREDIT_MAX, s.ackCredit + ACK_CREDIT_PER_PACKET);
  }

  /** Forgets a session, optionally says BYE (with its token), then tells the game. */
  end(s: Session<P>, reason: DisconnectReason, bye: number | undefined): void {
    if (this.byKey.get(s.key) === s) this.byKey.delete(s.key);
    if (this.byViewer.get(s.viewer) === s) this.byViewer.delete(s.viewer);
    this.#hooks?.closed?.(s);
    const c = this.counters;
    c.disconnects++;
    if (reason === 'timeout') c.timeouts++;
    if (bye !== undefined) this.#send(encodeBye(s.token.bytes, bye), s.peer);
    if (this.#ended !== undefined) {
      try {
        this.#ended(s, reason);
      } catch (e) {
        c.listenerErrors++;
        this.report(e);
      }
    }
    const fn = this.#listener.onDisconnect;
    if (fn !== undefined) {
      try {
        fn.call(this.#listener, s.viewer, reason);
      } catch (e) {
        c.listenerErrors++;
        this.report(e);
      }
    }
  }

  /** Ends every session (`onDisconnect(viewer, reason)`), saying BYE with `bye` when given. */
  endAll(reason: DisconnectReason, bye: number | undefined): void {
    for (const s of [...this.byViewer.values()]) this.end(s, reason, bye);
  }

  /** Times out silent sessions (BYE TIMEOUT) and pings those sent nothing for `keepaliveMs`. */
  sweep(now: number = nowMs()): void {
    try {
      for (const s of [...this.byViewer.values()]) {
        if (now - s.heardAt > this.timeoutMs) {
          this.end(s, 'timeout', ByeReason.TIMEOUT);
        } else if (this.keepaliveMs > 0 && now - s.sentAt >= this.keepaliveMs) {
          this.#send(encodePing(s.token.bytes), s.peer);
          s.sentAt = now;
        }
      }
    } catch (e) {
      this.counters.listenerErrors++;
      this.report(e);
    }
  }

  // ---------------------------------------------------------------------------------------------

  #malformed(msg: Uint8Array): void {
    this.counters.malformed++;
    // A well-formed message servers never receive (WELCOME, REFUSE, CHALLENGE, a game packet).
    let code = 'ERR_SIGHTLINE_NET_WRONG_DIRECTION';
    if (msg[0] !== PROTOCOL_VERSION) {
      try {
        decodeControl(msg);
      } catch (e) {
        code = (e as SightlineError).code;
      }
    }
    this.malformedCodes[code] = (this.malformedCodes[code] ?? 0) + 1;
  }

  #ack(s: Session<P>, ack: number, ackBits: number): void {
    const c = this.counters;
    // An ack ahead of the newest packet sent acknowledges nothing real.
    const ahead = s.lastSequence < 0 ? 1 : (ack - s.lastSequence + 65536) % 65536;
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
    this.passOn(s.viewer, ack, ackBits, true);
  }

  /**
   * Passes on an ACK that passed the checks: to `onAck`, then (when `toWorld`, and its viewer still
   * has a session) to `world.acknowledge`, filing what the world refuses (`acksUnused`, `badAcks`).
   * An adapter that checked the ACK itself calls it (the native data path, whose World may have
   * taken the ACK already: `toWorld` false then).
   */
  passOn(viewer: EntityId, ack: number, ackBits: number, toWorld: boolean): void {
    const c = this.counters;
    const onAck = this.#listener.onAck;
    if (onAck !== undefined) {
      try {
        onAck.call(this.#listener, viewer, ack, ackBits);
      } catch (e) {
        c.listenerErrors++;
        this.report(e);
      }
    }
    const ackFn = this.#acknowledge;
    if (ackFn !== undefined && toWorld && this.byViewer.has(viewer)) {
      try {
        ackFn(viewer, ack, ackBits);
      } catch (e) {
        const kind = classifyAckError(e);
        if (kind === 'unused') c.acksUnused++;
        else if (kind === 'bad') c.badAcks++;
        else {
          c.listenerErrors++;
          this.report(e);
        }
      }
    }
  }

  #input(s: Session<P>, msg: Uint8Array, now: number): void {
    const c = this.counters;
    if (msg.length - INPUT_HEADER_BYTES > this.#maxInputBytes) {
      c.inputsOversized++;
      return;
    }
    const credit = Math.min(this.#inputBurst, s.inputCredit + ((now - s.inputAt) * this.#inputRate) / 1000);
    s.inputAt = now;
    if (credit < 1) {
      s.inputCredit = credit;
      c.inputsThrottled++;
      return;
    }
    s.inputCredit = credit - 1;
    const sequence = getU16(msg, 10);
    const payload = msg.subarray(INPUT_HEADER_BYTES);
    if (msg[9] === 0) {
      if (!s.input.unreliable(sequence)) {
        c.inputsStale++;
        return;
      }
      this.#deliver(s, payload, 0, sequence);
      return;
    }
    const outcome = s.input.reliable(
      sequence,
      payload,
      (bytes, seq) => {
        c.inputsReliable++;
        this.#deliver(s, bytes, 1, seq);
      },
      (e) => {
        c.listenerErrors++;
        this.report(e);
      },
    );
    if (outcome === 'held') c.inputsHeld++;
    else if (outcome === 'repeated') c.inputsRepeated++;
    else if (outcome === 'ahead') c.inputsAhead++;
    this.#hooks?.inputAcked?.(s);
  }

  #deliver(s: Session<P>, bytes: Uint8Array, kind: 0 | 1, sequence: number): void {
    const c = this.counters;
    c.inputs++;
    const fn = this.#listener.onInput;
    // A session the game ended meanwhile (in an earlier onInput) takes nothing more.
    if (fn === undefined || this.byViewer.get(s.viewer) !== s) return;
    try {
      fn.call(this.#listener, s.viewer, bytes, kind, sequence);
    } catch (e) {
      c.listenerErrors++;
      this.report(e);
    }
  }

  #hello(msg: Uint8Array, key: string, from: P, now: number): void {
    const c = this.counters;
    let m: HelloMessage;
    try {
      m = decodeControl(msg) as HelloMessage;
    } catch {
      this.#malformed(msg);
      return;
    }
    const existing = this.byKey.get(key);
    const refuse = (code: number, detail: number, text: string): void => {
      c.refused++;
      this.#send(encodeRefuse({ nonce: m.nonce, code, detail, text }), from);
    };
    if (m.netVersion !== NET_VERSION) {
      refuse(RefuseCode.NET_VERSION, NET_VERSION, `control messages revision ${m.netVersion} is not supported: the server speaks revision ${NET_VERSION}`);
      return;
    }
    if (m.version !== PROTOCOL_VERSION) {
      refuse(RefuseCode.VERSION, PROTOCOL_VERSION, `protocol version ${m.version} is not supported: the server speaks version ${PROTOCOL_VERSION}`);
      return;
    }
    const hash = this.#config.protocolHash >>> 0;
    if (m.protocolHash !== hash) {
      refuse(RefuseCode.PROTOCOL_HASH, hash, `protocol hash mismatch: server 0x${hex32(hash)}, client 0x${hex32(m.protocolHash)}`);
      return;
    }
    const full = this.byViewer.size - (existing !== undefined ? 1 : 0) >= this.#maxClients;
    if (m.cookie === null || !this.#cookies.verify(m.cookie, from.address, from.port, m.nonce, hash, now)) {
      if (m.cookie !== null) c.badCookies++;
      if (full && existing === undefined) {
        refuse(RefuseCode.SERVER_FULL, this.#maxClients, `server full: ${this.#maxClients} clients connected`);
        return;
      }
      // Nothing is kept: the cookie is the only state, and it travels with the client.
      c.challenges++;
      this.#send(encodeChallenge({ nonce: m.nonce, cookie: this.#cookies.issue(from.address, from.port, m.nonce, hash, now) }), from);
      return;
    }
    if (existing !== undefined && existing.nonce === m.nonce) {
      // The WELCOME was lost: say it again.
      existing.heardAt = now;
      this.#send(existing.welcome, existing.peer);
      return;
    }
    // The HELLO is acceptable: only now does it end a session from the same address (the client
    // restarted). One refused above changes nothing.
    if (full) {
      refuse(RefuseCode.SERVER_FULL, this.#maxClients, `server full: ${this.#maxClients} clients connected`);
      return;
    }
    if (existing !== undefined) this.end(existing, 'replaced', undefined);
    let avatar: unknown;
    try {
      avatar = this.#listener.onConnect.call(this.#listener, key, {
        clientKey: key,
        address: from.address,
        port: from.port,
        nonce: m.nonce,
        connectToken: m.connectToken,
      });
    } catch (e) {
      if (e instanceof ConnectionRefusedError) {
        refuse(RefuseCode.REJECTED, 0, e.message);
      } else {
        // Whatever the game's exception says (a stack, a database's error) is not for the peer.
        c.listenerErrors++;
        this.report(e);
        refuse(RefuseCode.REJECTED, 0, GENERIC_REFUSAL);
      }
      return;
    }
    if (typeof avatar !== 'number' || !Number.isInteger(avatar) || avatar < 0 || avatar > 0xffffffff) {
      c.listenerErrors++;
      this.report(new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `onConnect must return the avatar's entity id (a u32), returned ${describe(avatar)}`));
      refuse(RefuseCode.REJECTED, 0, 'the server could not place the client');
      return;
    }
    if (this.byViewer.has(avatar)) {
      c.listenerErrors++;
      this.report(new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `onConnect returned avatar ${avatar}, which already has a client`));
      refuse(RefuseCode.REJECTED, 0, 'the server could not place the client');
      return;
    }
    const token = newToken();
    const welcome = encodeWelcome({
      nonce: m.nonce,
      token: token.bytes,
      avatar,
      protocolHash: hash,
      regionRaw: this.#config.regionRaw,
      verticalRaw: this.#config.verticalRaw,
      quantShift: this.#config.quantShift,
      payloadBytes: Math.min(0xffff, this.#config.payloadBytes),
      tickMicros: this.#tickMicros,
      maxInputBytes: this.#maxInputBytes,
    });
    const s: Session<P> = {
      key,
      peer: from,
      viewer: avatar,
      nonce: m.nonce,
      welcome,
      token,
      input: new InputReceiver(),
      heardAt: now,
      sentAt: now,
      lastSequence: -1,
      ackCredit: ACK_CREDIT_START,
      inputCredit: this.#inputBurst,
      inputAt: now,
    };
    this.byKey.set(key, s);
    this.byViewer.set(avatar, s);
    this.#hooks?.opened?.(s);
    c.connects++;
    this.#send(welcome, from);
  }
}
