// How bench/run.mjs prints numbers and Markdown tables (progress lines, bench/RESULTS.md, the summary).

/** A number with `d` decimals and thousands separators (en-US); '–' for null, undefined or NaN. */
export const fmt = (n, d = 0) =>
  n === null || n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

/** Microseconds as milliseconds with `d` decimals. */
export const ms = (us, d = 2) => fmt(us / 1000, d);

/** Markdown table; align: 'l' or 'r' per column (default: the first left, the rest right). */
export function table(headers, rows, align) {
  const a = align ?? headers.map((_, i) => (i === 0 ? 'l' : 'r'));
  const sep = a.map((x) => (x === 'l' ? '---' : '---:'));
  return [headers, sep, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

/** The cores-busy line under a section heading (sec: a section's result with seconds, machineCores, selfCores). */
export function cpuLine(sec) {
  if (sec.machineCores === null || sec.machineCores === undefined) return `_Cores busy: this process ${fmt(sec.selfCores, 2)}._`;
  return `_Cores busy during this section: machine ${fmt(sec.machineCores, 2)}, this process ${fmt(sec.selfCores, 2)}, others ≈ ${fmt(Math.max(0, sec.machineCores - sec.selfCores), 2)}${sec.selfCores < 0.5 ? ' (includes the bench/core child process)' : ''}; ${fmt(sec.seconds, 0)} s._`;
}
