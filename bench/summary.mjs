// The summary bench/run.mjs prints on stdout: the machine, then each section's [label, value] rows.
import { fmt } from './format.mjs';
import { sections } from './sections/index.mjs';

/** The summary text of a run's results; written: the Markdown file's path, as printed. */
export function summary(r, written) {
  const lines = [];
  lines.push(`sightline bench: ${r.machine.cpu}, ${r.machine.cores} cores, Node ${r.machine.node}, ${fmt(r.machine.seconds, 0)} s`);
  const rows = [['', 'value']];
  for (const [name, section] of Object.entries(sections)) {
    if (r.sections[name] && section.summary) rows.push(...section.summary(r.sections[name]));
  }
  const w0 = Math.max(...rows.map((row) => row[0].length));
  for (const [a, b] of rows) lines.push(`  ${a.padEnd(w0)}  ${b}`);
  lines.push(`written: ${written}`);
  return lines.join('\n') + '\n';
}
