#!/usr/bin/env node
// Profile-guided build of the addon (GCC or Clang with GCC-style profile flags):
//
//   npm run build:pgo          build/Release/sightline.node, profile-guided
//   npm run prebuildify        the same, into prebuilds/ (what the package ships)
//
// 1. compiles the addon instrumented (binding.gyp: sightline_pgo=generate);
// 2. runs the training workload below on it, which writes the profile (one .gcda file per
//    source) into a temporary directory;
// 3. compiles it again with the profile (sightline_pgo=use, which also sets SIGHTLINE_PGO, so
//    `profileGuided` reads true), with node-gyp or, given --prebuild, with prebuildify.
//
// The training workload is the herd's five scenarios at their default sizes on 2 threads, and a
// small world whose viewers acknowledge packets and receive events, so the acknowledgement and
// event paths are laid out as code that runs, not as cold code. Needs dist/ (npm run build:ts).
// Run through npm: npm puts node-gyp on the PATH of its scripts.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: argv } = parseArgs({
  options: {
    prebuild: { type: 'boolean', default: false },
    train: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (argv.help) {
  process.stdout.write('usage: node scripts/build-pgo.mjs [--prebuild]\n  --prebuild: the final build goes to prebuilds/ (prebuildify --napi --strip)\n');
  process.exit(0);
}
const log = (message) => process.stderr.write(`[pgo] ${message}\n`);

if (argv.train) {
  await train();
} else {
  build();
}

function build() {
  if (!existsSync(join(root, 'dist', 'lib', 'index.js'))) {
    log('dist/lib is missing: run npm run build:ts first');
    process.exit(1);
  }
  const profileDir = mkdtempSync(join(os.tmpdir(), 'sightline-pgo-'));
  const run = (file, args, pgo) => {
    const defines = `${process.env.GYP_DEFINES ?? ''} sightline_pgo=${pgo} sightline_pgo_dir=${profileDir}`.trim();
    execFileSync(file, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, GYP_DEFINES: defines } });
  };
  try {
    const t0 = performance.now();
    log('1/3 compiling the instrumented addon (node-gyp rebuild)');
    run('node-gyp', ['rebuild'], 'generate');
    log('2/3 training: the herd scenarios and an acknowledging world');
    execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--train'], { cwd: root, stdio: 'inherit' });
    const profiles = readdirSync(profileDir).filter((f) => f.endsWith('.gcda'));
    if (profiles.length === 0) throw new Error(`the training run wrote no profile into ${profileDir}`);
    log(`    ${profiles.length} profile files`);
    if (argv.prebuild) {
      log('3/3 compiling with the profile into prebuilds/ (prebuildify --napi --strip)');
      run(join(root, 'node_modules', '.bin', 'prebuildify'), ['--napi', '--strip'], 'use');
    } else {
      log('3/3 compiling with the profile (node-gyp rebuild)');
      run('node-gyp', ['rebuild'], 'use');
    }
    log(`done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } catch (e) {
    log(`failed: ${e.message}`);
    process.exitCode = 1;
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
  }
}

async function train() {
  const lib = await import(pathToFileURL(join(root, 'dist', 'lib', 'index.js')).href);
  const { World, WorldConfig, createHerd, herdDefaults, HERD_SCENARIOS, decodePacket } = lib;
  const config = WorldConfig.build();
  for (const scenario of HERD_SCENARIOS) {
    const { entities } = herdDefaults(scenario);
    const world = new World(config, { capacity: entities, threads: 2 });
    const herd = createHerd(world, { scenario, seed: 7 });
    const t0 = performance.now();
    for (let t = 0; t < 25; t++) {
      herd.step();
      await world.tick();
    }
    log(`    ${scenario}: 25 ticks in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  // Acknowledgements and events: every client acknowledges what it receives, but one packet in
  // ten is taken as lost; each viewer gets an event every few ticks.
  const ackConfig = WorldConfig.build({ eventReserveBytes: 96 });
  const world = new World(ackConfig, { capacity: 2048, threads: 2 });
  const herd = createHerd(world, { scenario: 'uniform', entities: 2048, viewers: 256, seed: 8, viewerOptions: { acks: true } });
  const viewers = herd.viewers;
  const event = new Uint8Array(24);
  for (let t = 0; t < 60; t++) {
    herd.step();
    if (t % 3 === 0) for (let i = t % 4; i < viewers.length; i += 4) world.emit(event, { viewer: viewers[i] });
    const result = await world.tick();
    for (const p of result.packets) {
      const { sequence } = decodePacket(p.bytes, ackConfig);
      if ((sequence + p.viewer) % 10 !== 0) world.acknowledge(p.viewer, sequence, 0xffffffff);
    }
  }
  log('    acknowledging world: 60 ticks');
}
