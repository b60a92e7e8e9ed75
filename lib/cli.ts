#!/usr/bin/env node
// The `sightline` command line: subcommands registered by one function each (see COMMANDS);
// option parsers and report formatting shared by subcommands live in cli-util.ts.
//
//   sightline herd [--scenario NAME] [--entities N] [--viewers N] [--threads N] [--seconds S]
//                  [--seed N] [--overrun stretch|drop] [--sample N] [--net none|udp] [--clients N]
//                  [--json] [--no-progress]
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage (unknown flag, invalid value).
import cliProgress from 'cli-progress';
import { Command, CommanderError, Option } from 'commander';
import { packageVersion } from './binding.js';
import { HEADER_BYTES, RECORD_BYTES, WorldConfig } from './config.js';
import {
  isEntryPoint,
  ERR_INVALID_FLAG,
  EXIT_FAILURE,
  EXIT_USAGE,
  flagError,
  fmt,
  fmtRate,
  integerOption,
  positiveNumberOption,
  renderTable,
  type Row,
} from './cli-util.js';
import { SightlineError } from './errors.js';
import { HERD_SCENARIOS, createHerd, herdDefaults, type HerdScenario } from './herd.js';
import { OVERRUN_POLICIES, run, type LoopSummary, type OverrunPolicy } from './loop.js';
import { TARGETS, TickMetrics, type MetricsReport } from './metrics.js';
import { NET_DEFAULT_CLIENTS, NET_EVENT_RESERVE_BYTES, NET_MAX_CLIENTS, NetHerd, type NetworkReport } from './net/herd-net.js';
import { registerQualityCommand } from './quality-cli.js';
import { World } from './world.js';

// ---------------------------------------------------------------------------------------------
// herd

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
  threads: number;
  seconds: number;
  seed: number;
  overrun: OverrunPolicy;
  sample: number;
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
    walkCap: number;
    ghostCap: number;
  };
  loop: LoopSummary;
  metrics: MetricsReport;
  /** With `--net udp`: the server, the bot clients, perceived error and event delivery; else null. */
  network: NetworkReport | null;
}

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
 * Runs a herd scenario on a new World at config.input.tickHz and returns the report. The run lasts
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
 * @throws SightlineError from the World or the herd (bad counts, capacity), ERR_SIGHTLINE_INVALID_HERD_OPTION
 *   (more clients than entities left after the viewers), ERR_SIGHTLINE_NET_BIND, ERR_SIGHTLINE_NET_BOTS.
 */
export async function runHerd(
  options: Omit<HerdCommandOptions, 'json' | 'progress'>,
  onProgress?: (metrics: TickMetrics, progress: HerdProgress) => void,
): Promise<HerdReport> {
  const started = performance.now();
  const counts = herdDefaults(options.scenario, options.entities);
  const networked = options.net === 'udp';
  const viewers = options.viewers ?? (networked ? 0 : counts.viewers);
  const clients = networked ? (options.clients ?? Math.min(NET_DEFAULT_CLIENTS, counts.entities - viewers)) : 0;
  if (networked && (clients < 1 || clients > counts.entities - viewers)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_HERD_OPTION',
      `clients must be from 1 to the entities that are not viewers (${counts.entities - viewers}), received ${clients}`,
    );
  }
  const config = networked ? WorldConfig.build({ eventReserveBytes: NET_EVENT_RESERVE_BYTES }) : WorldConfig.build();
  const world = new World(config, { capacity: counts.entities, threads: options.threads });
  const herd = createHerd(world, { scenario: options.scenario, entities: counts.entities, viewers, seed: options.seed });
  const setupMs = performance.now() - started;
  const net = networked
    ? await NetHerd.start(world, { ids: herd.ids, slots: herd.slots, avatars: herd.ids.subarray(viewers), clients, seconds: options.seconds })
    : undefined;
  const ticksDue = Math.max(1, Math.round(options.seconds * config.input.tickHz));
  const totalMs = (ticksDue * 1000) / config.input.tickHz;
  let metrics: TickMetrics;
  let summary: LoopSummary;
  let interrupted = false;
  let network: NetworkReport | null = null;
  try {
    metrics = new TickMetrics(world, { entities: herd.ids, sampleViewers: options.sample });
    const epoch = performance.now();
    const loop = run(world, {
      step: () => herd.step(),
      onTick: (result, report) => {
        net?.onTick(result, report.tick);
        metrics.record(result, report);
        onProgress?.(metrics, { elapsedMs: performance.now() - epoch, totalMs });
      },
      overrun: options.overrun,
      ticks: ticksDue,
    });
    const timer = setTimeout(() => void loop.stop(), totalMs);
    const interrupt = (): void => {
      interrupted = true;
      void loop.stop();
    };
    process.once('SIGINT', interrupt);
    try {
      summary = await loop.done;
    } finally {
      clearTimeout(timer);
      metrics.close();
    }
    try {
      if (net) network = await net.finish();
    } finally {
      process.removeListener('SIGINT', interrupt);
    }
  } finally {
    await net?.close();
  }
  return {
    command: 'herd',
    scenario: options.scenario,
    entities: counts.entities,
    viewers,
    interrupted,
    threads: world.threads,
    seed: options.seed,
    net: options.net ?? 'none',
    seconds: options.seconds,
    overrun: options.overrun,
    ticksDue,
    setupMs,
    config: {
      regionSize: config.input.regionSize,
      viewRadius: config.input.viewRadius,
      cellSize: config.cellSize,
      tickHz: config.input.tickHz,
      payloadBytes: config.payloadBytes,
      eventReserveBytes: config.eventReserveBytes,
      slotsPerPacket: config.slotsPerPacket,
      walkCap: config.walkCap,
      ghostCap: config.ghostCap,
    },
    loop: summary,
    metrics: metrics.report(summary),
    network,
  };
}

