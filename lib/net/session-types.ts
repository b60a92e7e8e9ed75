// The server side of the session protocol, its shapes: what a server adapter with sessions takes
// as options, where a client is, and one client's session (session-host.ts uses them).
import type { WorldConfig } from '../config.js';
import type { EntityId } from '../world.js';
import type { SessionToken } from './cookie.js';
import type { InputReceiver } from './input.js';
import type { TransportListener } from './transport.js';

/** The configuration fields a server announces in WELCOME. A {@link WorldConfig} qualifies. */
export type ServerLayout = Pick<WorldConfig, 'protocolHash' | 'regionRaw' | 'verticalRaw' | 'quantShift' | 'payloadBytes'> & {
  readonly input?: { readonly tickHz?: number };
};

/** Options every server adapter with sessions takes (UdpServer, WsServer); they double as its listener. */
export interface SessionServerOptions extends TransportListener {
  /** The world's configuration: its protocol hash gates the handshake, its layout goes in WELCOME. */
  config: ServerLayout;
  /**
   * The World (or any object with `acknowledge(viewer, ack, ackBits)`): every accepted ACK is passed
   * to its `acknowledge` (after `onAck`). Without it, acks reach `onAck` only. An object without an
   * `acknowledge` method, or whose `config.protocolHash` differs from `config`'s, is refused.
   */
  world?: { acknowledge(viewer: EntityId, ack: number, ackBits: number): unknown; readonly config?: { readonly protocolHash?: number } };
  /** Most connected clients; a HELLO beyond it is refused (SERVER_FULL). Default 4096. */
  maxClients?: number;
  /** A client heard from for no longer than this is disconnected ('timeout'), ms. Default 5000. */
  timeoutMs?: number;
  /** A client sent nothing for this long gets a PING, ms; 0 disables. Default 1000. */
  keepaliveMs?: number;
  /** Largest input payload taken, bytes (0 to 1,024; announced in WELCOME). Default 256. */
  maxInputBytes?: number;
  /** Inputs a client may send per second on average (both kinds, resends included). Default 240. */
  inputRate?: number;
  /** Inputs a client may send at once above that rate. Default 64. */
  inputBurst?: number;
  /** The cookie secret rotates this often; a cookie lives one to two periods, ms. Default 10000. */
  cookieLifetimeMs?: number;
}

/** The option keys of {@link SessionServerOptions}. */
export const SESSION_SERVER_OPTIONS: readonly string[] = [
  'config', 'world', 'maxClients', 'timeoutMs', 'keepaliveMs', 'maxInputBytes', 'inputRate', 'inputBurst', 'cookieLifetimeMs',
  'onConnect', 'onDisconnect', 'onAck', 'onInput', 'onError',
];
/** The listener callbacks a server's options may hold. */
export const SERVER_CALLBACKS: readonly string[] = ['onConnect', 'onDisconnect', 'onAck', 'onInput', 'onError'];

/** Where a client is, as an adapter knows it: at least its address and port. */
export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

/** One client's session. */
export interface Session<P extends Endpoint = Endpoint> {
  readonly key: string;
  readonly peer: P;
  readonly viewer: EntityId;
  readonly nonce: number;
  readonly welcome: Uint8Array;
  readonly token: SessionToken;
  readonly input: InputReceiver;
  heardAt: number;
  sentAt: number;
  /** Sequence (u16) of the newest game packet sent; -1 before the first. */
  lastSequence: number;
  /** Acks this client may still have passed on. */
  ackCredit: number;
  /** Inputs this client may still have passed on (a token bucket), and when it was last filled, ms. */
  inputCredit: number;
  inputAt: number;
}
