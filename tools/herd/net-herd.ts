// Over 500 lines as one file: the networked herd's server side, one run from set-up to report; the report's types are in net-report.ts, the bots in bots.ts and native-bots.ts.
// `sightline herd --net udp`, the server side: a UdpServer on loopback whose clients live in one
// forked bot process (bots.ts). Herd entities become the clients' avatars; each tick's packets go
// out over UDP; a heartbeat event per client every second checks reliable delivery; the bots'
// believed positions are compared with the truth at the tick they were last told about.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SightlineError, type EntityId, type TickResult, type World } from 'sightline';
import { UdpClientSwarm, UdpServer } from 'sightline/net';
import { PerceivedErrors } from './perceived.js';
import type { BotTotals, NetHerdOptions, NetworkCpu, NetworkEvents, NetworkReport } from './net-report.js';
import { MAX_NATIVE_BOT_CLIENTS } from './native-bots.js';

export type { BotTotals, NetHerdOptions, NetworkCpu, NetworkEvents, NetworkReport, PerceivedError } from './net-report.js';
import {
  MAX_BOT_CLIENTS,
  encodeHeartbeat,
  type BotConnectedMessage,
  type BotReportReply,
  type BotsToParent,
  type ParentToBots,
} from './bot-messages.js';
import { untilQuiet } from './settle.js';

/** Event reserve of the World a networked herd runs on, bytes per packet (config `eventReserveBytes`). */
export const NET_EVENT_RESERVE_BYTES = 96;

/** Default number of bot clients: what two cores carry at 20 Hz beside the server. */
export const NET_DEFAULT_CLIENTS = 200;

/** Whether the bots are light native clients by default (Linux), or a UdpClient each. */
export const NET_NATIVE_BOTS = UdpClientSwarm.supported;

/** Most bot clients: native ones, or UdpClients (one dgram socket each). */
export const NET_MAX_CLIENTS = NET_NATIVE_BOTS ? MAX_NATIVE_BOT_CLIENTS : MAX_BOT_CLIENTS;

/** Every this-many-th native bot keeps a ClientWorld: its beliefs are the perceived-error samples. */
const NATIVE_SAMPLE_EVERY = 64;

/** The loopback address the server binds and the bots connect from. */
export const NET_HOST = '127.0.0.1';

// Connections the bot process attempts at once (UdpClients; native bots).
const CONNECT_CONCURRENCY = 128;
const NATIVE_CONNECT_CONCURRENCY = 512;
// Per-connect timeout of a bot client (UdpClient default), ms.
const CLIENT_CONNECT_TIMEOUT_MS = 5000;
// Beyond the run itself, how long the bot process may live, ms.
const BOT_LIFETIME_MARGIN_MS = 120_000;
// Waits for the bot process: its final report, its exit after `stop`, ms.
const REPORT_TIMEOUT_MS = 10_000;
// At the end of a run, the server takes in the clients' last datagrams until none has come for
// SETTLE_QUIET_MS (at most SETTLE_MAX_MS).
const SETTLE_QUIET_MS = 100;
const SETTLE_MAX_MS = 2_000;
const EXIT_TIMEOUT_MS = 3000;
// Characters of the bot process's stderr kept for error messages.
const STDERR_TAIL = 4000;

