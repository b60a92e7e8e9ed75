// The options and counters of a UdpServer (udp-server.ts), and the defaults both of its data paths share.
import { SESSION_SERVER_OPTIONS, type SessionServerOptions } from './session-host.js';
import type { SessionCounters } from './transport.js';

export interface UdpServerOptions extends SessionServerOptions {
  /** Address to bind: an IP literal of the socket's family or a host name. Default `'0.0.0.0'` (`'::'` for udp6). */
  address?: string;
  /** Port to bind; 0 picks a free one (see `UdpServer.port`). Default 0. */
  port?: number;
  /** Socket family. Default `'udp4'`. */
  type?: 'udp4' | 'udp6';
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
  /**
   * SO_SNDBUF, bytes (the OS may cap or double it; on Linux the cap is net.core.wmem_max).
   * Default: the OS default on the dgram path; 4 MiB on the native path, whose threads hand the
   * kernel a whole tick's packets at once.
   */
  sendBufferSize?: number;
  /**
   * `'native'` (Linux; the default where the addon has it): the addon owns the socket; a `world`
   * that is a World takes the ACKs natively (before each pass) and sends its own packets from the
   * pool's threads after each pass, with sendmmsg; a receive thread reads with recvmmsg and hands
   * JavaScript the handshake, BYE and input in batches. `'dgram'`: node:dgram, one send per packet
   * on the JavaScript thread (every platform). See docs/transport.md, "Native data path".
   * `maxInFlightSends` and `maxQueuedSends` bound the dgram path only; the native path drops what
   * the kernel's send buffer cannot take (`packetsDropped`).
   */
  dataPath?: 'native' | 'dgram';
}

/** Counters of a {@link UdpServer}. */
export interface UdpServerCounters extends SessionCounters {
  /** Control datagrams sent (CHALLENGE, WELCOME, REFUSE, BYE, PING). */
  controlSent: number;
  /** Control datagrams not sent: the send cap was reached. */
  controlDropped: number;
  /** Errors the socket emitted. */
  socketErrors: number;
  /** Native path: datagrams its receive thread could not hand to JavaScript (the batch waiting there was full): dropped. */
  receiveDropped: number;
}

/** The receive buffer a server asks for unless told otherwise (see UdpServerOptions.recvBufferSize). */
export const DEFAULT_RECV_BUFFER_BYTES = 4 << 20;
export const SERVER_OPTIONS: readonly string[] = [
  ...SESSION_SERVER_OPTIONS, 'address', 'port', 'type', 'maxInFlightSends', 'maxQueuedSends', 'recvBufferSize', 'sendBufferSize',
  'dataPath',
];
