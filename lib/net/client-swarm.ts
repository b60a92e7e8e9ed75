// UdpClientSwarm: thousands of light UDP clients in one process, for load tests on one machine
// (Linux, IPv4 loopback; the native ClientSwarm, native/net/swarm.h). The handshake (HELLO, the
// CHALLENGE's cookie, WELCOME and its token) runs here with the control messages of protocol.ts;
// game packets, sequence tracking and ACKs run on the swarm's native threads, with no JavaScript
// call per packet. Sample clients also keep a ClientWorld of what they believe. The clients send
// no input.
import { native, type NativeSwarm } from '../binding.js';
import type { PacketLayoutConfig } from '../decode.js';
import { SightlineError, describe } from '../errors.js';
import { connectProtocol } from './client-session.js';
import { ClientWorld } from './client-world.js';
import {
  MSG_BYE,
  MSG_CHALLENGE,
  MSG_REFUSE,
  MSG_WELCOME,
  encodeBye,
  encodeHello,
  encodePing,
  hex32,
  layoutOf,
  refuseError,
  tryDecodeControl,
  welcomeCarriesLayout,
  type WelcomeMessage,
} from './protocol.js';
import { checkListenerOptions, intOption } from './options.js';

/** Per-client counts of a {@link UdpClientSwarm} (also summed by {@link UdpClientSwarm.totals}). */
export interface SwarmClientCounters {
  datagramsReceived: number;
  bytesReceived: number;
  /** Game packets received while connected; of them applied, duplicates, stale (more than 32 older than the newest), malformed (header), reordered. */
  gamePackets: number;
  applied: number;
  duplicates: number;
  stale: number;
  malformed: number;
  reordered: number;
  acksSent: number;
  /** ACKs the kernel refused (no room in the socket buffer). */
  acksDropped: number;
  /** Reliable events delivered (clients that are not samples; a sample's are its ClientWorld's), repeats ignored, sequences skipped. */
  events: number;
  repeatedEvents: number;
  skippedEvents: number;
  /** Game packets before the client's WELCOME. */
  early: number;
  /** Server tick of the newest packet applied. */
  newestTick: number;
}

const COUNTER_FIELDS = [
  'datagramsReceived', 'bytesReceived', 'gamePackets', 'applied', 'duplicates', 'stale', 'malformed', 'reordered',
  'acksSent', 'acksDropped', 'events', 'repeatedEvents', 'skippedEvents', 'early', 'newestTick',
] as const satisfies readonly (keyof SwarmClientCounters)[];

if (native.swarmCounterFields !== undefined && native.swarmCounterFields.join() !== COUNTER_FIELDS.join()) {
  throw new Error(`sightline: the addon's swarm counters (${native.swarmCounterFields.join()}) are not this package's (rebuild the addon: npm run build)`);
}

export interface UdpClientSwarmOptions {
  /** Clients, 1 to 65,536. Client i sends from `firstAddress` + i. */
  clients: number;
  /** Source address of client 0, an IPv4 loopback address. Default `'127.1.0.1'`. */
  firstAddress?: string;
  /** Receive threads (one socket each). Default 1. */
  threads?: number;
  /** Clients that keep a ClientWorld (what they believe): client i is one when `sample(i)` says so. Default: none. */
  sample?: (client: number) => boolean;
  /** SO_RCVBUF of each socket, bytes (the kernel caps it at net.core.rmem_max × 2). Default 32 MiB. */
  recvBufferSize?: number;
  /** SO_SNDBUF, bytes. Default 4 MiB. */
  sendBufferSize?: number;
  /** A reliable event reached a client (each once, in order). */
  onEvent?(client: number, sequence: number, bytes: Uint8Array): void;
  /** The server ended a client's session (BYE). */
  onDisconnect?(client: number): void;
  /** A HELLO is repeated this often until answered, ms. Default 250. */
  helloIntervalMs?: number;
  /** A client not answered within this is failed, ms. Default 5000. */
  connectTimeoutMs?: number;
  /** A connected client that sent nothing for this long sends a PING, ms; 0 disables. Default 1000. */
  keepaliveMs?: number;
}

const OPTIONS = [
  'clients', 'firstAddress', 'threads', 'sample', 'recvBufferSize', 'sendBufferSize', 'onEvent', 'onDisconnect',
  'helloIntervalMs', 'connectTimeoutMs', 'keepaliveMs',
] as const;

interface Pending {
  nonce: number;
  protocolHash: number;
  /** The HELLO repeated until answered (with the CHALLENGE's cookie once one came). */
  hello: Uint8Array;
  resolve(avatar: number): void;
  reject(e: Error): void;
}

