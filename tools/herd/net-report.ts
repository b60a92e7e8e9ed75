// The shapes of a networked herd run: NetHerd's options and the report's network section.
import type { EntityId } from 'sightline';
import type { UdpServerCounters } from 'sightline/net';

/** Options of {@link NetHerd.start}. */
export interface NetHerdOptions {
  /** The herd's entity ids and their slots in `world.positions`, in the same order: the truth the bots are checked against. */
  ids: Uint32Array;
  slots: Uint32Array;
  /** Entities the clients get as avatars, taken in order (none may be a viewer yet). */
  avatars: ArrayLike<EntityId>;
  /** Bot clients to connect, 1 to {@link NET_MAX_CLIENTS} and at most `avatars.length`. */
  clients: number;
  /** Length of the run that follows, s: bounds the bot process's lifetime. */
  seconds: number;
  /**
   * The bots: `'native'`, one UdpClientSwarm of light clients (Linux; every 64th a sample keeping
   * what it believes), or `'node'`, a UdpClient each. Default `'native'` where available.
   */
  bots?: 'native' | 'node';
  /** The server's data path (UdpServer `dataPath`). Default: UdpServer's (native on Linux). */
  dataPath?: 'native' | 'dgram';
}

/** Perceived position error: distance between where a client believes a held entity is and where it was at the tick of the client's newest packet. */
export interface PerceivedError {
  /** Errors measured (one per held entity per client per sample round). */
  samples: number;
  /** Sample rounds answered by the bots. */
  rounds: number;
  /** Client beliefs left out: their newest packet's tick was no longer in the truth history. */
  skipped: number;
  /** Meters; null without samples. */
  mean: number | null;
  p50: number | null;
  p99: number | null;
  worst: number | null;
}

/** Reliable heartbeat events: one per connected client every second. */
export interface NetworkEvents {
  /** Heartbeats queued with `World.emit` (one per client per second). */
  sent: number;
  /** Distinct heartbeats the clients received. */
  delivered: number;
  /** Heartbeats sent that their client never received (after the drain). */
  lost: number;
  /** Heartbeats a client's `onEvent` saw twice. */
  duplicated: number;
  /** Heartbeat numbers skipped over by a client (delivered after a later one, or never). */
  gaps: number;
  /** Heartbeats delivered after a later one. */
  outOfOrder: number;
  /** Resent copies the clients' worlds ignored (ClientWorld `repeatedEvents`). */
  copiesIgnored: number;
  /** Event sequences the server stopped resending unseen (ClientWorld `skippedEvents`). */
  skipped: number;
  /** Heartbeats `World.emit` refused (the client's queue of 64 unacknowledged events was full). */
  dropped: number;
  /** Heartbeats not yet acknowledged when the run ended. */
  pendingAtEnd: number;
}

/** Totals over the bot clients. */
export interface BotTotals {
  datagramsReceived: number;
  bytesReceived: number;
  /** Game packets handed to the clients' worlds. */
  gamePackets: number;
  /** Of those: applied, ignored as duplicates, discarded as stale, rejected as malformed, applied out of order. */
  applied: number;
  duplicates: number;
  stale: number;
  malformed: number;
  reordered: number;
  acksSent: number;
  /** ACKs a client could not send (its socket queue was full). */
  acksDropped: number;
  /** Entities held per sampled client at the end, mean. */
  heldMean: number;
  /** Clients whose session the server ended during the run (BYE or timeout). */
  disconnected: number;
  /** CPU time the bot process used, from its start to the end of the run, ms. */
  cpuMs: { user: number; system: number };
}

/** CPU time over the run (from the bots' connection to their last report), ms, and in cores (CPU time / wall time). */
export interface NetworkCpu {
  wallMs: number;
  /** The herd process: the JavaScript thread, the pass threads, the native data path's threads. */
  serverMs: number;
  serverCores: number;
  /** The bot process. */
  botsMs: number;
  botsCores: number;
}

/** The `network` section of a herd report run with `--net udp`. */
export interface NetworkReport {
  transport: 'udp';
  /** The server's data path, and the bots (see {@link NetHerdOptions}). */
  dataPath: 'native' | 'dgram';
  botKind: 'native' | 'node';
  /** Clients whose perceived world is sampled (all UdpClients; the native bots' samples). */
  sampledClients: number;
  /** The server socket's buffers as the kernel granted them, bytes (native path; null otherwise). */
  socketBuffers: { send: number; recv: number } | null;
  cpu: NetworkCpu;
  /** Server address and port. */
  address: string;
  port: number;
  /** Clients asked for. */
  clients: number;
  /** Clients connected when the run started. */
  connected: number;
  /** Clients whose connect failed, and the first few reasons. */
  connectFailed: number;
  connectErrors: string[];
  /** Time to connect every client, ms. */
  connectMs: number;
  /** Process id of the bot process (it has exited by the time the report exists). */
  botPid: number;
  /** Ticks run after the run's time was up to deliver the events still unacknowledged (at most half a second of ticks). */
  drainTicks: number;
  /** The server's counters at the end (packets, bytes, acks, sessions). */
  server: UdpServerCounters;
  /** Acks `World.acknowledge` took, and those it refused. */
  acksApplied: number;
  acksRefused: number;
  /** Native path: acks taken after the last tick, still queued (the path applies them as a tick starts, and no tick came). */
  acksPending: number;
  bots: BotTotals;
  perceivedErrorM: PerceivedError;
  /**
   * The same measure for in-process twins of some sampled clients (ClientWorlds in the server's
   * process fed every tick with their viewer's packet: what a client that loses nothing and waits
   * for nothing would believe), taken when the bots are asked for theirs: the reference for
   * `perceivedErrorM`. `clients`: the twins.
   */
  inProcessErrorM: PerceivedError & { clients: number };
  events: NetworkEvents;
}
