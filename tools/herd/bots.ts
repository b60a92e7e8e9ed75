// The bot process of `sightline herd --net udp`: clients on loopback (UdpClients, or with
// `bots: 'native'` one UdpClientSwarm of light clients, native-bots.ts), driven by the parent over
// the node:child_process IPC channel (messages in bot-messages.ts). It exits when the parent says
// stop, when the IPC channel closes (the parent ended), or once the start message's lifetime is up.
import { SightlineError } from 'sightline';
import { UdpClient } from 'sightline/net';
import { isEntryPoint } from '../cli/util.js';
import { HeartbeatCheck, beliefOf, cpuMs, protocolOf } from './heartbeat-check.js';
import { NativeBotSwarm } from './native-bots.js';
import {
  MAX_BOT_CLIENTS,
  type BotBelief,
  type BotClientReport,
  type BotConnectedMessage,
  type BotEventCounts,
  type BotReportReply,
  type BotSampleReply,
  type BotStartMessage,
  type BotsToParent,
  type ParentToBots,
} from './bot-messages.js';
import { untilQuiet } from './settle.js';

// Failure messages kept for the connected message.
const MAX_ERRORS = 5;
// Before reporting, the clients wait until no datagram has reached any of them for this long (the
// server's last packets are then taken in and acknowledged), up to REPORT_SETTLE_MAX_MS.
const REPORT_QUIET_MS = 150;
const REPORT_SETTLE_MAX_MS = 3_000;

interface Bot {
  readonly client: UdpClient;
  readonly check: HeartbeatCheck;
  disconnect: string | null;
}

/**
 * The clients of one bot process: opened and connected by {@link connect}, sampled by
 * {@link sample}, counted by {@link report}, closed by {@link close}.
 */
export class BotSwarm {
  readonly #start: BotStartMessage;
  readonly #bots: Bot[] = [];
  #closed = false;

