// The bot process's light clients (Linux): one UdpClientSwarm instead of a UdpClient per bot, so
// that thousands of bots cost the machine little beside the server they load. Every bot
// acknowledges every packet natively; a sample of them keeps a ClientWorld (their beliefs are the
// perceived-error samples) and every bot's heartbeats are checked.
import { SightlineError } from 'sightline';
import { UdpClientSwarm } from 'sightline/net';
import {
  type BotBelief,
  type BotClientReport,
  type BotConnectedMessage,
  type BotReportReply,
  type BotSampleReply,
  type BotStartMessage,
} from './bot-messages.js';
import { HeartbeatCheck, beliefOf, cpuMs, protocolOf } from './heartbeat-check.js';
import { untilQuiet } from './settle.js';

// Before reporting, the bots wait until no datagram has reached any of them for this long, up to
// REPORT_SETTLE_MAX_MS (as the UdpClient bots do).
const REPORT_QUIET_MS = 150;
const REPORT_SETTLE_MAX_MS = 3_000;
/** Most light clients one bot process opens (each has its own loopback address). */
export const MAX_NATIVE_BOT_CLIENTS = 65_536;

/** The swarm of one bot process: {@link connect}, {@link sample}, {@link report}, {@link close}. */
export class NativeBotSwarm {
  readonly #start: BotStartMessage;
  readonly #swarm: UdpClientSwarm;
  readonly #checks: HeartbeatCheck[];
  readonly #disconnect: (string | null)[];
  #closed = false;

  /** @throws ERR_SIGHTLINE_INVALID_ARGUMENT (a start message out of range), ERR_SIGHTLINE_NET_UNAVAILABLE (not Linux). */
  constructor(start: BotStartMessage) {
    const every = start.sampleEvery ?? 64;
    if (!Number.isInteger(start.clients) || start.clients < 1 || start.clients > MAX_NATIVE_BOT_CLIENTS || !Number.isInteger(every) || every < 1) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `bad start message: ${JSON.stringify(start)}`);
    }
    this.#start = start;
    this.#checks = Array.from({ length: start.clients }, () => new HeartbeatCheck());
    this.#disconnect = new Array<string | null>(start.clients).fill(null);
    this.#swarm = new UdpClientSwarm({
      clients: start.clients,
      sample: (i) => i % every === 0,
      onEvent: (i, _sequence, bytes) => this.#checks[i].take(bytes),
      onDisconnect: (i) => {
        this.#disconnect[i] = 'bye';
      },
    });
  }

  /** Connects every client; resolves when each has been answered or timed out. */
  async connect(): Promise<BotConnectedMessage> {
    const { host, port, concurrency } = this.#start;
    const r = await this.#swarm.connect(host, port, protocolOf(this.#start), concurrency);
    return { type: 'connected', connected: r.connected, failed: r.failed, errors: r.errors, ms: r.ms, cpuMs: cpuMs() };
  }

  /** The sample clients' held entities and raw positions, as of their newest packet. */
  sample(round: number): BotSampleReply {
    const beliefs: BotBelief[] = [];
    for (const i of this.#swarm.samples()) {
      const avatar = this.#swarm.avatarOf(i);
      const world = this.#swarm.worldOf(i);
      const belief = avatar === undefined || world === undefined ? undefined : beliefOf(avatar, world);
      if (belief !== undefined) beliefs.push(belief);
    }
    return { type: 'sample', round, clients: beliefs };
  }

  /**
   * Every connected client's counters once no datagram has reached the bots for REPORT_QUIET_MS;
   * the clients say BYE first, so no ACK leaves after the counts are taken. `held` is the sample
   * clients' (-1 for the others, which keep no world).
   */
  async report(): Promise<BotReportReply> {
    const received = (): number => this.#swarm.totals().datagramsReceived;
    await untilQuiet(received, REPORT_QUIET_MS, REPORT_SETTLE_MAX_MS);
    const counters = this.#swarm.counters();
    const avatars = counters.map((_c, i) => this.#swarm.avatarOf(i));
    const worlds = counters.map((_c, i) => this.#swarm.worldOf(i));
    await this.close();
    const clients: BotClientReport[] = [];
    for (let i = 0; i < counters.length; i++) {
      const avatar = avatars[i];
      if (avatar === undefined && this.#disconnect[i] === null) continue;
      const c = counters[i];
      const world = worlds[i];
      const check = this.#checks[i];
      clients.push({
        avatar: avatar ?? -1,
        state: 'closed',
        disconnect: this.#disconnect[i],
        datagramsReceived: c.datagramsReceived,
        bytesReceived: c.bytesReceived,
        gamePackets: c.gamePackets,
        applied: c.applied,
        duplicates: c.duplicates,
        stale: c.stale,
        malformed: world?.counters.malformed ?? c.malformed,
        reordered: c.reordered,
        acksSent: c.acksSent,
        acksDropped: c.acksDropped,
        held: world?.size ?? -1,
        events: check.counts(world?.counters.repeatedEvents ?? c.repeatedEvents, world?.counters.skippedEvents ?? c.skippedEvents),
      });
    }
    return { type: 'report', clients, cpuMs: cpuMs() };
  }

  /** Says BYE for every client and closes the swarm. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#swarm.close();
  }
}
