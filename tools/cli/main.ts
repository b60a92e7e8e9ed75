#!/usr/bin/env node
// The `sightline` command line: subcommands registered by one function each (see COMMANDS);
// option parsers and report formatting shared by subcommands live in util.ts.
//
//   sightline herd [--scenario NAME] [--entities N] [--viewers N] [--threads N] [--seconds S]
//                  [--seed N] [--overrun stretch|drop] [--sample N] [--net none|udp] [--clients N]
//                  [--json] [--no-progress]
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage (unknown flag, invalid value).
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { SightlineError } from 'sightline';
import { registerHerdCommand } from './herd-command.js';
import { registerQualityCommand } from './quality-command.js';
import { actionExit, ERR_INVALID_FLAG, EXIT_FAILURE, EXIT_USAGE, isEntryPoint } from './util.js';

// The installed package's version, from its package.json (exported as `sightline/package.json`).
function packageVersion(): string {
  return (createRequire(import.meta.url)('sightline/package.json') as { version: string }).version;
}

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
  actionExit.code = 0;
  try {
    await program.parseAsync([...argv]);
    return actionExit.code;
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