  /** @throws ERR_SIGHTLINE_INVALID_ARGUMENT for a start message with fields of the wrong kind or out of range. */
  constructor(start: BotStartMessage) {
    const ok =
      typeof start === 'object' &&
      start !== null &&
      typeof start.host === 'string' &&
      Number.isInteger(start.port) &&
      start.port > 0 &&
      start.port < 65536 &&
      Number.isInteger(start.protocolHash) &&
      Number.isInteger(start.clients) &&
      start.clients >= 1 &&
      start.clients <= MAX_BOT_CLIENTS &&
      Number.isInteger(start.concurrency) &&
      start.concurrency >= 1 &&
      typeof start.lifetimeMs === 'number' &&
      start.lifetimeMs > 0;
    if (!ok) throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `bad start message: ${JSON.stringify(start)}`);
    this.#start = start;
  }

  /** Clients that completed the handshake. */
  get size(): number {
    return this.#bots.length;
  }

  /** Opens and connects every client, `concurrency` at a time; resolves when each has settled. */
  async connect(): Promise<BotConnectedMessage> {
    const started = performance.now();
    const { host, port, clients, concurrency } = this.#start;
    const protocol = protocolOf(this.#start);
    let next = 0;
    let failed = 0;
    const errors: string[] = [];
    const worker = async (): Promise<void> => {
      while (next < clients && !this.#closed) {
        next++;
        const check = new HeartbeatCheck();
        const bot: { client?: UdpClient; check: HeartbeatCheck; disconnect: string | null } = { check, disconnect: null };
        const client = new UdpClient({
          bindAddress: host,
          onEvent: (_sequence, bytes) => check.take(bytes),
          onDisconnect: (reason) => {
            bot.disconnect = reason;
          },
        });
        bot.client = client;
        try {
          await client.connect(host, port, protocol);
          if (this.#closed) await client.close();
          else this.#bots.push(bot as Bot);
        } catch (e) {
          failed++;
          if (errors.length < MAX_ERRORS) errors.push(e instanceof SightlineError ? `${e.message} (${e.code})` : String(e));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, clients) }, worker));
    return { type: 'connected', connected: this.#bots.length, failed, errors, ms: performance.now() - started, cpuMs: cpuMs() };
  }

  /** Every client's held entities and their raw positions, as of its newest packet. */
  sample(round: number): BotSampleReply {
    const beliefs: BotBelief[] = [];
    for (const { client } of this.#bots) {
      const avatar = client.avatar;
      const belief = avatar === undefined ? undefined : beliefOf(avatar, client.world);
      if (belief !== undefined) beliefs.push(belief);
    }
    return { type: 'sample', round, clients: beliefs };
  }

  /**
   * Every client's final counters, at the end of a run: once no datagram has reached the clients
   * for REPORT_QUIET_MS (the server stopped ticking; its last packets are taken in and acknowledged
   * first), each client is closed (BYE), so no acknowledgement leaves after the counts are taken
   * and the server's count of acks applied can be compared with them.
   */
  async report(): Promise<BotReportReply> {
    const received = (): number => this.#bots.reduce((n, b) => n + b.client.counters.datagramsReceived, 0);
    await untilQuiet(received, REPORT_QUIET_MS, REPORT_SETTLE_MAX_MS);
    await Promise.all(this.#bots.map((b) => b.client.close()));
    const clients: BotClientReport[] = [];
    for (const { client, check, disconnect } of this.#bots) {
      const c = client.counters;
      const w = client.world.counters;
      const events: BotEventCounts = check.counts(w.repeatedEvents, w.skippedEvents);
      clients.push({
        avatar: client.avatar ?? -1,
        state: client.state,
        disconnect,
        datagramsReceived: c.datagramsReceived,
        bytesReceived: c.bytesReceived,
        gamePackets: c.gamePackets,
        applied: w.packets,
        duplicates: w.duplicates,
        stale: w.stale,
        malformed: w.malformed,
        reordered: w.reordered,
        acksSent: c.acksSent,
        acksDropped: c.acksDropped,
        held: client.world.size,
        events,
      });
    }
    return { type: 'report', clients, cpuMs: cpuMs() };
  }

  /** Closes every client (each says BYE). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const bots = this.#bots.splice(0);
    await Promise.all(bots.map((b) => b.client.close()));
  }
}

/** Runs the bot process: answers the parent's messages until stopped. */
function serve(): void {
  let swarm: BotSwarm | NativeBotSwarm | undefined;
  let exiting = false;
  const exit = (code: number): void => {
    if (exiting) return;
    exiting = true;
    const done = (): void => process.exit(code);
    setTimeout(done, 2000).unref();
    (swarm?.close() ?? Promise.resolve()).then(done, done);
  };
  const send = (message: BotsToParent): void => {
    if (exiting || !process.connected) return;
    process.send!(message, undefined, {}, (e: Error | null) => {
      if (e) exit(1);
    });
  };
  process.on('disconnect', () => exit(0));
  // The parent ends the run (it reacts to SIGINT itself and then says stop).
  process.on('SIGINT', () => undefined);
  process.on('message', (raw: unknown) => {
    const m = raw as ParentToBots;
    try {
      switch (m?.type) {
        case 'start': {
          if (swarm !== undefined) return;
          swarm = m.bots === 'native' ? new NativeBotSwarm(m) : new BotSwarm(m);
          setTimeout(() => exit(0), m.lifetimeMs).unref();
          swarm.connect().then(send, (e: unknown) => {
            send({ type: 'fatal', message: String(e) });
            exit(1);
          });
          return;
        }
        case 'sample':
          send(swarm?.sample(m.round) ?? { type: 'sample', round: m.round, clients: [] });
          return;
        case 'report':
          if (swarm === undefined) {
            send({ type: 'report', clients: [], cpuMs: cpuMs() });
            return;
          }
          swarm.report().then(send, (e: unknown) => {
            send({ type: 'fatal', message: String(e) });
            exit(1);
          });
          return;
        case 'stop':
          exit(0);
          return;
      }
    } catch (e) {
      send({ type: 'fatal', message: e instanceof SightlineError ? `${e.message} (${e.code})` : String(e) });
      exit(1);
    }
  });
}

if (isEntryPoint(import.meta.url)) {
  if (typeof process.send === 'function') {
    serve();
  } else {
    process.stderr.write('sightline bots: this script runs as the child process of `sightline herd --net udp`\n');
    process.exitCode = 2;
  }
}