/** What {@link UdpClientSwarm.connect} resolves with. */
export interface SwarmConnectResult {
  connected: number;
  failed: number;
  /** The first few failures' messages. */
  errors: string[];
  ms: number;
}

/**
 * Many light UDP clients in one process (Linux): a load generator for a sightline UDP server on
 * the same machine. Each client has its own loopback source address, so the server sees one peer
 * per client; every game packet is acknowledged natively as `UdpClient` would, so the server's
 * engine is driven as by real clients.
 *
 * ```ts
 * const swarm = new UdpClientSwarm({ clients: 8192, sample: (i) => i % 128 === 0 });
 * const { connected } = await swarm.connect('127.0.0.1', port, config.protocolHash);
 * // ... swarm.totals(), swarm.worldOf(0).entities
 * await swarm.close();
 * ```
 * @throws ERR_SIGHTLINE_NET_UNAVAILABLE (not Linux), ERR_SIGHTLINE_INVALID_ARGUMENT, ERR_SIGHTLINE_UNKNOWN_OPTION,
 *   ERR_SIGHTLINE_NET_BIND (the sockets could not be opened).
 */
export class UdpClientSwarm {
  /** Whether this platform's addon has the client swarm (Linux). */
  static get supported(): boolean {
    return process.platform === 'linux' && native.NativeSwarm !== undefined;
  }

  readonly #options: UdpClientSwarmOptions;
  readonly #swarm: NativeSwarm;
  readonly #size: number;
  readonly #avatars: Int32Array;
  readonly #tokens: (Uint8Array | undefined)[];
  readonly #worlds = new Map<number, ClientWorld>();
  // The server's packet layout, when connect() was given its WorldConfig (else each WELCOME's).
  #layout: PacketLayoutConfig | undefined;
  readonly #pending = new Map<number, Pending>();
  readonly #counters: Float64Array;
  #lastAcks: Float64Array;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  #closed = false;
  #nonce = (Math.random() * 0x7fffffff) >>> 0;

