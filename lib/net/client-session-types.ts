// The client side of the session protocol, its shapes: the options every session client takes
// (UdpClient, WsClient), its counters, why a session ends (client-session.ts uses them).
// Browser-safe: imports nothing from Node.
import type { ClientWorld, ClientWorldOptions, ReceiveStatus } from './client-world.js';

/** Why a connected client's session ended without `close()`. */
export type ClientDisconnectReason =
  /** The server sent BYE; its reason is the second argument (a {@link ByeReason}). */
  | 'bye'
  /** Nothing was heard from the server within `serverTimeoutMs`. */
  | 'timeout'
  /** The connection closed without a BYE (a connection-oriented channel: WebSocket). */
  | 'closed';

/**
 * Options every session client takes (UdpClient, WsClient); they double as its listener. The
 * world's listeners are ClientWorld's (onSpawn, onUpdate, onDespawn, onKind, onAttributes, and
 * onEvent: each reliable event once, in order).
 */
export interface SessionClientOptions extends Pick<ClientWorldOptions, 'onSpawn' | 'onUpdate' | 'onDespawn' | 'onKind' | 'onAttributes' | 'onEvent'> {
  /** After each game packet: how the world took it. */
  onPacket?: (status: ReceiveStatus, world: ClientWorld) => void;
  /** The session ended from the server's side (or the connection was lost); the channel is closed. */
  onDisconnect?: (reason: ClientDisconnectReason, byeReason?: number) => void;
  /** A listener threw, or the channel reported an error. */
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
  /** Reliable inputs kept until acknowledged, at most; `sendInput` beyond it throws ERR_SIGHTLINE_NET_INPUT_QUEUE_FULL. Default 256. */
  maxReliableInputs?: number;
  /** An unacknowledged reliable input is sent again after this long, ms. Default 100. */
  inputResendMs?: number;
}

/** The option keys of {@link SessionClientOptions}. */
export const SESSION_CLIENT_OPTIONS: readonly string[] = [
  'onSpawn', 'onUpdate', 'onDespawn', 'onKind', 'onAttributes', 'onEvent', 'onPacket', 'onDisconnect', 'onError', 'ackIntervalMs',
  'helloIntervalMs',
  'connectTimeoutMs', 'serverTimeoutMs', 'keepaliveMs', 'maxLateness', 'maxReliableInputs', 'inputResendMs',
];
export const CLIENT_CALLBACKS: readonly string[] = [
  'onSpawn', 'onUpdate', 'onDespawn', 'onKind', 'onAttributes', 'onEvent', 'onPacket', 'onDisconnect', 'onError',
];

/** Counters of a session client. */
export interface SessionClientCounters {
  /** Messages received (datagrams, or WebSocket frames). */
  datagramsReceived: number;
  bytesReceived: number;
  /** Game packets handed to the world (see the world's counters for what it did with them). */
  gamePackets: number;
  /** Messages that were not well formed, or not one a client expects. */
  malformed: number;
  /** Game packets that arrived before the WELCOME: dropped. */
  early: number;
  helloSent: number;
  /** CHALLENGEs taken (each makes the HELLO carry its cookie). */
  challenges: number;
  acksSent: number;
  /** ACKs not sent: the channel's queue was at its cap. */
  acksDropped: number;
  pingsSent: number;
  /** Inputs sent for the first time (both kinds). */
  inputsSent: number;
  /** Reliable inputs sent again (not acknowledged within `inputResendMs`). */
  inputsResent: number;
  /** Reliable inputs the server acknowledged. */
  inputsAcked: number;
  /** Unreliable inputs not sent: the channel's queue was at its cap. */
  inputsDropped: number;
  /** BYE or PING from the server without this session's token: ignored. */
  badTokens: number;
  sendErrors: number;
  /** Errors the channel (socket) reported. */
  socketErrors: number;
  listenerErrors: number;
}
