// The generated part of bench/RESULTS.md: the run table, the method paragraph, the notes, then each
// section's own Markdown (bench/sections/), spliced between the BEGIN and END markers of the file.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fmt, table } from './format.mjs';
import { QUIET_CORES } from './measure.mjs';
import { sections } from './sections/index.mjs';

const BEGIN = '<!-- BEGIN GENERATED: bench/run.mjs rewrites everything from here to the END marker -->';
const END = '<!-- END GENERATED -->';

const DEFAULT_HEADER = `# sightline benchmark results

Measured numbers, written by \`npm run bench\` (bench/run.mjs). Method, and how to read the ratios:
[docs/benchmarks.md](../docs/benchmarks.md).
`;

/** The run table (results.machine), the method paragraph and the notes. */
function runMarkdown(r, run) {
  const m = r.machine;
  const out = [];
  out.push(`## Run`);
  out.push('');
  out.push(
    table(
      ['', ''],
      [
        ['Machine', `${m.cpu}, ${m.cores} cores (os.cpus()), ${fmt(m.memoryGiB, 0)} GiB`],
        ['Kernels', `${m.kernels ?? 'portable'} (\`kernels\`; SIGHTLINE_SIMD=off forces the portable ones)`],
        [
          'Addon build',
          m.profileGuided
            ? 'profile-guided (`npm run build:pgo`; the published prebuilds are built this way)'
            : 'plain -O3 (`npm run build:native`); `npm run build:pgo` builds what the prebuilds ship, about 8-10% faster',
        ],
        ['OS', m.os],
        ['Node', `${m.node} (V8 ${m.v8})`],
        ['Date', m.date],
        ['Command', `\`${m.command}\``],
        ['Commit', m.commit],
        ['Run time', `${fmt(m.seconds, 0)} s${m.quick ? ' (--quick)' : ''}`],
      ],
      ['l', 'l'],
    ),
  );
  out.push('');
  out.push(
    'All times are medians over the measured ticks unless a column says otherwise; ticks are measured after warm-up ticks, ' +
      `positions move as tools/herd/scenarios.ts moves them (seed ${run.seed}), at the default configuration (region 4,096 m, view radius 256 m, ` +
      'cell 128 m, 20 Hz, 1,200-byte packets = 98 update slots, walk cap 256, ghost cap 256). ' +
      'Under each heading: the cores kept busy during that section by the whole machine and by this process (from /proc/stat and ' +
      'process.cpuUsage()); the difference is other processes, which inflate times, the 2-thread ones most. Each measurement first waits ' +
      `(up to ${run.quietWaitMs / 1000} s) for other processes to use less than ${QUIET_CORES} cores, and tables give their share during it.`,
  );
  if (r.notes.length) {
    out.push('');
    for (const n of r.notes) out.push(`> ${n}`);
  }
  return out;
}

/** The Markdown of a run's results (results.json's object), sections in run order. */
export function markdown(r, run) {
  const out = runMarkdown(r, run);
  for (const [name, section] of Object.entries(sections)) {
    if (r.sections[name]) out.push(...section.markdown(r.sections[name], run));
  }
  return out.join('\n');
}

/**
 * Writes the Markdown of `r` to outPath between the BEGIN and END markers, keeping what the file
 * holds outside them; a file without the markers gets them appended, a missing file a default
 * header.
 */
export function writeMarkdown(outPath, r, run) {
  const generated = `${BEGIN}\n\n${markdown(r, run)}\n\n${END}\n`;
  let text;
  if (existsSync(outPath)) {
    const old = readFileSync(outPath, 'utf8');
    const b = old.indexOf(BEGIN);
    const e = old.indexOf(END);
    if (b >= 0) text = old.slice(0, b) + generated + (e >= 0 ? old.slice(e + END.length).replace(/^\n/, '') : '');
    else text = `${old.trimEnd()}\n\n${generated}`;
  } else text = `${DEFAULT_HEADER}\n${generated}`;
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, text);
}
