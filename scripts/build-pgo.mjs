#!/usr/bin/env node
// Profile-guided build of the addon (GCC):
//
//   npm run build:pgo          build/Release/sightline.node, profile-guided
//   npm run prebuildify        the same, into prebuilds/ (what the package ships); prebuildify moves
//                              the build out of build/Release, so the addon then loads from prebuilds/
//
// 1. compiles the addon instrumented (binding.gyp: sightline_pgo=generate);
// 2. runs the training workload below on it, which writes the profile (one .gcda file per
//    source) into a temporary directory;
// 3. compiles it again with the profile (sightline_pgo=use, which also sets SIGHTLINE_PGO, so
//    `profileGuided` reads true; a source without profile data fails the build), with node-gyp
//    or, given --prebuild, with prebuildify.
// If a step fails or is interrupted, the addon is compiled again plainly (npm run build:native),
// so no instrumented build is left behind, and the temporary directory is removed.
//
// The training workload is the herd's five scenarios at their default sizes on 2 threads, and a
// small world whose viewers acknowledge packets and receive events, so the acknowledgement and
// event paths are laid out as code that runs, not as cold code. Needs dist/ (npm run build:ts).
// Run through npm: npm puts its node-gyp on the PATH of the scripts it runs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const USAGE =
  'usage: npm run build:pgo            (node scripts/build-pgo.mjs, through npm)\n' +
  '       npm run prebuildify          (node scripts/build-pgo.mjs --prebuild)\n' +
  '  --prebuild: the final build goes to prebuilds/ (prebuildify --napi --strip)\n' +
  '  --train:    run the training workload only (step 2; used by the script itself)\n';
let argv;
try {
  ({ values: argv } = parseArgs({
    options: {
      prebuild: { type: 'boolean', default: false },
      train: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  process.stderr.write(`build-pgo: ${e.message}\n${USAGE}`);
  process.exit(2);
}
if (argv.help) {
  process.stdout.write(USAGE);
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
  try {
    execFileSync('node-gyp', ['--version'], { stdio: 'ignore' });
  } catch {
    log('node-gyp is not on the PATH: run this script through npm (npm run build:pgo, npm run prebuildify), which puts its node-gyp there');
    process.exit(1);
  }
  const profileDir = mkdtempSync(join(os.tmpdir(), 'sightline-pgo-'));
  if (/\s/.test(profileDir)) {
    rmSync(profileDir, { recursive: true, force: true });
    log(`the temporary directory ${JSON.stringify(profileDir)} contains whitespace, which GYP_DEFINES cannot carry: set TMPDIR to a path without`);
    process.exit(1);
  }
  // Ctrl-C reaches the running child too; the script stays up to clean up after it.
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // node-gyp's info lines are left out (npm_config_loglevel); warnings and errors still show.
  const env = (pgo) => {
    const defines = pgo ? `sightline_pgo=${pgo} sightline_pgo_dir=${profileDir}` : '';
    return { ...process.env, npm_config_loglevel: 'warn', GYP_DEFINES: `${process.env.GYP_DEFINES ?? ''} ${defines}`.trim() };
  };
  const run = (file, args, pgo) => execFileSync(file, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: env(pgo) });
  let instrumented = false;
  try {
    const t0 = performance.now();
    log('1/3 compiling the instrumented addon (node-gyp rebuild)');
    instrumented = true;
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
    instrumented = false;
    log(`done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } catch (e) {
    log(`${interrupted ? 'interrupted' : 'failed'}: ${e.message.split('\n')[0]}`);
    if (instrumented) {
      log('compiling the addon plainly again (node-gyp rebuild), so that no instrumented build is left behind');
      try {
        run('node-gyp', ['rebuild'], null);
      } catch (e2) {
        log(`that failed too (${e2.message.split('\n')[0]}): run npm run build:native before using the addon`);
      }
    }
    process.exitCode = 1;
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function train() {
  const { World, WorldConfig, decodePacket } = await import(pathToFileURL(join(root, 'dist', 'lib', 'index.js')).href);
  const { createHerd, herdDefaults, HERD_SCENARIOS } = await import(pathToFileURL(join(root, 'dist', 'tools', 'herd', 'index.js')).href);
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
