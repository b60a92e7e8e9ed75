// Measurement helpers of bench/run.mjs: the clock, CPU windows (the cores other processes keep
// busy), waiting for a quiet machine, medians and quantiles, progress lines on stderr.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fmt } from './format.mjs';

/** Monotonic clock, ms. */
export const now = () => performance.now();
const sorted = (a) => Float64Array.from(a).sort();
/** Median of a list of numbers. */
export const median = (a) => (a.length === 0 ? NaN : sorted(a)[Math.floor(a.length / 2)]);
/** Nearest-rank quantile q of a list of numbers (with 60 samples, p99 is the largest). */
export const quantile = (a, q) => (a.length === 0 ? NaN : sorted(a)[Math.min(a.length - 1, Math.max(0, Math.ceil(q * a.length) - 1))]);
/** A progress line on stderr: `[section] message`. */
export const log = (section, message) => process.stderr.write(`[${section}] ${message}\n`);
/** One-minute load average. */
export const load = () => os.loadavg()[0];

/** Busy CPU time of the whole machine, s (Linux /proc/stat; null elsewhere). */
export function machineBusySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / 100;
  } catch {
    return null;
  }
}

/** CPU time of this process, s. */
export const selfSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/**
 * Starts a CPU window; the returned function gives the cores kept busy since then by other
 * processes (machine busy minus this process; null where /proc/stat is missing).
 */
export function cpuWindow() {
  const m0 = machineBusySeconds();
  const s0 = selfSeconds();
  const t0 = now();
  return () => {
    const m1 = machineBusySeconds();
    if (m0 === null || m1 === null) return null;
    const wall = (now() - t0) / 1000;
    return Math.max(0, (m1 - m0 - (selfSeconds() - s0)) / wall);
  };
}

/** Cores other processes may keep busy before a measurement waits for them. */
export const QUIET_CORES = 0.25;

/** Longest wait for a quiet machine, ms: 3 s with --quick, else 10 s. */
export const quietWaitMs = (quick) => (quick ? 3_000 : 10_000);

/**
 * Waits (at most maxWaitMs) until other processes keep fewer than QUIET_CORES cores busy over
 * half a second. Returns the last reading, cores.
 */
export async function waitQuiet(section, maxWaitMs) {
  const until = now() + maxWaitMs;
  let said = false;
  for (;;) {
    const w = cpuWindow();
    await new Promise((r) => setTimeout(r, 500));
    const others = w();
    if (others === null || others < QUIET_CORES) return others;
    if (now() >= until) {
      log(section, `other processes still keep ${fmt(others, 2)} cores busy; measuring anyway`);
      return others;
    }
    if (!said) log(section, `waiting for other processes (${fmt(others, 2)} cores busy) to settle`);
    said = true;
  }
}
