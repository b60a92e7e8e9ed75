// One herd run: a seeded load scenario on a new World at the config's tick rate, in process or
// serving bot clients over UDP, measured by TickMetrics; what `sightline herd` prints.
import { SightlineError, World, WorldConfig, run, type LoopSummary, type OverrunPolicy } from 'sightline';
import { GcMonitor, type GcReport } from './gc.js';
import { TickMetrics, type MetricsReport } from './metrics.js';
import { NET_DEFAULT_CLIENTS, NET_EVENT_RESERVE_BYTES, NetHerd, type NetworkReport } from './net-herd.js';
import { createHerd, herdDefaults, type HerdScenario } from './scenarios.js';
import { HERD_STATE_CONFIG, createHerdState } from './state.js';
import { WEB_MAX_PAGES, WebHerd, type WebReport } from './web-herd.js';

/** Transports `sightline herd --net` offers: `none` keeps every viewer in-process. */
export type HerdNet = 'none' | 'udp';

/** Valid {@link HerdNet} values. */
export const HERD_NETS: readonly HerdNet[] = Object.freeze(['none', 'udp'] as const);

/** Options of `sightline herd`, parsed. */
export interface HerdCommandOptions {
  scenario: HerdScenario;
  entities?: number;
  /** In-process viewers (default: the scenario's; with `net: 'udp'`, 0). */
  viewers?: number;
  /** `'udp'`: serve bot clients in a child process over loopback UDP. Default `'none'`. */
  net?: HerdNet;
  /** Bot clients with `net: 'udp'` (default {@link NET_DEFAULT_CLIENTS}). */
  clients?: number;
  /** With `net: 'udp'`: the bots (native light clients, or a UdpClient each) and the server's data path; see NetHerdOptions. */
  bots?: 'native' | 'node';
  dataPath?: 'native' | 'dgram';
  /**
   * State beyond positions (tools/herd/state.ts): a heading, an animation state and health as fast
   * fields, a kind, and a name with a level as attributes, a tenth of the levels rising a second.
   * Default false.
   */
  state?: boolean;
  /** Serve the live page (`--web`): pages join as WebSocket clients watching from herd entities. */
  web?: boolean;
  /** Address and port the live page is served on (default 127.0.0.1:8080; port 0 picks a free one). */
  webHost?: string;
  webPort?: number;
  threads: number;
  seconds: number;
  seed: number;
  overrun: OverrunPolicy;
  sample: number;
  /** The tick governor of run() (default true; `--no-governor`). */
  governor?: boolean;
  /** Congestion control for the UDP clients (`--congestion`, with `net: 'udp'`). Default false. */
  congestion?: boolean;
  json: boolean;
  progress: boolean;
}

/** The report `sightline herd` prints (`--json`: this object). */
export interface HerdReport {
  command: 'herd';
  scenario: HerdScenario;
  entities: number;
  /** In-process viewers (the networked clients' viewers are counted in `network`). */
  viewers: number;
  /** A SIGINT ended the run before its time: the report covers the ticks run until then. */
  interrupted: boolean;
  threads: number;
  seed: number;
  net: HerdNet;
  /** Whether the herd sent fields, kinds and attributes (`--state`). */
  state: boolean;
  /** Requested run time, s. */
  seconds: number;
  overrun: OverrunPolicy;
  /** Deadlines in the requested time: round(seconds × tickHz). */
  ticksDue: number;
  /** Set-up time (world, spawns, viewers), ms. */
  setupMs: number;
  config: {
    regionSize: number;
    viewRadius: number;
    cellSize: number;
    tickHz: number;
    payloadBytes: number;
    /** Bytes per packet held back for reliable events (96 with `--net udp`, else 0). */
    eventReserveBytes: number;
    /** Update slots with the whole event reserve in use (config.slotsPerPacket); without events, metrics.recordsPerPacket.slots. */
    slotsPerPacket: number;
    /** Update record size, bytes (15 with `--state`'s fields, else 12). */
    recordBytes: number;
    walkCap: number;
    ghostCap: number;
  };
  loop: LoopSummary;
  metrics: MetricsReport;
  /**
   * Garbage collection from the first tick to the last: pauses (count, total, longest, by kind),
   * and with `node --expose-gc` the heap after a forced collection before and after the run.
   */
  gc: GcReport;
  /**
   * With `congestion`: congestion control over the UDP clients at the end of the run (clients
   * tracked, in bad mode, times they went to bad mode, mean smoothed RTT and loss, the highest
   * loss); else null.
   */
  congestion: {
    readonly tracked: number;
    readonly bad: number;
    readonly congestions: number;
    readonly meanRttMs: number | null;
    readonly meanLoss: number;
    readonly maxLoss: number;
  } | null;
  /** With `--net udp`: the server, the bot clients, perceived error and event delivery; else null. */
  network: NetworkReport | null;
  /** With `--web`: the page's address, the pages that joined and the WebSocket server's counters; else null. */
  web: WebReport | null;
}