/** Renders a herd report as readable text. */
// "98 slots", or with an event reserve "98 slots, 90 while events take the reserve": events take
// their reserve only when some are waiting.
function slotsText(c: HerdReport['config']): string {
  const free = Math.floor((c.payloadBytes - HEADER_BYTES) / RECORD_BYTES);
  return free === c.slotsPerPacket ? `${free} slots` : `${free} slots, ${c.slotsPerPacket} while events take the reserve`;
}

export function formatHerdReport(r: HerdReport): string {
  const m = r.metrics;
  const ms = (v: number): string => `${fmt(v, 2)} ms`;
  const rpp = m.recordsPerPacket;
  const rows: Row[] = [
    ['Metric', 'Value', 'Target'],
    'rule',
    ['ticks run', `${fmt(m.ticks)} of ${fmt(r.ticksDue)} due, in ${fmt(m.seconds, 2)} s (${fmt(m.ticksPerSecond, 1)}/s)${r.interrupted ? ', interrupted (SIGINT)' : ''}`],
    ['pass time p50', ms(m.passMs.p50), `≤ ${TARGETS.passP50Ms} ms`, m.targets.passP50Ms.met],
    ['pass time p99', ms(m.passMs.p99), `≤ ${TARGETS.passP99Ms} ms`, m.targets.passP99Ms.met],
    ['pass time worst', ms(m.passMs.worst)],
    ['pass time mean', ms(m.passMs.mean)],
    ['  native snapshot (mean)', ms(m.nativeMs.snapshot)],
    ['  native pass (mean)', ms(m.nativeMs.pass)],
    ['step time p50 / p99', `${ms(m.stepMs.p50)} / ${ms(m.stepMs.p99)}`],
    ['late ticks', fmt(m.lateTicks), `${TARGETS.lateTicks}`, m.targets.lateTicks.met],
    ['dropped ticks', fmt(m.droppedTicks)],
    ['lateness p99 / worst', `${ms(m.latenessMs.p99)} / ${ms(m.latenessMs.worst)}`],
    'rule',
    ['entities in snapshot', fmt(m.entities)],
    ['viewers served per tick', fmt(m.viewersPerTick, 1)],
    ['records per packet (mean)', `${fmt(rpp.mean, 1)} of ${rpp.slots} slots (${fmt(rpp.fill * 100, 1)}%)`, `${rpp.slots} slots`],
    ['records per packet p50 / p10', `${fmt(rpp.p50)} / ${fmt(rpp.p10)}`],
    ['full packets', `${fmt(rpp.fullShare * 100, 1)}%`],
    ['despawns per packet', fmt(m.despawnsPerPacket, 2)],
    ['candidates per viewer', fmt(m.candidatesPerViewer, 1)],
    ['examined per viewer', fmt(m.examinedPerViewer, 1)],
    ['eligible per viewer', fmt(m.eligiblePerViewer, 1)],
    'rule',
    ['bytes sent', `${fmt(m.bytes.total)} B`],
    ['bandwidth, all clients', fmtRate(m.bytes.perSecond)],
    ['bandwidth, per client', fmtRate(m.bytes.perClientPerSecond)],
    ['packet size (mean)', `${fmt(m.bytes.perPacket, 1)} B`],
  ];
  if (m.coverage) {
    const c = m.coverage;
    rows.push([
      'in range, never sent (past the ghost cap)',
      `${fmt(c.neverSentShare * 100, 2)}% (${fmt(c.neverSent)} of ${fmt(c.inRange)} pairs, ${c.sampledViewers} viewer${c.sampledViewers === 1 ? '' : 's'})`,
    ]);
    rows.push([
      'eligible (nearest ghost cap), never sent',
      `${fmt(c.eligibleNeverSentShare * 100, 2)}% (${fmt(c.eligibleNeverSent)} of ${fmt(c.eligible)} pairs)`,
    ]);
    rows.push([
      '10 nearest (brute force), never sent',
      `${fmt(c.nearestNeverSentShare * 100, 2)}% (${fmt(c.nearestNeverSent)} of ${fmt(c.nearest)} pairs)`,
    ]);
  }
  if (m.eventLoopDelayMs) {
    const e = m.eventLoopDelayMs;
    rows.push(['event-loop delay p50 / p99 / max', `${ms(e.p50)} / ${ms(e.p99)} / ${ms(e.max)}`]);
  }
  if (r.network) rows.push('rule', ...networkRows(r.network));
  const count = (n: number, one: string, many: string) => `${fmt(n)} ${n === 1 ? one : many}`;
  const clients = r.network ? ` + ${count(r.network.clients, 'UDP client', 'UDP clients')}` : '';
  const head =
    `sightline herd: ${r.scenario}, ${count(r.entities, 'entity', 'entities')}, ${count(r.viewers, 'viewer', 'viewers')}${clients}, ` +
    `${r.threads} thread${r.threads === 1 ? '' : 's'}, seed ${r.seed}, ${r.seconds} s at ${r.config.tickHz} Hz, overrun ${r.overrun}` +
    `\nregion ${r.config.regionSize} m, view radius ${r.config.viewRadius} m, cell ${r.config.cellSize} m, ` +
    `${r.config.payloadBytes}-byte packets (${slotsText(r.config)}), walk cap ${r.config.walkCap}, ghost cap ${r.config.ghostCap}; set-up ${fmt(r.setupMs)} ms`;
  const verdict = m.targets.allMet ? 'targets met' : 'targets MISSED';
  return `${head}\n\n${renderTable(rows)}\n\n  ${verdict} (p50 ≤ ${TARGETS.passP50Ms} ms, p99 ≤ ${TARGETS.passP99Ms} ms, no late ticks)\n`;
}

