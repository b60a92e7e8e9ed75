#!/usr/bin/env node
// sightline benchmarks: `npm run bench` (after `npm run build`). Progress on stderr, a summary table
// on stdout, the full results in bench/RESULTS.md (the generated section; the header above it is
// kept) and as JSON in bench/out/results.json. Method: docs/benchmarks.md.
//
//   node bench/run.mjs [--quick] [--only pass,scaling,snapshot,gather,js,peers,micro] [--out FILE]
//
// --quick: fewer ticks, sizes and samples (about a minute); writes bench/out/RESULTS.quick.md
// unless --out is given.
//
// This file parses the arguments, runs the sections and writes the results. The sections are
// bench/sections/*.mjs; measurement helpers bench/measure.mjs; the Markdown bench/markdown.mjs;
// the stdout summary bench/summary.mjs; the run's options (sizes, seed) bench/options.mjs.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { kernels, profileGuided } from '../dist/lib/index.js';
import { fmt } from './format.mjs';
import { writeMarkdown } from './markdown.mjs';
import { load, log, machineBusySeconds, now, selfSeconds } from './measure.mjs';
import { runOptions } from './options.mjs';
import { SECTIONS, sections } from './sections/index.mjs';
import { summary } from './summary.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const USAGE = 'usage: node bench/run.mjs [--quick] [--only ' + SECTIONS.join(',') + '] [--out FILE]\n';
let argv;
try {
  ({ values: argv } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  process.stderr.write(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (argv.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const quick = argv.quick;
const only = argv.only ? argv.only.split(',').map((s) => s.trim()) : SECTIONS;
for (const s of only) {
  if (!SECTIONS.includes(s)) {
    process.stderr.write(`unknown section ${JSON.stringify(s)}; sections: ${SECTIONS.join(', ')}\n`);
    process.exit(2);
  }
}
const outPath = argv.out ?? join(root, quick ? 'bench/out/RESULTS.quick.md' : 'bench/RESULTS.md');

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

const run = runOptions({ quick });
const results = { sections: {} };
const started = now();
if (!profileGuided) log('bench', 'the addon is a plain -O3 build; `npm run build:pgo` builds the profile-guided one the prebuilds ship');

for (const name of SECTIONS) {
  if (!only.includes(name)) continue;
  const loadBefore = load();
  const busy0 = machineBusySeconds();
  const self0 = selfSeconds();
  const t0 = now();
  const section = await sections[name].measure(run);
  const wall = (now() - t0) / 1000;
  section.seconds = wall;
  section.loadBefore = loadBefore;
  // Cores kept busy during the section by the whole machine and by this process (bench/core runs
  // in a child process, so in its sections the difference includes it).
  const busy1 = machineBusySeconds();
  section.machineCores = busy0 === null || busy1 === null ? null : (busy1 - busy0) / wall;
  section.selfCores = (selfSeconds() - self0) / wall;
  results.sections[name] = section;
  log(name, `done in ${fmt(wall, 1)} s; cores busy: machine ${fmt(section.machineCores, 2)}, this process ${fmt(section.selfCores, 2)}`);
}

const cpus = os.cpus();
const commit = git(['rev-parse', '--short', 'HEAD']);
// Changes to the files this script writes (bench/RESULTS.md, bench/out/) do not count: only the code's.
const dirty = git(['status', '--porcelain', '--', '.', ':!bench/RESULTS.md', ':!bench/out']) !== '';
const command =
  process.env.npm_lifecycle_event === 'bench'
    ? `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`
    : `node ${relative(root, fileURLToPath(import.meta.url))}${process.argv.length > 2 ? ' ' + process.argv.slice(2).join(' ') : ''}`;
results.machine = {
  cpu: cpus[0]?.model ?? 'unknown',
  cores: cpus.length,
  memoryGiB: os.totalmem() / 2 ** 30,
  kernels,
  profileGuided,
  os: `${os.type()} ${os.release()} ${os.arch()}`,
  node: process.version,
  v8: process.versions.v8,
  date: new Date().toISOString(),
  command,
  commit: commit ? `${commit}${dirty ? ' (with uncommitted changes)' : ''}` : 'unknown',
  quick,
  seconds: (now() - started) / 1000,
  loadAverage: os.loadavg(),
};
results.notes = run.notes;

writeMarkdown(outPath, results, run);
mkdirSync(join(root, 'bench', 'out'), { recursive: true });
writeFileSync(join(root, 'bench', 'out', quick ? 'results.quick.json' : 'results.json'), JSON.stringify(results, null, 2) + '\n');
process.stdout.write(summary(results, relative(root, outPath)));