/** Default address and port of the live page (`--web`). */
export const HERD_WEB_HOST = '127.0.0.1';
export const HERD_WEB_PORT = 8080;

/** Default run time of `sightline herd`, s. */
export const HERD_DEFAULT_SECONDS = 10;

/** Progress of a herd run, handed to `onProgress` after every tick. */
export interface HerdProgress {
  /** Time since the first deadline, ms. */
  elapsedMs: number;
  /** The run's length, ms: seconds × 1000. */
  totalMs: number;
}

/**
 * Runs a herd scenario on a new World at config.tickHz and returns the report. The run lasts
 * `seconds` of wall-clock time: round(seconds × tickHz) deadlines, and when ticks overrun (under
 * `'stretch'`) the loop is stopped once that time has passed, so fewer ticks run than were due.
 * `onProgress` is called after every tick. A SIGINT ends the run early (the report covers the
 * ticks run).
 *
 * With `net: 'udp'` the World gets an event reserve of {@link NET_EVENT_RESERVE_BYTES} bytes, a
 * UdpServer listens on 127.0.0.1 and one forked bot process connects `clients` UdpClients before
 * the run starts (see lib/net/herd-net.ts); each takes a herd entity (after the in-process
 * viewers) as its avatar. Up to half a second of ticks follows the run while heartbeat events
 * await acknowledgement; the bot process is stopped before this resolves or rejects.
 *
 * With `web: true` the live page is served on webHost:webPort (web-herd.ts; `onWebReady` gets
 * its URL before the run starts): each page that joins watches from a herd entity that is
 * neither an in-process viewer nor a UDP client's avatar, taken from the last.
 * @throws SightlineError from the World or the herd (bad counts, capacity), ERR_SIGHTLINE_INVALID_HERD_OPTION
 *   (more clients than entities left after the viewers), ERR_SIGHTLINE_NET_BIND, ERR_SIGHTLINE_NET_BOTS.
 */
export async function runHerd(
  options: Omit<HerdCommandOptions, 'json' | 'progress'>,
  onProgress?: (metrics: TickMetrics, progress: HerdProgress) => void,
  onWebReady?: (url: string) => void,
): Promise<HerdReport> {
  const started = performance.now();
  const counts = herdDefaults(options.scenario, options.entities);
  const networked = options.net === 'udp';
  const viewers = options.viewers ?? (networked ? 0 : Math.max(0, Math.min(counts.viewers, counts.entities - (options.web === true ? WEB_MAX_PAGES : 0))));
  const clients = networked ? (options.clients ?? Math.min(NET_DEFAULT_CLIENTS, counts.entities - viewers)) : 0;
  if (networked && (clients < 1 || clients > counts.entities - viewers)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_HERD_OPTION',
      `clients must be from 1 to the entities that are not viewers (${counts.entities - viewers}), received ${clients}`,
    );
  }
  // A SIGINT from here on ends the run with a report covering the ticks run: one during the set-up
  // (a bot process connecting thousands of clients takes seconds) ends the loop as it starts.
  const sigint = new AbortController();
  const interrupt = (): void => sigint.abort();
  process.on('SIGINT', interrupt);
  try {
    return await herdRun(options, { viewers, clients, counts, started, signal: sigint.signal }, onProgress, onWebReady);
  } finally {
    process.removeListener('SIGINT', interrupt);
  }
}