/** The rows of a herd report's network section. */
function networkRows(n: NetworkReport): Row[] {
  const s = n.server;
  const b = n.bots;
  const e = n.events;
  const p = n.perceivedErrorM;
  const m = (v: number | null): string => (v === null ? '-' : `${fmt(v, 3)} m`);
  const rows: Row[] = [
    ['network', `UDP on ${n.address}:${n.port}, 1 bot process`],
    ['clients connected', `${fmt(n.connected)} of ${fmt(n.clients)} in ${fmt(n.connectMs)} ms${n.connectFailed > 0 ? ` (${fmt(n.connectFailed)} failed)` : ''}`],
    ['packets sent / dropped (server)', `${fmt(s.packetsSent)} / ${fmt(s.packetsDropped)}`],
    ['bytes sent (server)', `${fmt(s.bytesSent)} B`],
    ['datagrams received (bots)', `${fmt(b.datagramsReceived)} (${fmt(b.applied)} packets applied, ${fmt(b.stale + b.duplicates + b.malformed)} discarded)`],
    ['acks sent (bots) / applied (server)', `${fmt(b.acksSent)} / ${fmt(n.acksApplied)}`],
    ['perceived error mean / p99', `${m(p.mean)} / ${m(p.p99)}`],
    ['perceived error worst', `${m(p.worst)} (${fmt(p.samples)} samples, ${fmt(p.rounds)} rounds)`],
    ['entities held per client (mean)', fmt(b.heldMean, 1)],
    ['events sent / delivered', `${fmt(e.sent)} / ${fmt(e.delivered)}`],
    ['events lost / duplicated', `${fmt(e.lost)} / ${fmt(e.duplicated)}`, '0 / 0', e.lost === 0 && e.duplicated === 0],
  ];
  if (n.drainTicks > 0) rows.push(['drain ticks after the run', fmt(n.drainTicks)]);
  if (b.disconnected > 0) rows.push(['clients disconnected during the run', fmt(b.disconnected)]);
  return rows;
}

