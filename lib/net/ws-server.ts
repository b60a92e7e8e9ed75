// The WebSocket transport, server side (the `ws` package): the session protocol of UDP over
// binary frames, one message a frame, for browsers. A client whose socket is backed up misses
// the tick's packet (the engine takes it as lost through the acks), so a slow client gets the
// freshest state when it catches up, never a backlog.
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { SightlineError, describe } from '../errors.js';
import type { EntityId } from '../world.js';
import { ByeReason, MAX_CLIENT_MESSAGE_BYTES } from './control-types.js';
import { checkListenerOptions, intOption, nowMs } from './options.js';
import { SERVER_CALLBACKS, SESSION_SERVER_OPTIONS, SessionHost, type Session, type SessionServerOptions } from './session-host.js';
import { sendOneVia, sendTickVia, type RouteHooks, type RouteScratch } from './tick-route.js';
import { checkPacketBytes, checkTickPackets, zeroSessionCounters, type SessionCounters, type TickPackets, type Transport } from './transport.js';
import { endpointKey } from './udp-common.js';

export interface WsServerOptions extends SessionServerOptions {
  /**
   * An HTTP or HTTPS server to take upgrade requests from (its port, its TLS). Without it the
   * WsServer makes an HTTP server of its own on `host` and `port`.
   */
  server?: HttpServer | HttpsServer;
  /** Port of a server of its own; 0 picks a free one. Default 0. Not with `server`. */
  port?: number;
  /** Address a server of its own binds: an IP literal or a host name. Default `'0.0.0.0'`. Not with `server`. */
  host?: string;
  /** Only upgrade requests for this path (e.g. `'/sightline'`) are taken; others are left to other handlers. Default: every path. */
  path?: string;
  /**
   * A client whose socket holds more than this many bytes not yet written (its `bufferedAmount`:
   * what the kernel has not taken) is skipped for the tick: its packet is not sent. Default 16384.
   */
  maxBufferedBytes?: number;
  /** Connections without a session (handshake not finished), at most; more are closed at once (code 1013). Default 256. */
  maxPendingConnections?: number;
}

/** Counters of a {@link WsServer}. */
export interface WsServerCounters extends SessionCounters {
  /** Control messages sent (CHALLENGE, WELCOME, REFUSE, BYE, PING). */
  controlSent: number;
  /** Control messages not sent: the connection was closing or backed up. */
  controlDropped: number;
  /** Errors the sockets or the server emitted. */
  socketErrors: number;
  /** Game packets skipped because the client's socket was backed up (counted in `packetsDropped` too). */
  packetsBackedUp: number;
  /** WebSocket connections accepted. */
  connections: number;
  /** Connections closed at once: `maxPendingConnections` were waiting for their handshake. */
  connectionsRefused: number;
  /** Connections closed because they had no session `timeoutMs` after they opened. */
  connectionsTimedOut: number;
}

const WS_OPTIONS: readonly string[] = [...SESSION_SERVER_OPTIONS, 'server', 'port', 'host', 'path', 'maxBufferedBytes', 'maxPendingConnections'];
const OPEN = 1;
// How long close() lets clients read their BYE before it cuts the connections, ms.
const CLOSE_GRACE_MS = 500;

/** A connection, as the session code sees it. */
interface Connection {
  readonly address: string;
  readonly port: number;
  readonly key: string;
  readonly ws: WebSocket;
  readonly openedAt: number;
  /** Its session ended and the connection is closing (after the BYE). */
  closing: boolean;
}

/**
 * WebSocket transport, server side: the same handshake, tokens, acks and input as
 * {@link UdpServer}, carried in binary frames.
 *
 * ```ts
 * const server = new WsServer({ config, world, port: 8080, onConnect, onDisconnect, onInput });
 * await server.listen();
 * for (;;) { await sleepUntilNextTick(); server.sendTick(await world.tick()); }
 * ```
 */