interface Waiter {
  resolve(m: BotsToParent): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

function botsScript(): string {
  const path = fileURLToPath(new URL('./bots.js', import.meta.url));
  if (!existsSync(path)) {
    throw new SightlineError('ERR_SIGHTLINE_NET_BOTS', `the bot process script ${path} is missing: build dist/ with npx tsc -p tsconfig.build.json`);
  }
  return path;
}

/**
 * The server side of a networked herd run. {@link start} binds the server, forks the bot process
 * and waits until its clients have connected; call {@link onTick} after every tick, then
 * {@link finish} for the report. {@link close} (idempotent) ends the bot process and the server
 * whatever happened; the bot process also exits by itself when this process ends.
 */
export class NetHerd {
  readonly #world: World;
  readonly #server: UdpServer;
  readonly #options: NetHerdOptions;
  readonly #tickHz: number;
  // Avatars not yet given out, and those handed back by a disconnect.
  #nextAvatar = 0;
  readonly #freed: EntityId[] = [];
  // Truth history: ring of the herd's raw positions by tick (herd order).
  readonly #perceived: PerceivedErrors;
  #sampleRound = 0;
  // Heartbeats: those queued per avatar (a client's numbers count up from 0), and the clients
  // whose heartbeat goes out on each tick of a second (the clients are spread over the second's
  // ticks: emitting to thousands at once would hold the event loop for tens of milliseconds).
  readonly #sentTo = new Map<EntityId, number>();
  readonly #beatGroups: Set<EntityId>[];
  #nextGroup = 0;
  #eventsSent = 0;
  #eventsDropped = 0;
  #acksApplied = 0;
  #acksRefused = 0;
  readonly #botKind: 'native' | 'node';
  // CPU time and wall time when the bots had connected (the run's start for `cpu`).
  #cpuAtConnect: NodeJS.CpuUsage | undefined;
  #wallAtConnect = 0;
  #child: ChildProcess | undefined;
  #childExit: Promise<void> = Promise.resolve();
  #childGone = false;
  #stderr = '';
  readonly #waiters = new Map<string, Waiter>();
  #connected: BotConnectedMessage | undefined;
  #closed = false;

  private constructor(world: World, options: NetHerdOptions) {
    this.#world = world;
    this.#options = options;
    this.#tickHz = world.config.tickHz;
    this.#perceived = new PerceivedErrors(world, options.ids, options.slots);
    this.#beatGroups = Array.from({ length: this.#tickHz }, () => new Set<EntityId>());
    this.#botKind = options.bots ?? (NET_NATIVE_BOTS ? 'native' : 'node');
    const common = {
      config: world.config,
      address: NET_HOST,
      port: 0,
      maxClients: options.clients,
      dataPath: options.dataPath,
      onConnect: () => this.#assignAvatar(),
      onDisconnect: (viewer: EntityId) => this.#releaseAvatar(viewer),
    };
    const native = (options.dataPath ?? (UdpServer.nativeDataPath ? 'native' : 'dgram')) === 'native';
    // The native path takes the ACKs to the World itself (before each pass, on the pool); the
    // dgram path hands each to JavaScript, which passes it on here.
    this.#server = native
      ? new UdpServer({ ...common, world })
      : new UdpServer({
          ...common,
          onAck: (viewer, ack, ackBits) => {
            try {
              this.#world.acknowledge(viewer, ack, ackBits);
              this.#acksApplied++;
            } catch {
              this.#acksRefused++;
            }
          },
        });
  }

