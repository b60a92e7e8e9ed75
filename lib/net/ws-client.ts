// The WebSocket transport, client side: the session client (client-session.ts) on a WebSocket:
// the browser's own, or any class with its interface (the `ws` package's in Node).
// Browser-safe: imports nothing from Node.
import { SightlineError, describe } from '../errors.js';
import type { PacketLayoutConfig } from '../decode.js';
import type { EntityId } from '../world.js';
import { SESSION_CLIENT_OPTIONS, SessionClient, type SessionClientCounters, type SessionClientOptions } from './client-session.js';
import { intOption } from './options.js';

/** What a {@link WsClient} needs of a WebSocket: the browser's interface (the `ws` package's `WebSocket` has it too). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
}

/** A WebSocket class: `new WebSocket(url)`. */
export type WebSocketClass = new (url: string) => WebSocketLike;

export interface WsClientOptions extends SessionClientOptions {
  /** The WebSocket class to use. Default: `globalThis.WebSocket` (browsers; Node 22 and later). */
  WebSocket?: WebSocketClass;
  /** Bytes the socket may hold unsent before an ACK or unreliable input is dropped instead. Default 65536. */
  maxBufferedBytes?: number;
}

/** Counters of a {@link WsClient}. */
export type WsClientCounters = SessionClientCounters;

const WS_CLIENT_OPTIONS: readonly string[] = [...SESSION_CLIENT_OPTIONS, 'WebSocket', 'maxBufferedBytes'];
const OPEN = 1;

/**
 * WebSocket transport, client side, wrapping a {@link ClientWorld}: the browser's client.
 *
 * ```ts
 * import { WsClient } from 'sightline/net/browser';
 * const client = new WsClient({ onSpawn, onUpdate, onDespawn });
 * const avatar = await client.connect(`ws://${location.host}/sightline`, protocolHash);
 * client.sendInput(moveBytes);
 * ```
 */
export class WsClient extends SessionClient {
  readonly #WebSocket: WebSocketClass;
  readonly #maxBuffered: number;
  #ws: WebSocketLike | undefined;

  /**
   * @param options `undefined` or `null`: every option takes its default
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (what UdpClient refuses; WebSocket not a class, or none
   *   given where there is no global WebSocket), ERR_SIGHTLINE_UNKNOWN_OPTION.
   */
  constructor(options?: WsClientOptions | null) {
    super('WsClient', options, WS_CLIENT_OPTIONS);
    const o = options ?? {};
    const WS = o.WebSocket ?? (globalThis as { WebSocket?: WebSocketClass }).WebSocket;
    if (typeof WS !== 'function') {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `WebSocket must be a WebSocket class (this runtime has no global one: pass the ws package's), received ${describe(o.WebSocket)}`,
      );
    }
    this.#WebSocket = WS;
    this.#maxBuffered = intOption('maxBufferedBytes', o.maxBufferedBytes, 65536, 0, 2 ** 31 - 1);
  }

  /**
   * Joins a server: opens the WebSocket, then the handshake (HELLO, the CHALLENGE's cookie back)
   * until a WELCOME or REFUSE answers. Resolves with the avatar's entity id.
   * @param url `ws://` or `wss://` URL of the server's endpoint
   * @throws (rejects) what UdpClient.connect rejects with; ERR_SIGHTLINE_NET_CONNECT (the
   *   WebSocket could not open, or closed during the handshake); ERR_SIGHTLINE_INVALID_ARGUMENT
   *   (url not a ws: or wss: URL).
   */
  async connect(
    url: string,
    protocol: number | (PacketLayoutConfig & { readonly protocolHash: number }),
    options?: { connectToken?: Uint8Array },
  ): Promise<EntityId> {
    if (this.state === 'idle') {
      let ok = false;
      try {
        const u = new URL(url);
        ok = u.protocol === 'ws:' || u.protocol === 'wss:';
      } catch {
        ok = false;
      }
      if (!ok) throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `url must be a ws: or wss: URL, received ${describe(url)}`);
    }
    this.beginConnect(protocol, options);
    let ws: WebSocketLike;
    try {
      ws = new this.#WebSocket(url);
      ws.binaryType = 'arraybuffer';
    } catch (e) {
      await this.shutdown();
      throw new SightlineError('ERR_SIGHTLINE_NET_CONNECT', `cannot open a WebSocket to ${url}: ${(e as Error).message}`);
    }
    this.#ws = ws;
    try {
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = (ev) => reject(new Error(errorText(ev)));
        ws.onclose = (ev) => reject(new Error(`closed (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`));
      });
    } catch (e) {
      const closed = this.closedWhileConnecting;
      await this.shutdown();
      if (closed) throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting');
      throw new SightlineError('ERR_SIGHTLINE_NET_CONNECT', `cannot open a WebSocket to ${url}: ${(e as Error).message}`);
    }
    ws.onmessage = (ev) => {
      const d = ev.data;
      // A text frame is not sightline: counted as malformed (an empty message).
      this.receive(d instanceof ArrayBuffer ? new Uint8Array(d) : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : new Uint8Array(0));
    };
    ws.onerror = (ev) => this.channelError(new Error(errorText(ev)));
    ws.onclose = (ev) => this.channelClosed(`code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''}`);
    if (this.closedWhileConnecting) throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting');
    return this.handshake(url);
  }

  /** Bytes the socket holds unsent (its `bufferedAmount`); 0 when closed. */
  get bufferedAmount(): number {
    return this.#ws?.bufferedAmount ?? 0;
  }

  protected channelCanSend(): boolean {
    const ws = this.#ws;
    return ws !== undefined && ws.readyState === OPEN && ws.bufferedAmount <= this.#maxBuffered;
  }

  protected channelSend(bytes: Uint8Array): boolean {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== OPEN) return false;
    try {
      ws.send(bytes);
      return true;
    } catch (e) {
      this.channelError(e as Error);
      return false;
    }
  }

  protected channelClose(): Promise<void> {
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws !== undefined) {
      ws.onopen = ws.onmessage = ws.onerror = null;
      ws.onclose = null;
      try {
        ws.close(1000, 'closed');
      } catch {
        // already closed
      }
    }
    return Promise.resolve();
  }
}

function errorText(ev: unknown): string {
  const m = (ev as { message?: unknown; error?: { message?: unknown } } | null)?.message ?? (ev as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof m === 'string' && m !== '' ? m : 'WebSocket error';
}