/** Registers `sightline herd` on a program. */
export function registerHerdCommand(program: Command): Command {
  return program
    .command('herd')
    .description('Run a seeded load scenario on a new World at 20 Hz and report pass times, packet fill, bandwidth and coverage.')
    .addOption(
      new Option('--scenario <name>', 'load scenario').choices(HERD_SCENARIOS).default('town-square' satisfies HerdScenario),
    )
    .addOption(
      new Option('--entities <n>', 'entities to spawn (default: the scenario\'s: town-square 8192, crowd-50k 50000, others 16384)').argParser(
        integerOption(1, 1 << 20),
      ),
    )
    .addOption(
      new Option(
        '--viewers <n>',
        'entities made in-process viewers (default: the scenario\'s: town-square all, crowd-50k 8192, uniform/trips 4096, speed-mix 1024; with --net udp, 0)',
      ).argParser(integerOption(0, 1 << 20)),
    )
    .addOption(new Option('--threads <n>', 'pass threads, 0 = every core').argParser(integerOption(0, 256)).default(0))
    .addOption(new Option('--seconds <s>', 'run time in seconds').argParser(positiveNumberOption(86_400)).default(HERD_DEFAULT_SECONDS))
    .addOption(new Option('--seed <n>', 'PRNG seed').argParser(integerOption(0, 0xffffffff)).default(1))
    .addOption(new Option('--overrun <policy>', 'when a tick starts late').choices(OVERRUN_POLICIES).default('stretch' satisfies OverrunPolicy))
    .addOption(new Option('--sample <n>', 'viewers sampled for coverage (0 = off; fewer when entities × viewers would pass 1,048,576 distance checks a tick)').argParser(integerOption(0, 4096)).default(64))
    .addOption(
      new Option('--net <transport>', 'udp: serve bot clients in a child process over UDP on 127.0.0.1').choices(HERD_NETS).default('none' satisfies HerdNet),
    )
    .addOption(
      new Option('--clients <n>', `UDP clients in the bot process, each a herd entity's viewer (with --net udp; default ${NET_DEFAULT_CLIENTS})`).argParser(
        integerOption(1, NET_MAX_CLIENTS),
      ),
    )
    .option('--json', 'print the report as one JSON object on stdout, nothing else', false)
    .option('--no-progress', 'no live progress line')
    .action(async (opts: HerdCommandOptions, command: Command) => {
      const entities = opts.entities ?? herdDefaults(opts.scenario).entities;
      const networked = opts.net === 'udp';
      const viewers = opts.viewers ?? (networked ? 0 : herdDefaults(opts.scenario, entities).viewers);
      if (viewers > entities) {
        command.error(`error: option '--viewers <n>' argument '${viewers}' is invalid. Expected at most --entities (${entities}).`, {
          exitCode: EXIT_USAGE,
          code: 'commander.invalidArgument',
        });
      }
      if (opts.clients !== undefined && !networked) throw flagError(`error: option '--clients <n>' needs --net udp`);
      const clients = networked ? (opts.clients ?? Math.min(NET_DEFAULT_CLIENTS, entities - viewers)) : undefined;
      if (clients !== undefined && (clients < 1 || clients > entities - viewers)) {
        throw flagError(
          opts.clients === undefined
            ? `error: --net udp needs entities that are not viewers to serve its clients: --entities (${entities}) minus --viewers (${viewers}) leaves none.`
            : `error: option '--clients <n>' argument '${clients}' is invalid. Expected at most --entities minus --viewers (${entities - viewers}), at least 1.`,
        );
      }
      const showProgress = !opts.json && opts.progress && process.stderr.isTTY === true;
      let bar: cliProgress.SingleBar | undefined;
      let lastDraw = 0;
      const onProgress = (metrics: TickMetrics, progress: HerdProgress): void => {
        if (!showProgress) return;
        const now = performance.now();
        if (!bar) {
          bar = new cliProgress.SingleBar(
            {
              format: `herd ${opts.scenario} [{bar}] {seconds}/{totalSeconds} s | {tps} ticks/s | pass p50 {p50} ms p99 {p99} ms | late {late}`,
              barsize: 24,
              fps: 4,
              hideCursor: true,
              clearOnComplete: true,
              stream: process.stderr,
            },
            cliProgress.Presets.shades_classic,
          );
          bar.start(Math.round(progress.totalMs), 0, { seconds: '0.0', totalSeconds: fmt(progress.totalMs / 1000, 1), tps: '-', p50: '-', p99: '-', late: 0 });
        }
        if (now - lastDraw < 250) return;
        lastDraw = now;
        const sorted = metrics.passTimes.slice().sort();
        const p = (q: number): string => fmt(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0, 1);
        const elapsed = progress.elapsedMs / 1000;
        bar.update(Math.min(Math.round(progress.elapsedMs), Math.round(progress.totalMs)), {
          seconds: fmt(Math.min(elapsed, progress.totalMs / 1000), 1),
          // Intervals between tick completions over the time they spanned.
          tps: metrics.ticks > 1 && elapsed > 0 ? fmt((metrics.ticks - 1) / elapsed, 1) : '-',
          p50: p(0.5),
          p99: p(0.99),
          late: metrics.lateTicks,
        });
      };
      let report: HerdReport;
      try {
        report = await runHerd({ ...opts, entities, viewers, clients }, onProgress);
      } finally {
        bar?.stop();
      }
      process.stdout.write(opts.json ? `${JSON.stringify(report)}\n` : formatHerdReport(report));
    });
}

