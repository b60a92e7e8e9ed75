// `sightline herd`: its flags, a live progress bar, and the report on stdout.
import cliProgress from 'cli-progress';
import { Option, type Command } from 'commander';
import { OVERRUN_POLICIES, type OverrunPolicy } from 'sightline';
import type { TickMetrics } from '../herd/metrics.js';
import { NET_DEFAULT_CLIENTS, NET_MAX_CLIENTS, NET_NATIVE_BOTS } from '../herd/net-herd.js';
import { HERD_DEFAULT_SECONDS, HERD_NETS, HERD_WEB_HOST, HERD_WEB_PORT, runHerd, type HerdCommandOptions, type HerdNet, type HerdProgress, type HerdReport } from '../herd/run.js';
import { HERD_SCENARIOS, herdDefaults, type HerdScenario } from '../herd/scenarios.js';
import { WEB_MAX_PAGES } from '../herd/web-herd.js';
import { formatHerdReport } from './herd-report.js';
import { actionExit, EXIT_INTERRUPTED, EXIT_USAGE, flagError, fmt, integerOption, positiveNumberOption } from './util.js';

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
    .addOption(new Option('--threads <n>', 'pass threads, 0 = one per CPU the process may use').argParser(integerOption(0, 256)).default(0))
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
    .addOption(
      new Option('--bots <kind>', 'with --net udp: native (light clients acknowledging natively, every 64th keeping what it believes; Linux) or node (a UdpClient each)')
        .choices(['native', 'node'])
        .default(NET_NATIVE_BOTS ? 'native' : 'node'),
    )
    .addOption(
      new Option('--data-path <path>', "with --net udp: the server's data path, native (Linux: sendmmsg from the pass threads, a recvmmsg thread) or dgram (node:dgram)").choices([
        'native',
        'dgram',
      ]),
    )
    .option('--state', 'state beyond positions: heading, animation and health as fields, a kind, a name and level as attributes', false)
    .option('--no-governor', "run without the tick governor (run()'s load shedding, on by default)")
    .option('--congestion', 'congestion control for the UDP clients (with --net udp)', false)
    .option('--web', 'serve the live page: a browser joins as a WebSocket client and draws what it believes next to the truth', false)
    .addOption(new Option('--web-port <n>', 'port of the live page (0 = a free one)').argParser(integerOption(0, 65535)).default(HERD_WEB_PORT))
    .addOption(new Option('--web-host <address>', 'address the live page is served on').default(HERD_WEB_HOST))
    .option('--json', 'print the report as one JSON object on stdout, nothing else', false)
    .option('--no-progress', 'no live progress line')
    .action(async (opts: HerdCommandOptions, command: Command) => {
      const entities = opts.entities ?? herdDefaults(opts.scenario).entities;
      const networked = opts.net === 'udp';
      // With --web, the default leaves room for the pages to watch from.
      const viewers = opts.viewers ?? (networked ? 0 : Math.max(0, Math.min(herdDefaults(opts.scenario, entities).viewers, entities - (opts.web ? WEB_MAX_PAGES : 0))));
      if (viewers > entities) {
        command.error(`error: option '--viewers <n>' argument '${viewers}' is invalid. Expected at most --entities (${entities}).`, {
          exitCode: EXIT_USAGE,
          code: 'commander.invalidArgument',
        });
      }
      if (opts.clients !== undefined && !networked) throw flagError(`error: option '--clients <n>' needs --net udp`);
      if (opts.congestion === true && !networked) throw flagError(`error: option '--congestion' needs --net udp`);
      if (!opts.web && (command.getOptionValueSource('webPort') === 'cli' || command.getOptionValueSource('webHost') === 'cli')) {
        throw flagError(`error: options '--web-port' and '--web-host' need --web`);
      }
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
      if (opts.web && entities - viewers - (clients ?? 0) < 1) {
        throw flagError(`error: --web needs a herd entity that is neither a viewer nor a UDP client's avatar to watch from: --entities (${entities}) leaves none.`);
      }
      let report: HerdReport;
      try {
        report = await runHerd({ ...opts, entities, viewers, clients }, onProgress, (url) => process.stderr.write(`live view: ${url}\n`));
      } finally {
        bar?.stop();
      }
      process.stdout.write(opts.json ? `${JSON.stringify(report)}\n` : formatHerdReport(report));
      if (report.interrupted) actionExit.code = EXIT_INTERRUPTED;
    });
}
