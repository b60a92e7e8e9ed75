// The UDP transport, client side: the session client (client-session.ts) on a node:dgram socket
// connected to the server.
import dgram from 'node:dgram';
import { SightlineError, describe } from '../errors.js';
import type { PacketLayoutConfig } from '../decode.js';
import type { EntityId } from '../world.js';
import { SESSION_CLIENT_OPTIONS, SessionClient, type SessionClientCounters, type SessionClientOptions } from './client-session.js';
import { intOption } from './options.js';
import { checkAddress, lookupLiteral } from './udp-common.js';

export type { ClientDisconnectReason } from './client-session.js';

export interface UdpClientOptions extends SessionClientOptions {
  /** Sends waiting in the socket queue, at most; an ACK or unreliable input beyond it is dropped. Default 64. */
  maxQueuedSends?: number;
  /** Socket family. Default `'udp4'`. */
  type?: 'udp4' | 'udp6';
  /** Local address to bind: an IP literal of the socket's family or a host name. Default: any. */
  bindAddress?: string;
}

/** Counters of a {@link UdpClient}. */
export type UdpClientCounters = SessionClientCounters;

const CLIENT_OPTIONS: readonly string[] = [...SESSION_CLIENT_OPTIONS, 'maxQueuedSends', 'type', 'bindAddress'];

/**
 * UDP transport, client side, wrapping a {@link ClientWorld}.
 *
 * ```ts
 * const client = new UdpClient({ onSpawn, onUpdate, onDespawn });
 * const avatar = await client.connect('127.0.0.1', 7777, config.protocolHash);
 * client.sendInput(moveBytes);                 // latest wins
 * client.sendInput(chatBytes, 'reliable');     // once each, in order
 * // client.world.entities: what this client perceives
 * await client.close();
 * ```
 */
export class UdpClient extends SessionClient {
  readonly #maxQueued: number;
  readonly #type: 'udp4' | 'udp6';
  readonly #bindAddress: string | undefined;
  #socket: dgram.Socket | undefined;

  /**
   * @param options `undefined` or `null`: every option takes its default
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an ordinary object, an option out of range,
   *   a listener not a function, a bindAddress that is neither an IP literal of the family nor a
   *   host name), ERR_SIGHTLINE_UNKNOWN_OPTION (a plain object with a key that is not an option; an
   *   instance of a class, a listener with fields of its own, is not checked for them).
   */
  constructor(options?: UdpClientOptions | null) {
    super('UdpClient', options, CLIENT_OPTIONS);
    const o = options ?? {};
    this.#maxQueued = intOption('maxQueuedSends', o.maxQueuedSends, 64, 0, 1 << 20);
    const type = o.type ?? 'udp4';
    if (type !== 'udp4' && type !== 'udp6') {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `type must be 'udp4' or 'udp6', received ${describe(type)}`);
    }
    this.#type = type;
    this.#bindAddress = o.bindAddress === undefined ? undefined : checkAddress('bindAddress', o.bindAddress, type);
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
   * Joins a server: HELLO, the CHALLENGE's cookie back, until a WELCOME or REFUSE answers
   * (repeated every `helloIntervalMs`). Resolves with the avatar's entity id.
   *
   * @param host server address or name
   * @param port server UDP port
   * @param protocol the server's WorldConfig (its `protocolHash` and packet layout: needed when its
   *   packets carry fast fields or attributes), or its protocol hash alone (u32; the WELCOME then
   *   gives the position layout); the server refuses another hash
   * @param options `connectToken`: opaque bytes from the game's backend (at most 1,024), handed to
   *   the server's `onConnect`
   * @throws (rejects) ERR_SIGHTLINE_NET_REFUSED_PROTOCOL_HASH, ERR_SIGHTLINE_NET_REFUSED_VERSION,
   *   ERR_SIGHTLINE_NET_REFUSED_NET_VERSION, ERR_SIGHTLINE_NET_REFUSED_SERVER_FULL,
   *   ERR_SIGHTLINE_NET_REFUSED_REJECTED, ERR_SIGHTLINE_NET_REFUSED_CLOSING, ERR_SIGHTLINE_NET_REFUSED
   *   (the server's REFUSE, with its reason in the message); ERR_SIGHTLINE_NET_CONNECT_TIMEOUT (no
   *   answer); ERR_SIGHTLINE_NET_CONNECT (the socket could not bind or connect);
   *   ERR_SIGHTLINE_NET_PROTOCOL_HASH (the WELCOME carries another hash); ERR_SIGHTLINE_NET_LAYOUT_UNKNOWN
   *   (given a hash alone, the server's packets carry fields or attributes); ERR_SIGHTLINE_NET_CLOSED
   *   (closed while connecting); ERR_SIGHTLINE_NET_STATE (connect called twice);
   *   ERR_SIGHTLINE_INVALID_ARGUMENT (a bad host, port, hash or connect token).
   */
  async connect(
    host: string,
    port: number,
    protocol: number | (PacketLayoutConfig & { readonly protocolHash: number }),
    options?: { connectToken?: Uint8Array },
  ): Promise<EntityId> {
    if (this.state === 'idle') {
      if (typeof host !== 'string' || host === '') {
        throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `host must be a non-empty string, received ${describe(host)}`);
      }
      intOption('port', port, 0, 1, 65535);
    }
    this.beginConnect(protocol, options);
    const socket = dgram.createSocket({ type: this.#type, lookup: lookupLiteral });
    this.#socket = socket;
    socket.on('message', (m: Buffer) => this.receive(m));
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.once('close', () => reject(new Error('socket closed')));
        socket.bind({ address: this.#bindAddress, port: 0 }, () => {
          // A name that does not resolve fails here (ENOTFOUND), not as a timeout later.
          socket.connect(port, host, (err?: Error) => {
            socket.off('error', reject);
            if (err) reject(err);
            else resolve();
          });
        });
      });
    } catch (e) {
      const closed = this.closedWhileConnecting;
      await this.shutdown();
      if (closed) throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting');
      throw new SightlineError('ERR_SIGHTLINE_NET_CONNECT', `cannot open a UDP socket to ${host}:${port}: ${(e as Error).message}`);
    }
    socket.on('error', (e: Error) => this.channelError(e));
    if (this.closedWhileConnecting) throw new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the client was closed while connecting');
    return this.handshake(`${host}:${port}`);
  }

  protected channelCanSend(): boolean {
    const s = this.#socket;
    return s !== undefined && s.getSendQueueCount() < this.#maxQueued;
  }

  protected channelSend(bytes: Uint8Array): boolean {
    const s = this.#socket;
    if (s === undefined) return false;
    try {
      s.send(bytes, this.#afterSend);
      return true;
    } catch (e) {
      this.channelError(e as Error);
      return false;
    }
  }

  readonly #afterSend = (err: Error | null): void => {
    if (err) this.sendFailed(err);
  };

  protected channelClose(): Promise<void> {
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
}