export class WsServer implements Transport {
  readonly #host: SessionHost<Connection>;
  readonly #given: HttpServer | HttpsServer | undefined;
  readonly #bindHost: string;
  readonly #requestedPort: number;
  readonly #path: string | undefined;
  readonly #maxBuffered: number;
  readonly #maxPending: number;
  readonly #wss: WebSocketServer;
  readonly #connections = new Set<Connection>();
  readonly #counters: WsServerCounters = {
    ...zeroSessionCounters(),
    controlSent: 0,
    controlDropped: 0,
    socketErrors: 0,
    packetsBackedUp: 0,
    connections: 0,
    connectionsRefused: 0,
    connectionsTimedOut: 0,
  };
  #http: HttpServer | HttpsServer | undefined;
  #state: 'idle' | 'binding' | 'listening' | 'closing' | 'closed' = 'idle';
  #sweepTimer: ReturnType<typeof setInterval> | undefined;
  #port = 0;
  // Per-tick scratch and what sendTickVia asks of this adapter: a backed-up or closing client is
  // skipped; every frame is taken (ws queues it).
  readonly #route: RouteScratch<Connection> = { sessions: [], views: [] };
  readonly #routeHooks: RouteHooks<Connection> = {
    ready: (s) => this.#ready(s.peer.ws),
    canSend: () => true,
    issue: (copy, s) => this.#frame(s.peer, copy),
  };

  /**
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object; what UdpServer refuses; server
   *   not an HTTP server; port or host given with server; host neither an IP literal nor a host
   *   name; path not a string starting with '/'; a limit out of range), ERR_SIGHTLINE_UNKNOWN_OPTION.
   */
  constructor(options: WsServerOptions) {
    checkListenerOptions('WsServer', options, WS_OPTIONS, SERVER_CALLBACKS);
    this.#host = new SessionHost('WsServer', options, this.#counters, this.#sendControl, this.#ended);
    const server: unknown = options.server;
    if (server !== undefined) {
      if (typeof server !== 'object' || server === null || typeof (server as HttpServer).on !== 'function' || typeof (server as HttpServer).listen !== 'function') {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `server must be an http.Server or https.Server, received ${describe(server)}`);
      }
      if (options.port !== undefined || options.host !== undefined) {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', 'port and host belong to a server of its own: give either server, or port and host');
      }
    }
    this.#given = options.server;
    const host = options.host ?? '0.0.0.0';
    if (typeof host !== 'string' || (isIP(host) === 0 && !/^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(host))) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `host must be an IP address or a host name ('0.0.0.0' for every interface), received ${describe(options.host)}`);
    }
    this.#bindHost = host;
    this.#requestedPort = intOption('port', options.port, 0, 0, 65535);
    if (options.path !== undefined && (typeof options.path !== 'string' || !options.path.startsWith('/'))) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `path must be a string starting with '/', received ${describe(options.path)}`);
    }
    this.#path = options.path;
    this.#maxBuffered = intOption('maxBufferedBytes', options.maxBufferedBytes, 16384, 0, 2 ** 31 - 1);
    this.#maxPending = intOption('maxPendingConnections', options.maxPendingConnections, 256, 1, 1 << 20);
    // noServer: the upgrade routing (by path) is ours, so that other handlers on the same HTTP
    // server keep their own paths.
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_MESSAGE_BYTES, perMessageDeflate: false, clientTracking: false });
    this.#wss.on('error', this.#onError);
  }

  /**
   * Starts taking connections: on the given server (resolving once it listens), or on a server of
   * its own bound to host and port. Resolves with the port.
   * @throws ERR_SIGHTLINE_NET_STATE (already listening or closed), ERR_SIGHTLINE_NET_BIND (the OS
   *   refused the bind), ERR_SIGHTLINE_NET_CLOSED (close() was called before the bind completed).
   */
  listen(): Promise<{ port: number }> {
    if (this.#state !== 'idle') {
      return Promise.reject(new SightlineError('ERR_SIGHTLINE_NET_STATE', `listen() needs a new server, this one is ${this.#state}`));
    }
    this.#state = 'binding';
    // A server of its own gives a connection timeoutMs to send its request's headers (Node's default
    // is 60 s), so sockets that never finish their upgrade request do not pile up before
    // maxPendingConnections can see them. A given server keeps its own limits.
    const http =
      this.#given ??
      createServer(
        { headersTimeout: this.#host.timeoutMs, requestTimeout: this.#host.timeoutMs, connectionsCheckingInterval: this.#host.sweepPeriodMs },
        (_req, res) => res.writeHead(426, { 'content-type': 'text/plain' }).end('a sightline WebSocket endpoint: connect with a WebSocket\n'),
      );
    this.#http = http;
    http.on('upgrade', this.#onUpgrade);
    return new Promise((resolve, reject) => {
      const started = () => {
        http.off('error', failed);
        if (this.#state !== 'binding') {
          reject(new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the server was closed before listen() had bound it'));
          return;
        }
        this.#state = 'listening';
        const a = http.address();
        this.#port = typeof a === 'object' && a !== null ? a.port : 0;
        this.#sweepTimer = setInterval(this.#sweep, this.#host.sweepPeriodMs);
        this.#sweepTimer.unref();
        resolve({ port: this.#port });
      };
      const failed = (e: Error) => {
        http.off('listening', started);
        http.off('upgrade', this.#onUpgrade);
        this.#state = 'closed';
        reject(new SightlineError('ERR_SIGHTLINE_NET_BIND', `cannot listen on ${endpointKey(this.#bindHost, this.#requestedPort)}: ${e.message}`));
      };
      if (this.#given !== undefined && this.#given.listening) {
        started();
        return;
      }
      http.once('listening', started);
      if (this.#given === undefined) {
        http.once('error', failed);
        http.listen(this.#requestedPort, this.#bindHost);
      }
    });
  }

  /** The port connections are taken on (0 before `listen` resolves). */
  get port(): number {
    return this.#port;
  }

  get clientCount(): number {
    return this.#host.byViewer.size;
  }

  /** Running totals (live object). */
  get counters(): Readonly<WsServerCounters> {
    return this.#counters;
  }

  /** Malformed messages by decoder error code (live object; `ERR_SIGHTLINE_NET_TEXT_FRAME` for text frames). */
  get malformedCodes(): Readonly<Record<string, number>> {
    return this.#host.malformedCodes;
  }

  has(viewer: EntityId): boolean {
    return this.#host.byViewer.has(viewer);
  }

  /** The client key (`address:port` of its TCP connection) of a viewer's client, or undefined. */
  clientKeyOf(viewer: EntityId): string | undefined {
    return this.#host.byViewer.get(viewer)?.key;
  }

  /** Viewers with a connected client. */
  viewers(): IterableIterator<EntityId> {
    return this.#host.byViewer.keys();
  }

  /** Bytes a viewer's socket holds that the kernel has not taken yet (its `bufferedAmount`), or undefined. */
  bufferedAmountOf(viewer: EntityId): number | undefined {
    return this.#host.byViewer.get(viewer)?.peer.ws.bufferedAmount;
  }

  /**
   * Sends each packet of a tick to its viewer's client, one binary frame each. The bytes are
   * copied into one buffer per tick (a queued frame may outlive the engine's) and each copy's
   * header bytes 8..11 get the session's input acknowledgement. A client whose socket holds more
   * than `maxBufferedBytes` is skipped (`packetsBackedUp`, `packetsDropped`): the engine takes
   * that packet as lost through the acks, so what it carried is resent, up to date. Viewers
   * without a client are skipped (`packetsUnrouted`). Returns the number of packets sent.
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
    return sendTickVia(this.#host, result, this.#route, this.#routeHooks);
  }

  /**
   * Sends one game packet (copied; its header bytes 8..11 get the input acknowledgement) to a
   * viewer's client. False when not sent: no client (`packetsUnrouted`), or its socket backed up
   * or closing (`packetsDropped`).
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT when bytes is not a packet (16 to 65,507 bytes, version byte first).
   */
  send(viewer: EntityId, bytes: Uint8Array): boolean {
    checkPacketBytes(bytes);
    return sendOneVia(this.#host, viewer, bytes, this.#state === 'listening', this.#routeHooks);
  }

  /** Ends a viewer's session: BYE (KICKED), the connection closed, `onDisconnect(viewer, 'kicked')`. False when none. */
  disconnect(viewer: EntityId): boolean {
    const s = this.#host.byViewer.get(viewer);
    if (s === undefined) return false;
    this.#host.end(s, 'kicked', ByeReason.KICKED);
    return true;
  }

  /**
   * Says BYE (SHUTDOWN) to every client, reports each as `onDisconnect(viewer, 'closed')`, closes
   * every connection (cut after a short grace for the BYE to go out), and closes the HTTP server
   * if it is its own (a given server is left listening). Idempotent.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed' || this.#state === 'closing') return;
    const wasOpen = this.#state === 'listening';
    this.#state = 'closing';
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
    this.#http?.off('upgrade', this.#onUpgrade);
    this.#host.endAll('closed', wasOpen ? ByeReason.SHUTDOWN : undefined);
    for (const conn of this.#connections) conn.ws.close(1001, 'server shutting down');
    const end = nowMs() + CLOSE_GRACE_MS;
    while (this.#connections.size > 0 && nowMs() < end) await new Promise((r) => setTimeout(r, 10));
    for (const conn of this.#connections) conn.ws.terminate();
    this.#wss.close();
    const own = this.#given === undefined ? this.#http : undefined;
    if (own !== undefined && own.listening) {
      await new Promise<void>((resolve) => {
        own.close(() => resolve());
        (own as HttpServer).closeAllConnections?.();
      });
    }
    this.#state = 'closed';
  }

  // ---------------------------------------------------------------------------------------------

  // Whether a client's socket takes a packet now; if not, the packet is counted as dropped (and
  // as backed up when the socket is open but holds more than maxBufferedBytes).
  #ready(ws: WebSocket): boolean {
    if (ws.readyState === OPEN && ws.bufferedAmount <= this.#maxBuffered) return true;
    const c = this.#counters;
    if (ws.readyState === OPEN) c.packetsBackedUp++;
    c.packetsDropped++;
    return false;
  }

  #frame(conn: Connection, bytes: Uint8Array): void {
    try {
      conn.ws.send(bytes, { binary: true });
    } catch (e) {
      this.#counters.sendErrors++;
      this.#host.report(e);
    }
  }

  readonly #sendControl = (bytes: Uint8Array, conn: Connection): void => {
    const ws = conn.ws;
    if (ws.readyState !== OPEN || ws.bufferedAmount > this.#maxBuffered) {
      this.#counters.controlDropped++;
      return;
    }
    this.#frame(conn, bytes);
    this.#counters.controlSent++;
  };

  // A session that ends closes its connection (after its BYE), unless a new session on the same
  // connection replaced it or the connection is gone already.
  readonly #ended = (s: Session<Connection>, reason: string): void => {
    if (reason === 'replaced' || reason === 'disconnected') return;
    s.peer.closing = true;
    s.peer.ws.close(1000, reason);
  };

  readonly #onError = (e: Error): void => {
    this.#counters.socketErrors++;
    this.#host.report(e);
  };

  // A connection's error. What its peer can cause at will is counted and not reported (onError is
  // the operator's, and a hostile client must not be able to flood it): a frame breaking the
  // WebSocket protocol or over maxPayload (ws's WS_ERR_* codes; the connection closes, 1002 or
  // 1009) is malformed, tallied under ws's code; a reset or broken connection is a socket error.
  readonly #onConnectionError = (e: Error): void => {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (code.startsWith('WS_ERR_')) {
      this.#counters.malformed++;
      const codes = this.#host.malformedCodes;
      codes[code] = (codes[code] ?? 0) + 1;
    } else if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT') {
      this.#counters.socketErrors++;
    } else {
      this.#onError(e);
    }
  };

  readonly #onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (this.#path !== undefined) {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== this.#path) return; // another handler's
    }
    if (this.#state !== 'listening') {
      socket.destroy();
      return;
    }
    try {
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onConnection(ws, req));
    } catch (e) {
      this.#onError(e as Error);
      socket.destroy();
    }
  };

  #onConnection(ws: WebSocket, req: IncomingMessage): void {
    const c = this.#counters;
    c.connections++;
    let pending = 0;
    for (const conn of this.#connections) if (!conn.closing && !this.#host.byKey.has(conn.key)) pending++;
    if (pending >= this.#maxPending) {
      c.connectionsRefused++;
      ws.close(1013, 'too many connections waiting for their handshake');
      return;
    }
    const address = req.socket.remoteAddress ?? '';
    const port = req.socket.remotePort ?? 0;
    const conn: Connection = { address, port, key: endpointKey(address, port), ws, openedAt: nowMs(), closing: false };
    this.#connections.add(conn);
    ws.on('message', (data: RawData, isBinary: boolean) => this.#onMessage(conn, data, isBinary));
    ws.on('error', this.#onConnectionError);
    ws.on('close', () => {
      this.#connections.delete(conn);
      const s = this.#host.byKey.get(conn.key);
      if (s !== undefined && s.peer === conn) this.#host.end(s, 'disconnected', undefined);
    });
  }

  #onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    const c = this.#counters;
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    c.datagramsReceived++;
    c.bytesReceived += bytes.length;
    if (this.#state !== 'listening') return;
    if (!isBinary) {
      c.malformed++;
      const codes = this.#host.malformedCodes;
      codes.ERR_SIGHTLINE_NET_TEXT_FRAME = (codes.ERR_SIGHTLINE_NET_TEXT_FRAME ?? 0) + 1;
      return;
    }
    try {
      this.#host.handle(bytes, conn.key, conn);
    } catch (e) {
      c.listenerErrors++;
      this.#host.report(e);
    }
  }

  readonly #sweep = (): void => {
    const now = nowMs();
    this.#host.sweep(now);
    for (const conn of this.#connections) {
      if (!conn.closing && !this.#host.byKey.has(conn.key) && now - conn.openedAt > this.#host.timeoutMs) {
        this.#counters.connectionsTimedOut++;
        this.#connections.delete(conn); // its close event comes later
        conn.ws.terminate();
      }
    }
  };
}
