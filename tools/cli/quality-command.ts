// `sightline quality`: the command-line front of runQuality (quality.ts), kept apart so that
// importing the library does not load the command-line parser.
import { Option, type Command } from 'commander';
import { QUALITY_STRATEGIES, formatQualityReport, runQuality, type QualityStrategy } from '../quality/index.js';
import { integerOption } from './util.js';

/** Options of `sightline quality`, parsed. */
interface QualityCommandOptions {
  entities: number;
  viewers: number;
  ticks: number;
  strategy: QualityStrategy | 'all';
  seed: number;
  warmup: number | undefined;
  every: number;
  threads: number;
  json: boolean;
  progress: boolean;
}

/** Registers `sightline quality` on a program (commander). */
export function registerQualityCommand(program: Command): Command {
  return program
    .command('quality')
    .description(
      'Compare what clients believe with the truth, per distance band, for the priority accumulator, nearest-first and round-robin at the same bytes (speed-mix scenario).',
    )
    .addOption(new Option('--entities <n>', 'entities (speed-mix)').argParser(integerOption(1, 1 << 20)).default(60_000))
    .addOption(new Option('--viewers <n>', 'viewers').argParser(integerOption(1, 1 << 20)).default(200))
    .addOption(new Option('--ticks <n>', 'ticks simulated').argParser(integerOption(1, 1_000_000)).default(400))
    .addOption(new Option('--strategy <name>', 'strategy').choices(['all', ...QUALITY_STRATEGIES]).default('all'))
    .addOption(new Option('--seed <n>', 'PRNG seed').argParser(integerOption(0, 0xffffffff)).default(1))
    .addOption(
      new Option('--warmup <n>', 'leading ticks left out of the statistics, less than --ticks (default: 20, or --ticks minus 1 when smaller)').argParser(
        integerOption(0, 1_000_000),
      ),
    )
    .addOption(new Option('--every <n>', 'compare with the truth every n ticks').argParser(integerOption(1, 1_000_000)).default(1))
    .addOption(new Option('--threads <n>', 'pass threads, 0 = every core').argParser(integerOption(0, 256)).default(0))
    .option('--json', 'print the report as one JSON object on stdout, nothing else', false)
    .option('--no-progress', 'no live progress line')
    .action(async (opts: QualityCommandOptions, command: Command) => {
      if (opts.viewers > opts.entities) {
        command.error(`error: option '--viewers <n>' argument '${opts.viewers}' is invalid. Expected at most --entities (${opts.entities}).`, {
          exitCode: 2,
          code: 'commander.invalidArgument',
        });
      }
      if (opts.warmup !== undefined && opts.warmup >= opts.ticks) {
        command.error(`error: option '--warmup <n>' argument '${opts.warmup}' is invalid. Expected less than --ticks (${opts.ticks}).`, {
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
        report = await runQuality({
          entities: opts.entities,
          viewers: opts.viewers,
          ticks: opts.ticks,
          strategy: opts.strategy,
          seed: opts.seed,
          warmupTicks: opts.warmup,
          measureEvery: opts.every,
          threads: opts.threads,
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
    });
}