// runHerd after its checks: the set-up, the loop (ended early by `signal`), the report.
async function herdRun(
  options: Omit<HerdCommandOptions, 'json' | 'progress'>,
  { viewers, clients, counts, started, signal }: { viewers: number; clients: number; counts: { entities: number }; started: number; signal: AbortSignal },
  onProgress?: (metrics: TickMetrics, progress: HerdProgress) => void,
  onWebReady?: (url: string) => void,
): Promise<HerdReport> {
  const networked = options.net === 'udp';
  const config = WorldConfig.build({
    ...(networked ? { eventReserveBytes: NET_EVENT_RESERVE_BYTES } : {}),
    ...(options.state ? HERD_STATE_CONFIG : {}),
  });
  const congestion = networked && options.congestion === true;
  const world = new World(config, { capacity: counts.entities, threads: options.threads, congestion });
  const herd = createHerd(world, { scenario: options.scenario, entities: counts.entities, viewers, seed: options.seed });
  const state = options.state ? createHerdState(world, herd, options.seed) : undefined;
  const setupMs = performance.now() - started;
  const net = networked
    ? await NetHerd.start(world, {
        ids: herd.ids,
        slots: herd.slots,
        avatars: herd.ids.subarray(viewers),
        clients,
        seconds: options.seconds,
        bots: options.bots,
        dataPath: options.dataPath,
      })
    : undefined;
  let web: WebHerd | undefined;
  try {
    if (options.web === true) {
      web = await WebHerd.start(world, { avatars: herd.ids.subarray(viewers + clients), host: options.webHost ?? HERD_WEB_HOST, port: options.webPort ?? HERD_WEB_PORT });
      onWebReady?.(web.url);
    }
  } catch (e) {
    await net?.close();
    throw e;
  }
  const ticksDue = Math.max(1, Math.round(options.seconds * config.tickHz));
  const totalMs = (ticksDue * 1000) / config.tickHz;
  let metrics: TickMetrics;
  let summary: LoopSummary;
  const gc = new GcMonitor(() => world.memoryBytes);
  let network: NetworkReport | null = null;
  let congestionReport: HerdReport['congestion'] = null;
  let webReport: WebReport | null = null;
  try {
    metrics = new TickMetrics(world, { entities: herd.ids, sampleViewers: options.sample });
    gc.start();
    const epoch = performance.now();
    const loop = run(world, {
      step: () => {
        herd.step();
        state?.step();
      },
      onTick: (result, report) => {
        net?.onTick(result, report.tick);
        web?.onTick(result);
        metrics.record(result, report);
        onProgress?.(metrics, { elapsedMs: performance.now() - epoch, totalMs });
      },
      overrun: options.overrun,
      ticks: ticksDue,
      signal,
      governor: options.governor !== false,
    });
    const timer = setTimeout(() => void loop.stop(), totalMs);
    try {
      summary = await loop.done;
    } finally {
      clearTimeout(timer);
      metrics.close();
      gc.stop();
    }
    // Before the clients leave (their viewers go with them).
    if (congestion) congestionReport = summarizeCongestion(world, herd.ids.subarray(viewers, viewers + clients));
    if (net) network = await net.finish();
  } finally {
    webReport = web?.report() ?? null;
    await web?.close();
    await net?.close();
  }
  return {
    command: 'herd',
    scenario: options.scenario,
    entities: counts.entities,
    viewers,
    interrupted: summary.reason === 'aborted',
    threads: world.threads,
    seed: options.seed,
    net: options.net ?? 'none',
    state: options.state ?? false,
    seconds: options.seconds,
    overrun: options.overrun,
    ticksDue,
    setupMs,
    config: {
      regionSize: config.regionSize,
      viewRadius: config.viewRadius,
      cellSize: config.cellSize,
      tickHz: config.tickHz,
      payloadBytes: config.payloadBytes,
      eventReserveBytes: config.eventReserveBytes,
      slotsPerPacket: config.slotsPerPacket,
      recordBytes: config.recordBytes,
      walkCap: config.walkCap,
      ghostCap: config.ghostCap,
    },
    loop: summary,
    metrics: metrics.report(summary),
    gc: gc.report(),
    congestion: congestionReport,
    network,
    web: webReport,
  };
}

// Congestion control's figures over the networked clients' viewers.
function summarizeCongestion(world: World, avatars: ArrayLike<number>): NonNullable<HerdReport['congestion']> {
  let tracked = 0;
  let bad = 0;
  let congestions = 0;
  let rttSum = 0;
  let rttN = 0;
  let lossSum = 0;
  let maxLoss = 0;
  for (let i = 0; i < avatars.length; i++) {
    const s = world.hasViewer(avatars[i]) ? world.congestionStats(avatars[i]) : null;
    if (s === null) continue;
    tracked++;
    if (s.mode === 'bad') bad++;
    congestions += s.congestions;
    if (s.rttMs !== null) {
      rttSum += s.rttMs;
      rttN++;
    }
    lossSum += s.loss;
    maxLoss = Math.max(maxLoss, s.loss);
  }
  return { tracked, bad, congestions, meanRttMs: rttN === 0 ? null : rttSum / rttN, meanLoss: tracked === 0 ? 0 : lossSum / tracked, maxLoss };
}