// ---------------------------------------------------------------------------------------------
// Program

/** Subcommand registrations, in help order. */
export const COMMANDS: readonly ((program: Command) => Command)[] = [registerHerdCommand, registerQualityCommand];

/** The `sightline` program with every subcommand registered. Errors throw CommanderError (exitOverride). */
export function createProgram(): Command {
  const program = new Command('sightline')
    .description('Interest management with a priority accumulator for Node.js game servers.')
    .version(packageVersion(), '-V, --version', 'print the version of sightline')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  // Subcommands inherit exitOverride and showHelpAfterError.
  for (const register of COMMANDS) register(program);
  return program;
}

/** Runs the CLI on argv (process.argv form) and resolves with the exit code. */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  const program = createProgram();
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander has written the help or the message already. `commander.help` with exit code 1
      // is help shown because no command was given.
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return 0;
      if (e.code === 'commander.help') return e.exitCode === 0 ? 0 : EXIT_USAGE;
      return EXIT_USAGE;
    }
    if (e instanceof SightlineError && e.code === ERR_INVALID_FLAG) {
      // Worded and exited like commander's own usage errors (exit code 2 tells them apart).
      process.stderr.write(`${e.message}\n(add --help for usage)\n`);
      return EXIT_USAGE;
    }
    const message = e instanceof SightlineError ? `${e.message} (${e.code})` : e instanceof Error ? (e.stack ?? e.message) : String(e);
    process.stderr.write(`sightline: ${message}\n`);
    return EXIT_FAILURE;
  }
}

if (isEntryPoint(import.meta.url)) {
  // A reader that goes away (`sightline herd | head`) closes the pipe: stop quietly, as Unix tools
  // do, instead of dying on an unhandled EPIPE.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      // Any other failure to write (a full disk): one line on stderr if it can take it, exit 1.
      try {
        if (stream !== process.stderr) process.stderr.write(`sightline: cannot write the output: ${e.message}\n`);
      } finally {
        process.exit(EXIT_FAILURE);
      }
    });
  }
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`sightline: ${String(e)}\n`);
      process.exitCode = EXIT_FAILURE;
    },
  );
}
