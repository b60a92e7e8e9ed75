// Messages between `sightline herd --net udp` and its bot process (lib/net/bots.ts) over the
// node:child_process IPC channel (advanced serialization: typed arrays travel as such), and the
// heartbeat events the server emits. Imports nothing from Node.

/** Most UdpClients one bot process opens (native bots: MAX_NATIVE_BOT_CLIENTS in native-bots.ts). */
export const MAX_BOT_CLIENTS = 4096;

/** Parent → bots: open `clients` UdpClients and connect each to the server. */
export interface BotStartMessage {
  readonly type: 'start';
  /** Server address (an IPv4 literal; the bots bind their sockets to it too). */
  readonly host: string;
  /** Server UDP port. */
  readonly port: number;
  /** The server's `WorldConfig.protocolHash` (u32). */
  readonly protocolHash: number;
  /**
   * The server's authored configuration (`config.input`), when its packets carry fields or
   * attributes: the bots build the same WorldConfig to decode them. Absent: the hash is enough.
   */
  readonly config?: object;
  /** Clients to open: UdpClients (one dgram socket each), or light native clients. */
  readonly clients: number;
  /**
   * `'node'`: a UdpClient per bot; `'native'`: one UdpClientSwarm (Linux), its bots' packets and
   * ACKs handled natively, every `sampleEvery`-th bot keeping a ClientWorld. Default `'node'`.
   */
  readonly bots?: 'node' | 'native';
  /** Native bots: every this-many-th bot is a sample (keeps what it believes). Default 64. */
  readonly sampleEvery?: number;
  /** Connections attempted at once, at most. */
  readonly concurrency: number;
  /** The bot process exits on its own after this long, ms, whatever the parent says. */
  readonly lifetimeMs: number;
}

/** Parent → bots: send every client's believed positions ({@link BotSampleReply}). */
export interface BotSampleRequest {
  readonly type: 'sample';
  /** Echoed in the reply. */
  readonly round: number;
}

/** Parent → bots: send every client's counters ({@link BotReportReply}). */
export interface BotReportRequest {
  readonly type: 'report';
}

/** Parent → bots: close every client (BYE) and exit. */
export interface BotStopMessage {
  readonly type: 'stop';
}

export type ParentToBots = BotStartMessage | BotSampleRequest | BotReportRequest | BotStopMessage;

/** Bots → parent: the connection phase ended. */
export interface BotConnectedMessage {
  readonly type: 'connected';
  /** Clients that received a WELCOME. */
  readonly connected: number;
  /** Clients whose connect failed (refused, timed out, socket error). */
  readonly failed: number;
  /** The first few failure messages (with their codes). */
  readonly errors: readonly string[];
  /** Time from the start message until the last connect settled, ms. */
  readonly ms: number;
  /** CPU time the bot process had used by then, ms (process.cpuUsage): the run's is the report's less this. */
  readonly cpuMs?: { readonly user: number; readonly system: number };
}

/** One client's perceived world: the entities it holds, raw positions, as of its newest packet. */
export interface BotBelief {
  /** The client's avatar (its viewer id). */
  readonly avatar: number;
  /** Server tick of the newest game packet the client applied. */
  readonly tick: number;
  /** Held entity ids. */
  readonly ids: Uint32Array;
  /** Their believed positions, raw units (1024 per meter), same order. */
  readonly x: Int32Array;
  readonly y: Int32Array;
}

/** Bots → parent: believed positions of every client that has applied a packet. */
export interface BotSampleReply {
  readonly type: 'sample';
  readonly round: number;
  readonly clients: readonly BotBelief[];
}

/** Heartbeat events one client received, as it checked them. */
export interface BotEventCounts {
  /** Events delivered by `onEvent` (every call). */
  readonly received: number;
  /** Distinct heartbeats among them. */
  readonly distinct: number;
  /** Heartbeats whose number was exactly the one after the previous heartbeat (or the first). */
  readonly inOrder: number;
  /** Heartbeats whose number had been delivered before. */
  readonly duplicates: number;
  /** Heartbeat numbers skipped over: a heartbeat n after m counts n − m − 1. */
  readonly gaps: number;
  /** Heartbeats with a number below the previous one, not delivered before. */
  readonly outOfOrder: number;
  /** Events that were not heartbeats. */
  readonly foreign: number;
  /** Copies of delivered events the client world ignored (ClientWorld `repeatedEvents`). */
  readonly copiesIgnored: number;
  /** Event sequences the server stopped resending unseen (ClientWorld `skippedEvents`). */
  readonly skipped: number;
}

/** One client's counters at the end of a run. */
export interface BotClientReport {
  /** The client's avatar (its viewer id). */
  readonly avatar: number;
  /** `'connected'` or `'closed'`. */
  readonly state: string;
  /** Why the server ended the session (`'bye'`, `'timeout'`), or null. */
  readonly disconnect: string | null;
  readonly datagramsReceived: number;
  readonly bytesReceived: number;
  /** Game packets handed to the client world. */
  readonly gamePackets: number;
  /** Of those, applied (ClientWorld `packets`). */
  readonly applied: number;
  /** Game packets ignored as duplicates, discarded as stale, rejected as malformed. */
  readonly duplicates: number;
  readonly stale: number;
  readonly malformed: number;
  /** Game packets applied out of order. */
  readonly reordered: number;
  readonly acksSent: number;
  /** ACKs not sent: the socket queue was full. */
  readonly acksDropped: number;
  /** Entities held at the end. */
  readonly held: number;
  readonly events: BotEventCounts;
}

/** Bots → parent: every client's counters. */
export interface BotReportReply {
  readonly type: 'report';
  readonly clients: readonly BotClientReport[];
  /** CPU time the bot process has used since it started, ms (process.cpuUsage). */
  readonly cpuMs: { readonly user: number; readonly system: number };
}

/** Bots → parent: the bot process cannot go on (bad start message, a defect). */
export interface BotFatalMessage {
  readonly type: 'fatal';
  readonly message: string;
}

export type BotsToParent = BotConnectedMessage | BotSampleReply | BotReportReply | BotFatalMessage;

const HEARTBEAT_PREFIX = 'heartbeat ';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The heartbeat event `n` (a non-negative integer): the UTF-8 text `heartbeat n`. */
export function encodeHeartbeat(n: number): Uint8Array {
  return encoder.encode(`${HEARTBEAT_PREFIX}${n}`);
}

/** The number of a heartbeat event, or -1 when the bytes are not one. */
export function decodeHeartbeat(bytes: Uint8Array): number {
  const text = decoder.decode(bytes);
  if (!text.startsWith(HEARTBEAT_PREFIX)) return -1;
  const digits = text.slice(HEARTBEAT_PREFIX.length);
  if (!/^\d{1,15}$/.test(digits)) return -1;
  return Number(digits);
}
