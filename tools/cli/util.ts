// Helpers shared by the `sightline` subcommands: exit codes, option parsers, report formatting.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from 'commander';
import { SightlineError } from 'sightline';

/** Exit code for bad usage: unknown flags, invalid values. */
export const EXIT_USAGE = 2;
/** Exit code for a failure while running. */
export const EXIT_FAILURE = 1;
/** Exit code of a run ended early by SIGINT, after its report (128 + SIGINT's 2, the shells' convention). */
export const EXIT_INTERRUPTED = 130;

/** The exit code a subcommand's action asks for when it returns normally (`main` reads it, 0 by default). */
export const actionExit = { code: 0 };

/** Error code of a flag whose value is invalid given the other flags (exit code 2). */
export const ERR_INVALID_FLAG = 'ERR_SIGHTLINE_INVALID_FLAG';

/**
 * An error for a flag that is invalid given the others: `main` prints its message (which names
 * the flag) and its code, and exits with {@link EXIT_USAGE}.
 */
export function flagError(message: string): SightlineError {
  return new SightlineError(ERR_INVALID_FLAG, message);
}

// Option parsers: each throws InvalidArgumentError, which commander reports as
// "error: option '--flag <n>' argument 'value' is invalid. <message>" (exit code 2 here).

/** Parses an integer option value in [min, max]. */
export function integerOption(min: number, max: number): (value: string) => number {
  return (value: string): number => {
    const n = /^[+-]?\d+$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`Expected an integer from ${min} to ${max}.`);
    }
    return n;
  };
}

/** Parses a number option value greater than 0 and at most max. */
export function positiveNumberOption(max: number): (value: string) => number {
  return (value: string): number => {
    // Decimal only (Number() would also take 0x10, 0b11 and 1e1).
    const n = /^[+]?(\d+\.?\d*|\.\d+)$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isFinite(n) || !(n > 0) || n > max) {
      throw new InvalidArgumentError(`Expected a number greater than 0 and at most ${max}.`);
    }
    return n;
  };
}

// ---------------------------------------------------------------------------------------------
// Report formatting.

/** Formats a number with a fixed count of decimals and thousands separators. */
export function fmt(n: number, decimals = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** Formats a byte rate, bytes/s, in kB/s or MB/s (decimal units) with the bit rate. */
export function fmtRate(bytesPerSecond: number): string {
  const bits = bytesPerSecond * 8;
  const bitText = bits >= 1e9 ? `${fmt(bits / 1e9, 2)} Gbit/s` : bits >= 1e6 ? `${fmt(bits / 1e6, 1)} Mbit/s` : `${fmt(bits / 1e3, 1)} kbit/s`;
  const byteText = bytesPerSecond >= 1e6 ? `${fmt(bytesPerSecond / 1e6, 2)} MB/s` : `${fmt(bytesPerSecond / 1e3, 1)} kB/s`;
  return `${byteText} (${bitText})`;
}

/** A table row: label, value, and optionally a target and whether it was met. */
export type Row = readonly [label: string, value: string, target?: string, met?: boolean] | 'rule';

/** Renders rows as an aligned plain-text table (two-space indent, columns padded). */
export function renderTable(rows: readonly Row[]): string {
  const cells = rows.filter((r): r is Exclude<Row, 'rule'> => r !== 'rule');
  const w0 = Math.max(...cells.map((r) => r[0].length));
  const w1 = Math.max(...cells.map((r) => r[1].length));
  const w2 = Math.max(0, ...cells.map((r) => (r[2] ?? '').length));
  const width = w0 + w1 + w2 + 14;
  return rows
    .map((r) => {
      if (r === 'rule') return '  ' + '-'.repeat(width);
      const [label, value, target, met] = r;
      let line = `  ${label.padEnd(w0)}  ${value.padStart(w1)}`;
      if (target !== undefined) line += `  ${target.padEnd(w2)}  ${met === undefined ? '' : met ? 'ok' : 'MISSED'}`;
      return line.trimEnd();
    })
    .join('\n');
}

/** Whether the module at `moduleUrl` (its import.meta.url) is the script node was started with. */
export function isEntryPoint(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
