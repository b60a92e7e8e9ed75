// `sightline quality`: the command-line front of runQuality (quality.ts), kept apart so that
// importing the library does not load the command-line parser.
import { Option, type Command } from 'commander';
import { QUALITY_SCENARIOS, QUALITY_SCENARIO_DEFAULTS, QUALITY_STRATEGIES, formatQualityReport, runQuality, type QualityScenario, type QualityStrategy } from '../quality/index.js';
import { actionExit, EXIT_INTERRUPTED, integerOption } from './util.js';

/** Options of `sightline quality`, parsed. */
interface QualityCommandOptions {
  scenario: QualityScenario;
  entities: number | undefined;
  viewers: number | undefined;
  ticks: number | undefined;
  strategy: QualityStrategy | 'all';
  seed: number;
  warmup: number | undefined;
  every: number;
  threads: number;
  grace: number | undefined;
  walkCap: number | undefined;
  ghostCap: number | undefined;
  extrapolateTicks: number | undefined;
  observe: 'in-range' | 'gathered' | undefined;
  governorLevel: number;
  json: boolean;
  progress: boolean;
}

/** Registers `sightline quality` on a program (commander). */
export function registerQualityCommand(program: Command): Command {
  return program
    .command('quality')
    .description(
      "Compare what clients believe with the truth, per distance band, just before and just after each tick's packet, for the priority accumulator, nearest-first and round-robin at the same bytes.",
    )
    .addOption(new Option('--scenario <name>', "population: umwelt (umwelt-rs's published scenario), speed-mix, crowd").choices([...QUALITY_SCENARIOS]).default('umwelt'))
    .addOption(new Option('--entities <n>', `entities (default: the scenario's, ${QUALITY_SCENARIO_DEFAULTS.umwelt.entities} or crowd ${QUALITY_SCENARIO_DEFAULTS.crowd.entities})`).argParser(integerOption(1, 1 << 20)))
    .addOption(new Option('--viewers <n>', `viewers (default: the scenario's, ${QUALITY_SCENARIO_DEFAULTS.umwelt.viewers} or crowd ${QUALITY_SCENARIO_DEFAULTS.crowd.viewers})`).argParser(integerOption(1, 1 << 20)))
    .addOption(new Option('--ticks <n>', `ticks simulated (default: the scenario's, ${QUALITY_SCENARIO_DEFAULTS.umwelt.ticks} or crowd ${QUALITY_SCENARIO_DEFAULTS.crowd.ticks})`).argParser(integerOption(1, 1_000_000)))
    .addOption(new Option('--strategy <name>', 'strategy').choices(['all', ...QUALITY_STRATEGIES]).default('all'))
    .addOption(new Option('--seed <n>', 'PRNG seed').argParser(integerOption(0, 0xffffffff)).default(1))
    .addOption(
      new Option('--warmup <n>', "leading ticks left out of the statistics, less than --ticks (default: the scenario's, umwelt 40, else 20; --ticks minus 1 when smaller)").argParser(
        integerOption(0, 1_000_000),
      ),
    )
    .addOption(new Option('--every <n>', 'compare with the truth every n ticks').argParser(integerOption(1, 1_000_000)).default(1))
    .addOption(new Option('--threads <n>', 'pass threads, 0 = one per CPU the process may use').argParser(integerOption(0, 256)).default(0))
    .addOption(new Option('--grace <passes>', 'graceTicks of the world (default 10)').argParser(integerOption(0, 30_000)))
    .addOption(new Option('--walk-cap <n>', 'walkCap of the world (default 256)').argParser(integerOption(1, 1 << 30)))
    .addOption(new Option('--ghost-cap <n>', 'ghostCap of the world (default 256)').argParser(integerOption(1, 16_384)))
    .addOption(new Option('--observe <set>', "compare over every entity in range, or over the gather's candidates (default: gathered for umwelt, as umwelt-rs does; else in-range)").choices(['in-range', 'gathered']))
    .addOption(new Option('--governor-level <n>', "hold the tick governor's levers at this level (0 to 5) from the first tick on").argParser(integerOption(0, 5)).default(0))
    .addOption(new Option('--extrapolate-ticks <n>', 'furthest ahead the extrapolated figures predict, ticks (default 20)').argParser(integerOption(0, 10_000)))
    .option('--json', 'print the report as one JSON object on stdout, nothing else', false)
    .option('--no-progress', 'no live progress line')
    .action(async (opts: QualityCommandOptions, command: Command) => {
      const d = QUALITY_SCENARIO_DEFAULTS[opts.scenario];
      const entities = opts.entities ?? d.entities;
      const ticks = opts.ticks ?? d.ticks;
      if (opts.viewers !== undefined && opts.viewers > entities) {
        command.error(`error: option '--viewers <n>' argument '${opts.viewers}' is invalid. Expected at most --entities (${entities}).`, {
          exitCode: 2,
          code: 'commander.invalidArgument',
        });
      }
      if (opts.warmup !== undefined && opts.warmup >= ticks) {
        command.error(`error: option '--warmup <n>' argument '${opts.warmup}' is invalid. Expected less than --ticks (${ticks}).`, {
          exitCode: 2,
          code: 'commander.invalidArgument',
        });
      }
      const progress = !opts.json && opts.progress && process.stderr.isTTY === true;
      // Ctrl-C ends the run early; the report covers the ticks run until then.
      const abort = new AbortController();
      const interrupt = (): void => abort.abort();
      process.once('SIGINT', interrupt);
      let last = 0;
      let report;
      try {
        const config = {
          ...(opts.grace === undefined ? {} : { graceTicks: opts.grace }),
          ...(opts.walkCap === undefined ? {} : { walkCap: opts.walkCap }),
          ...(opts.ghostCap === undefined ? {} : { ghostCap: opts.ghostCap }),
        };
        report = await runQuality({
          scenario: opts.scenario,
          entities: opts.entities,
          viewers: opts.viewers,
          ticks: opts.ticks,
          strategy: opts.strategy,
          seed: opts.seed,
          warmupTicks: opts.warmup,
          measureEvery: opts.every,
          threads: opts.threads,
          config,
          extrapolate: opts.extrapolateTicks === undefined ? {} : { maxTicks: opts.extrapolateTicks },
          observe: opts.observe,
          governorLevel: opts.governorLevel,
          onProgress: progress
            ? (done, total) => {
                const now = performance.now();
                if (now - last < 250 && done < total) return;
                last = now;
                process.stderr.write(`\rquality: tick ${done}/${total}`);
                if (done === total) process.stderr.write('\r\x1b[K');
              }
            : undefined,
          signal: abort.signal,
        });
      } finally {
        process.removeListener('SIGINT', interrupt);
      }
      if (progress && report.interrupted) process.stderr.write('\r\x1b[K');
      process.stdout.write(opts.json ? `${JSON.stringify(report)}\n` : formatQualityReport(report));
      if (report.interrupted) actionExit.code = EXIT_INTERRUPTED;
    });
}