  /**
   * Binds a UdpServer on 127.0.0.1 (a free port), forks the bot process and resolves once it has
   * connected its clients (those that failed are reported, not fatal). The world needs an event
   * reserve ({@link NET_EVENT_RESERVE_BYTES}) for the heartbeats.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (clients out of range or more than the avatars),
   *   ERR_SIGHTLINE_NET_BIND, ERR_SIGHTLINE_NET_BOTS (the bot script is missing, the process
   *   failed or did not report in time).
   */
  static async start(world: World, options: NetHerdOptions): Promise<NetHerd> {
    const { clients, avatars } = options;
    const most = (options.bots ?? (NET_NATIVE_BOTS ? 'native' : 'node')) === 'native' ? MAX_NATIVE_BOT_CLIENTS : MAX_BOT_CLIENTS;
    if (!Number.isInteger(clients) || clients < 1 || clients > most || clients > avatars.length) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_ARGUMENT',
        `clients must be an integer from 1 to ${Math.min(most, avatars.length)} (the avatars available), received ${clients}`,
      );
    }
    const script = botsScript();
    const net = new NetHerd(world, options);
    try {
      await net.#launch(script);
    } catch (e) {
      await net.close();
      throw e;
    }
    return net;
  }

  /** The server (its counters are live). */
  get server(): UdpServer {
    return this.#server;
  }

  /** The bot process's connection phase, once over. */
  get connected(): BotConnectedMessage | undefined {
    return this.#connected;
  }

  /**
   * After tick index `tick` (0 for the first): sends the tick's packets, keeps the herd's positions
   * as the truth for `result.tick`, emits a heartbeat to this tick's group of clients (each client
   * is in one of tickHz groups: one heartbeat each a second) and, half a second after each whole
   * second, asks the bots for their beliefs.
   */
  onTick(result: TickResult, tick: number): void {
    this.#server.sendTick(result);
    this.#countAcks();
    this.#perceived.recordTick(result);
    const phase = tick % this.#tickHz;
    this.#heartbeat(phase);
    if (phase === Math.floor(this.#tickHz / 2)) this.#requestSample();
  }

  /**
   * Ends a run: asks for a last sample, runs up to half a second of ticks (without moving the herd)
   * while heartbeats await acknowledgement, collects the bots' counters (each client takes in the
   * server's last packets and closes first), lets the server take in the clients' last datagrams,
   * stops the bot process and closes the server. Resolves with the network report.
   * @throws ERR_SIGHTLINE_NET_BOTS (the bot process failed or did not answer).
   */
  async finish(): Promise<NetworkReport> {
    try {
      this.#requestSample();
      const drainTicks = await this.#drain();
      let pendingAtEnd = 0;
      for (const v of this.#server.viewers()) pendingAtEnd += this.#world.eventStats(v)?.pending ?? 0;
      const reply = (await this.#request({ type: 'report' }, 'report', REPORT_TIMEOUT_MS)) as BotReportReply;
      // The clients closed before reporting: what they sent last (acks, BYE) is taken in before
      // the server's counters are read, so acksApplied counts the acks the bots counted.
      await this.#settleServer();
      await this.#stopChild();
      await this.#server.close();
      return this.#report(reply, drainTicks, pendingAtEnd, this.#cpu(reply));
    } finally {
      await this.close();
    }
  }

  // Waits until no datagram has reached the server for SETTLE_QUIET_MS (at most SETTLE_MAX_MS).
  async #settleServer(): Promise<void> {
    await untilQuiet(() => this.#server.counters.datagramsReceived, SETTLE_QUIET_MS, SETTLE_MAX_MS);
  }

  /** Stops the bot process (kills it if it does not exit) and closes the server. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#stopChild();
    await this.#server.close();
    process.removeListener('exit', this.#killChild);
  }

  // ---------------------------------------------------------------------------------------------

  async #launch(script: string): Promise<void> {
    const { address, port } = await this.#server.listen();
    const child = fork(script, [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.#child = child;
    process.on('exit', this.#killChild);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL);
    });
    this.#childExit = new Promise((resolve) => {
      const gone = (why: string): void => {
        if (this.#childGone) return;
        this.#childGone = true;
        this.#failWaiters(why);
        resolve();
      };
      child.once('exit', (code, signal) => gone(`the bot process exited (${signal ?? `code ${code}`})`));
      child.once('error', (e) => gone(`the bot process failed: ${e.message}`));
    });
    child.on('message', this.#onMessage);
    const { clients } = this.#options;
    const waves = Math.ceil(clients / CONNECT_CONCURRENCY);
    const connected = (await this.#request(
      {
        type: 'start',
        host: address,
        port,
        protocolHash: this.#world.config.protocolHash >>> 0,
        ...(this.#world.config.recordBytes !== 12 || this.#world.config.attributeBytes > 0 ? { config: this.#world.config.input } : {}),
        clients,
        bots: this.#botKind,
        sampleEvery: NATIVE_SAMPLE_EVERY,
        concurrency: this.#botKind === 'native' ? NATIVE_CONNECT_CONCURRENCY : CONNECT_CONCURRENCY,
        lifetimeMs: this.#options.seconds * 1000 + waves * CLIENT_CONNECT_TIMEOUT_MS + BOT_LIFETIME_MARGIN_MS,
      },
      'connected',
      10_000 + waves * (CLIENT_CONNECT_TIMEOUT_MS + 1000),
    )) as BotConnectedMessage;
    this.#connected = connected;
    this.#cpuAtConnect = process.cpuUsage();
    this.#wallAtConnect = performance.now();
  }

  // CPU time from the bots' connection to their report, both processes.
  #cpu(reply: BotReportReply): NetworkCpu {
    const wallMs = performance.now() - this.#wallAtConnect;
    const s = process.cpuUsage(this.#cpuAtConnect);
    const serverMs = (s.user + s.system) / 1000;
    const at = this.#connected?.cpuMs ?? { user: 0, system: 0 };
    const botsMs = reply.cpuMs.user + reply.cpuMs.system - at.user - at.system;
    return { wallMs, serverMs, serverCores: serverMs / wallMs, botsMs, botsCores: botsMs / wallMs };
  }

  // Native path: what the World's last tick did with the ACKs the path queued.
  #countAcks(): void {
    const t = this.#server.lastTick;
    if (t === undefined) return;
    this.#acksApplied += t.acksApplied;
    this.#acksRefused += t.acksUnused + t.acksInvalid;
  }

  readonly #killChild = (): void => {
    if (this.#child !== undefined && !this.#childGone) this.#child.kill('SIGKILL');
  };

  async #stopChild(): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.#childGone) return;
    this.#post({ type: 'stop' });
    const timer = setTimeout(() => {
      if (!this.#childGone) child.kill('SIGKILL');
    }, EXIT_TIMEOUT_MS);
    await this.#childExit;
    clearTimeout(timer);
  }

  #post(message: ParentToBots): void {
    const child = this.#child;
    if (child === undefined || this.#childGone || !child.connected) return;
    child.send(message, undefined, {}, () => undefined);
  }

  #request(message: ParentToBots, answer: BotsToParent['type'], timeoutMs: number): Promise<BotsToParent> {
    if (this.#childGone) return Promise.reject(this.#botsError('the bot process is gone'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(answer);
        reject(this.#botsError(`the bot process did not answer ${message.type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.set(answer, { resolve, reject, timer });
      this.#post(message);
    });
  }

  #botsError(why: string): SightlineError {
    const tail = this.#stderr.trim();
    return new SightlineError('ERR_SIGHTLINE_NET_BOTS', tail === '' ? why : `${why}; its stderr:\n${tail}`);
  }

  #failWaiters(why: string): void {
    for (const [key, w] of this.#waiters) {
      clearTimeout(w.timer);
      this.#waiters.delete(key);
      w.reject(this.#botsError(why));
    }
  }

  readonly #onMessage = (raw: unknown): void => {
    const m = raw as BotsToParent;
    if (m?.type === 'fatal') {
      this.#failWaiters(`the bot process failed: ${m.message}`);
      return;
    }
    if (m?.type === 'sample') this.#perceived.takeBeliefs(m.clients);
    const w = this.#waiters.get(m?.type);
    if (w !== undefined) {
      this.#waiters.delete(m.type);
      clearTimeout(w.timer);
      w.resolve(m);
    }
  };

  #assignAvatar(): EntityId {
    const { avatars } = this.#options;
    const avatar = this.#freed.pop() ?? (this.#nextAvatar < avatars.length ? avatars[this.#nextAvatar++] : undefined);
    if (avatar === undefined) throw new Error('no avatar left for another client');
    try {
      this.#world.addViewer(avatar, { acks: true });
    } catch (e) {
      this.#freed.push(avatar);
      throw e;
    }
    this.#beatGroups[this.#nextGroup++ % this.#tickHz].add(avatar);
    return avatar;
  }

  #releaseAvatar(viewer: EntityId): void {
    try {
      this.#world.removeViewer(viewer);
    } catch {
      // not a viewer any more: nothing to undo
    }
    for (const g of this.#beatGroups) g.delete(viewer);
    this.#freed.push(viewer);
  }

  // The heartbeats of the clients in this tick's group: each client's next number.
  #heartbeat(phase: number): void {
    for (const v of this.#beatGroups[phase]) {
      const n = this.#sentTo.get(v) ?? 0;
      try {
        this.#world.emit(encodeHeartbeat(n), { viewer: v });
        this.#sentTo.set(v, n + 1);
        this.#eventsSent++;
      } catch {
        this.#eventsDropped++;
      }
    }
  }

  // The bots' beliefs (they answer later), and the in-process twins' now.
  #requestSample(): void {
    this.#post({ type: 'sample', round: this.#sampleRound++ });
    this.#perceived.sampleTwins();
  }

  // Ticks at the tick rate while any client has heartbeats awaiting acknowledgement; at most half a second.
  async #drain(): Promise<number> {
    const period = 1000 / this.#tickHz;
    const most = Math.max(1, Math.floor(this.#tickHz / 2));
    let ticks = 0;
    while (ticks < most && !this.#childGone) {
      let pending = 0;
      for (const v of this.#server.viewers()) pending += this.#world.eventStats(v)?.pending ?? 0;
      if (pending === 0) break;
      await new Promise((resolve) => setTimeout(resolve, period));
      const result = await this.#world.tick();
      this.#server.sendTick(result);
      this.#countAcks();
      this.#perceived.recordTick(result);
      ticks++;
    }
    if (ticks > 0) await new Promise((resolve) => setTimeout(resolve, period));
    return ticks;
  }

  #report(reply: BotReportReply, drainTicks: number, pendingAtEnd: number, cpu: NetworkCpu): NetworkReport {
    const { clients } = reply;
    const bots: BotTotals = {
      datagramsReceived: 0,
      bytesReceived: 0,
      gamePackets: 0,
      applied: 0,
      duplicates: 0,
      stale: 0,
      malformed: 0,
      reordered: 0,
      acksSent: 0,
      acksDropped: 0,
      heldMean: 0,
      disconnected: 0,
      cpuMs: { ...reply.cpuMs },
    };
    const events: NetworkEvents = {
      sent: this.#eventsSent,
      delivered: 0,
      lost: 0,
      duplicated: 0,
      gaps: 0,
      outOfOrder: 0,
      copiesIgnored: 0,
      skipped: 0,
      dropped: this.#eventsDropped,
      pendingAtEnd,
    };
    const reported = new Set<EntityId>();
    let held = 0;
    let sampled = 0;
    for (const c of clients) {
      reported.add(c.avatar);
      bots.datagramsReceived += c.datagramsReceived;
      bots.bytesReceived += c.bytesReceived;
      bots.gamePackets += c.gamePackets;
      bots.applied += c.applied;
      bots.duplicates += c.duplicates;
      bots.stale += c.stale;
      bots.malformed += c.malformed;
      bots.reordered += c.reordered;
      bots.acksSent += c.acksSent;
      bots.acksDropped += c.acksDropped;
      if (c.disconnect !== null) bots.disconnected++;
      if (c.held >= 0) {
        held += c.held;
        sampled++;
      }
      const e = c.events;
      events.delivered += e.distinct;
      events.lost += Math.max(0, (this.#sentTo.get(c.avatar) ?? 0) - e.distinct);
      events.duplicated += e.duplicates;
      events.gaps += e.gaps;
      events.outOfOrder += e.outOfOrder;
      events.copiesIgnored += e.copiesIgnored;
      events.skipped += e.skipped;
    }
    for (const [avatar, sent] of this.#sentTo) if (!reported.has(avatar)) events.lost += sent;
    bots.heldMean = sampled > 0 ? held / sampled : 0;
    const perceived = this.#perceived.report();
    const connected = this.#connected;
    return {
      transport: 'udp',
      dataPath: this.#server.dataPath,
      botKind: this.#botKind,
      sampledClients: sampled,
      socketBuffers: this.#server.socketBuffers ?? null,
      cpu,
      address: NET_HOST,
      port: this.#server.port,
      clients: this.#options.clients,
      connected: connected?.connected ?? 0,
      connectFailed: connected?.failed ?? 0,
      connectErrors: [...(connected?.errors ?? [])],
      connectMs: connected?.ms ?? 0,
      botPid: this.#child?.pid ?? 0,
      drainTicks,
      server: { ...this.#server.counters },
      acksApplied: this.#acksApplied,
      acksRefused: this.#acksRefused,
      acksPending: this.#server.dataPath === 'native' ? this.#server.counters.acks - this.#acksApplied - this.#acksRefused : 0,
      bots,
      perceivedErrorM: perceived.bots,
      inProcessErrorM: perceived.twins,
      events,
    };
  }
}