  constructor(options: UdpClientSwarmOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `options must be an object, received ${describe(options)}`);
    }
    checkListenerOptions('UdpClientSwarm', options, OPTIONS, ['sample', 'onEvent', 'onDisconnect']);
    this.#size = intOption('clients', options.clients, 1, 1, 65536);
    const threads = intOption('threads', options.threads, 1, 1, 64);
    intOption('helloIntervalMs', options.helloIntervalMs, 250, 1, 60_000);
    intOption('connectTimeoutMs', options.connectTimeoutMs, 5000, 1, 3_600_000);
    intOption('keepaliveMs', options.keepaliveMs, 1000, 0, 3_600_000);
    const firstAddress = options.firstAddress ?? '127.1.0.1';
    if (typeof firstAddress !== 'string' || !/^127\.\d+\.\d+\.\d+$/.test(firstAddress)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `firstAddress must be an IPv4 loopback address (127.x.y.z), received ${describe(firstAddress)}`);
    }
    this.#options = options;
    this.#swarm = makeSwarm({
      clients: this.#size,
      firstAddress,
      threads,
      recvBufferBytes: intOption('recvBufferSize', options.recvBufferSize, 32 << 20, 1, 2 ** 31 - 1),
      sendBufferBytes: intOption('sendBufferSize', options.sendBufferSize, 4 << 20, 1, 2 ** 31 - 1),
      onBatch: () => this.#drain(),
    });
    this.#avatars = new Int32Array(this.#size).fill(-1);
    this.#tokens = new Array<Uint8Array | undefined>(this.#size);
    this.#counters = new Float64Array(this.#size * COUNTER_FIELDS.length);
    this.#lastAcks = new Float64Array(this.#size);
    this.#swarm.start();
  }

  /** Clients. */
  get size(): number {
    return this.#size;
  }

  /** The avatar (viewer) a connected client was given, or undefined. */
  avatarOf(client: number): number | undefined {
    const a = this.#avatars[client];
    return a === undefined || a < 0 ? undefined : a;
  }

  /** A sample client's world (what it believes), or undefined for a client that is not a sample or not connected. */
  worldOf(client: number): ClientWorld | undefined {
    return this.#worlds.get(client);
  }

  /** Sample clients that are connected. */
  samples(): IterableIterator<number> {
    return this.#worlds.keys();
  }

  /** The sockets' ports and the buffer sizes the kernel granted, bytes; datagrams for no client (strays). */
  info(): { ports: number[]; recvBuffer: number; sendBuffer: number; strays: number; batchDropped: number } {
    return this.#swarm.info();
  }

  /**
   * Connects every client to `host:port` (a numeric IPv4 address), `concurrency` handshakes at a
   * time. Resolves when each has been answered or timed out; failures are counted, not thrown.
   * `protocol`: the server's protocol hash (u32), or its WorldConfig (any packet layout with its
   * `protocolHash`), which the sample clients' ClientWorlds need when the server's packets carry
   * fast fields or attributes (as `UdpClient.connect`; given the hash alone, such a server's
   * WELCOME fails each client with ERR_SIGHTLINE_NET_LAYOUT_UNKNOWN).
   * @throws ERR_SIGHTLINE_NET_STATE (closed), ERR_SIGHTLINE_INVALID_ARGUMENT (a bad port, concurrency,
   *   hash or layout).
   */
  async connect(
    host: string,
    port: number,
    protocol: number | (PacketLayoutConfig & { readonly protocolHash: number }),
    concurrency = 256,
  ): Promise<SwarmConnectResult> {
    if (this.#closed) throw new SightlineError('ERR_SIGHTLINE_NET_STATE', 'connect() needs a swarm that is not closed');
    intOption('port', port, 0, 1, 65535);
    intOption('concurrency', concurrency, 256, 1, 65536);
    const { protocolHash, layout } = connectProtocol(protocol);
    this.#layout = layout;
    this.#swarm.aim(host, port);
    // Keepalives from the first WELCOME on: clients connected early would otherwise be silent until
    // the last handshake (seconds, with thousands), and their server would time them out.
    this.#startKeepalive();
    const started = performance.now();
    let next = 0;
    let connected = 0;
    let failed = 0;
    const errors: string[] = [];
    const worker = async (): Promise<void> => {
      while (next < this.#size && !this.#closed) {
        const i = next++;
        try {
          await this.#connectOne(i, protocolHash >>> 0);
          connected++;
        } catch (e) {
          failed++;
          if (errors.length < 5) errors.push(e instanceof SightlineError ? `${e.message} (${e.code})` : String(e));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, this.#size) }, worker));
    return { connected, failed, errors, ms: performance.now() - started };
  }

  /** Every client's counters, client after client (fields of {@link SwarmClientCounters}). */
  counters(): SwarmClientCounters[] {
    this.#swarm.counters(this.#counters);
    const out: SwarmClientCounters[] = [];
    const k = COUNTER_FIELDS.length;
    for (let i = 0; i < this.#size; i++) {
      const c = {} as SwarmClientCounters;
      COUNTER_FIELDS.forEach((f, j) => (c[f] = this.#counters[i * k + j]));
      out.push(c);
    }
    return out;
  }

  /** The counters summed over clients (newestTick: the largest). */
  totals(): SwarmClientCounters {
    const t = {} as SwarmClientCounters;
    for (const f of COUNTER_FIELDS) t[f] = 0;
    for (const c of this.counters()) {
      for (const f of COUNTER_FIELDS) t[f] = f === 'newestTick' ? Math.max(t[f], c[f]) : t[f] + c[f];
    }
    return t;
  }

  /** Says BYE for every connected client and closes the sockets (joining the threads). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#keepalive !== undefined) clearInterval(this.#keepalive);
    for (let i = 0; i < this.#size; i++) {
      const token = this.#tokens[i];
      if (this.#avatars[i] >= 0 && token !== undefined) this.#swarm.send(i, encodeBye(token));
    }
    for (const p of this.#pending.values()) p.reject(new SightlineError('ERR_SIGHTLINE_NET_CLOSED', 'the swarm was closed while connecting'));
    this.#pending.clear();
    this.#swarm.close();
  }

  #connectOne(i: number, protocolHash: number): Promise<number> {
    const nonce = (this.#nonce = (this.#nonce + 0x9e3779b1) >>> 0);
    const helloMs = this.#options.helloIntervalMs ?? 250;
    return new Promise<number>((resolve, reject) => {
      const timer = setInterval(() => {
        const p = this.#pending.get(i);
        if (p !== undefined) this.#swarm.send(i, p.hello);
      }, helloMs);
      const deadline = setTimeout(() => settle(new SightlineError('ERR_SIGHTLINE_NET_CONNECT_TIMEOUT', `client ${i}: no answer within ${this.#options.connectTimeoutMs ?? 5000} ms`)), this.#options.connectTimeoutMs ?? 5000);
      const settle = (r: number | Error): void => {
        clearInterval(timer);
        clearTimeout(deadline);
        this.#pending.delete(i);
        if (typeof r === 'number') resolve(r);
        else reject(r);
      };
      const hello = encodeHello({ protocolHash, nonce });
      this.#pending.set(i, { nonce, protocolHash, hello, resolve: settle, reject: settle });
      this.#swarm.send(i, hello);
    });
  }

  #welcome(i: number, m: WelcomeMessage, p: Pending): void {
    if (m.nonce !== p.nonce) return;
    if (m.protocolHash !== p.protocolHash) {
      p.reject(new SightlineError('ERR_SIGHTLINE_NET_PROTOCOL_HASH', `client ${i}: the server's WELCOME has protocol hash ${m.protocolHash}, not ${p.protocolHash}`));
      return;
    }
    if (this.#layout === undefined && !welcomeCarriesLayout(m)) {
      p.reject(
        new SightlineError(
          'ERR_SIGHTLINE_NET_LAYOUT_UNKNOWN',
          `client ${i}: the server's packets carry fast fields or attributes (protocol hash 0x${hex32(m.protocolHash)} is not its position layout's): pass its WorldConfig to connect(), not only the hash`,
        ),
      );
      return;
    }
    const sample = this.#options.sample?.(i) === true;
    if (sample) {
      const onEvent = this.#options.onEvent;
      this.#worlds.set(i, new ClientWorld(this.#layout ?? layoutOf(m), { payloadBytes: Math.max(16, m.payloadBytes), onEvent: onEvent && ((seq, bytes) => onEvent(i, seq, bytes)) }));
    }
    this.#avatars[i] = m.avatar;
    this.#tokens[i] = m.token;
    this.#swarm.setConnected(i, true, sample, m.token);
    p.resolve(m.avatar);
  }

  #startKeepalive(): void {
    const every = this.#options.keepaliveMs ?? 1000;
    if (every === 0 || this.#keepalive !== undefined || this.#closed) return;
    const k = COUNTER_FIELDS.length;
    const acksAt = COUNTER_FIELDS.indexOf('acksSent');
    this.#keepalive = setInterval(() => {
      this.#swarm.counters(this.#counters);
      for (let i = 0; i < this.#size; i++) {
        const acks = this.#counters[i * k + acksAt];
        const token = this.#tokens[i];
        if (this.#avatars[i] >= 0 && token !== undefined && acks === this.#lastAcks[i]) this.#swarm.send(i, encodePing(token));
        this.#lastAcks[i] = acks;
      }
    }, every);
    this.#keepalive.unref();
  }

  // The native threads' batch: control messages (handshake, BYE), sample packets, events.
  #drain(): void {
    if (this.#closed) return;
    const ab = this.#swarm.takeBatch();
    if (ab === null) return;
    const view = new DataView(ab);
    let at = 0;
    while (at + 12 <= ab.byteLength) {
      const kind = view.getUint8(at);
      const client = view.getUint32(at + 4, true);
      const length = view.getUint32(at + 8, true);
      const body = new Uint8Array(ab, at + 12, length);
      at += 12 + length;
      if (kind === 1) {
        this.#worlds.get(client)?.receive(body);
      } else if (kind === 2) {
        this.#options.onEvent?.(client, body[0] | (body[1] << 8), body.subarray(2));
      } else {
        this.#control(client, body);
      }
    }
  }

  #control(i: number, bytes: Uint8Array): void {
    const m = tryDecodeControl(bytes);
    if (m === undefined) return;
    const p = this.#pending.get(i);
    if (m.type === MSG_CHALLENGE && p !== undefined && m.nonce === p.nonce) {
      // The server keeps nothing until the cookie comes back: the HELLO carries it from now on.
      p.hello = encodeHello({ protocolHash: p.protocolHash, nonce: p.nonce, cookie: m.cookie });
      this.#swarm.send(i, p.hello);
    } else if (m.type === MSG_WELCOME && p !== undefined) this.#welcome(i, m, p);
    else if (m.type === MSG_REFUSE && p !== undefined && m.nonce === p.nonce) p.reject(refuseError(m, p.protocolHash));
    else if (m.type === MSG_BYE && this.#avatars[i] >= 0 && sameBytes(m.token, this.#tokens[i])) {
      this.#avatars[i] = -1;
      this.#worlds.delete(i);
      this.#swarm.setConnected(i, false, false);
      this.#options.onDisconnect?.(i);
    }
  }
}

// The addon's NativeSwarm.
function makeSwarm(o: {
  clients: number;
  firstAddress: string;
  threads: number;
  recvBufferBytes: number;
  sendBufferBytes: number;
  onBatch(): void;
}) {
  const Swarm = native.NativeSwarm;
  if (Swarm === undefined || process.platform !== 'linux') {
    throw new SightlineError('ERR_SIGHTLINE_NET_UNAVAILABLE', `UdpClientSwarm needs the native data path (Linux), not built for ${process.platform}`);
  }
  return new Swarm(o, o.onBatch);
}

function sameBytes(a: Uint8Array, b: Uint8Array | undefined): boolean {
  return b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}
