#!/usr/bin/env node
// sightline benchmarks: `npm run bench` (after `npm run build`). Progress on stderr, a summary table
// on stdout, the full results in bench/RESULTS.md (the generated section; the header above it is
// kept) and as JSON in bench/out/results.json. Method: docs/benchmarks.md.
//
//   node bench/run.mjs [--quick] [--only pass,scaling,snapshot,gather,js,peers,micro] [--out FILE]
//
// --quick: fewer ticks, sizes and samples (about a minute); writes bench/out/RESULTS.quick.md
// unless --out is given.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { World, WorldConfig, decodePacket, decodePacketRaw, createRawPacket, kernels, profileGuided } from '../dist/lib/index.js';
import { createHerd } from '../dist/tools/herd/index.js';
import { CORE_BUILD_COMMAND, buildCore, runCore } from './core.mjs';
import { BruteForcePeer, ColyseusPeer, sampleIndices } from './peers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SECTIONS = ['pass', 'scaling', 'snapshot', 'gather', 'js', 'peers', 'micro'];
const BEGIN = '<!-- BEGIN GENERATED: bench/run.mjs rewrites everything from here to the END marker -->';
const END = '<!-- END GENERATED -->';

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

/** Run sizes. ticks: measured ticks after `warmup` ticks; sample: viewers the peers serve. */
const P = quick
  ? { warmup: 5, ticks: 20, scaling: [1024, 8192], density: [2048, 8192], coreWarmup: 3, coreTicks: 10, peerWarmup: 2, peerTicks: 4, sample: 32, microMs: 100, jsTicks: 20 }
  : { warmup: 20, ticks: 60, scaling: [1024, 8192, 32768], density: [2048, 8192, 32768], coreWarmup: 5, coreTicks: 30, peerWarmup: 3, peerTicks: 20, sample: 128, microMs: 400, jsTicks: 60 };
const SEED = 1;

// ---------------------------------------------------------------------------------------------
// Helpers.

const now = () => performance.now();
const sorted = (a) => Float64Array.from(a).sort();
/** Median of a list of numbers. */
const median = (a) => (a.length === 0 ? NaN : sorted(a)[Math.floor(a.length / 2)]);
/** Nearest-rank quantile q of a list of numbers (with 60 samples, p99 is the largest). */
const quantile = (a, q) => (a.length === 0 ? NaN : sorted(a)[Math.min(a.length - 1, Math.max(0, Math.ceil(q * a.length) - 1))]);
const fmt = (n, d = 0) =>
  n === null || n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const ms = (us, d = 2) => fmt(us / 1000, d);
const log = (section, message) => process.stderr.write(`[${section}] ${message}\n`);
const load = () => os.loadavg()[0];

/** Busy CPU time of the whole machine, s (Linux /proc/stat; null elsewhere). */
function machineBusySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / 100;
  } catch {
    return null;
  }
}

/** CPU time of this process, s. */
const selfSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/**
 * Starts a CPU window; the returned function gives the cores kept busy since then by other
 * processes (machine busy minus this process; null where /proc/stat is missing).
 */
function cpuWindow() {
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
const QUIET_CORES = 0.25;
/** Longest wait for a quiet machine, ms. */
const QUIET_WAIT_MS = quick ? 3_000 : 10_000;

/**
 * Waits (at most QUIET_WAIT_MS) until other processes keep fewer than QUIET_CORES cores busy over
 * half a second. Returns the last reading, cores.
 */
async function waitQuiet(section) {
  const until = now() + QUIET_WAIT_MS;
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

/** Markdown table. */
function table(headers, rows, align) {
  const a = align ?? headers.map((_, i) => (i === 0 ? 'l' : 'r'));
  const sep = a.map((x) => (x === 'l' ? '---' : '---:'));
  return [headers, sep, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

const results = { sections: {} };
const notes = [];
const started = now();
if (!profileGuided) log('bench', 'the addon is a plain -O3 build; `npm run build:pgo` builds the profile-guided one the prebuilds ship');

// ---------------------------------------------------------------------------------------------
// Worlds under a herd: pass, snapshot and tick wall times over the measured ticks.

/**
 * Runs a herd scenario on one new World per entry of `threadsList` and measures `ticks` ticks
 * after `warmup`. The worlds' herds share a seed, so every world sees the same positions; the
 * worlds tick in turn within each tick, so background load falls on all of them alike.
 * Returns one result per thread count. Times in µs; perViewerUs = median pass / viewers served.
 */
async function measureWorlds({ section, scenario, entities, viewers, threadsList, regionSize, warmup, ticks }) {
  const config = WorldConfig.build(regionSize ? { regionSize } : undefined);
  const runs = threadsList.map((threads) => {
    const world = new World(config, { capacity: entities, threads });
    const herd = createHerd(world, { scenario, entities, viewers, seed: SEED });
    return { world, herd, pass: [], snap: [], wall: [], sum: { served: 0, records: 0, candidates: 0, examined: 0, bytes: 0 } };
  });
  const label = `${scenario}, ${fmt(entities)} entities, ${fmt(viewers)} viewers, threads ${runs.map((r) => r.world.threads).join(' and ')}${regionSize ? `, region ${regionSize} m` : ''}`;
  await waitQuiet(section);
  log(section, `${label}: ${warmup} + ${ticks} ticks`);
  const cpu = cpuWindow();
  for (let t = 0; t < warmup + ticks; t++) {
    for (const run of runs) {
      run.herd.step();
      const t0 = now();
      const r = await run.world.tick();
      const t1 = now();
      if (t < warmup) continue;
      const s = r.stats;
      run.pass.push(s.passMicros);
      run.snap.push(s.snapshotMicros);
      run.wall.push((t1 - t0) * 1000);
      run.sum.served += s.served;
      run.sum.records += s.records;
      run.sum.candidates += s.candidates;
      run.sum.examined += s.examined;
      run.sum.bytes += s.bytes;
    }
  }
  const otherCores = cpu();
  const results = runs.map(({ world, pass, snap, wall, sum }) => {
    const out = {
      otherCores,
      scenario,
      entities,
      viewers,
      threads: world.threads,
      regionSize: config.input.regionSize,
      ticks,
      passMedianUs: median(pass),
      passP99Us: quantile(pass, 0.99),
      passMinUs: Math.min(...pass),
      snapshotMedianUs: median(snap),
      tickWallMedianUs: median(wall),
      perViewerUs: median(pass) / (sum.served / ticks),
      recordsPerPacket: sum.records / sum.served,
      candidatesPerViewer: sum.candidates / sum.served,
      examinedPerViewer: sum.examined / sum.served,
      bytesPerPacket: sum.bytes / sum.served,
    };
    log(section, `  ${out.threads} thread${out.threads === 1 ? '' : 's'}: pass median ${ms(out.passMedianUs)} ms, p99 ${ms(out.passP99Us)} ms, ${fmt(out.perViewerUs, 2)} µs/viewer; other processes ${fmt(otherCores, 2)} cores`);
    return out;
  });
  // Released now, not when the collector gets to them: a later section would pay for that.
  for (const run of runs) run.world.close();
  return results;
}

// ---------------------------------------------------------------------------------------------
// Sections.

const PASS_SCENARIOS = [
  { scenario: 'uniform', entities: 8192, viewers: 8192, title: 'uniform' },
  { scenario: 'town-square', entities: 8192, viewers: 8192, title: 'town square (one 128 m cell)' },
  { scenario: 'crowd-50k', entities: 50_000, viewers: 8192, title: 'crowd-50k (60% in one cell)' },
];

/**
 * How much the machine's two cores slow each other: bench/core --mode pair (two town-square
 * scenes, one thread each, first one alone, then both at once). Null without bench/core.
 */
async function coreContention(section) {
  if (!ensureCore(section)) return null;
  await waitQuiet(section);
  const r = runCore(['--mode', 'pair', '--walk', 'wander', '--ticks', String(P.coreTicks), '--warmup', String(P.coreWarmup)]);
  log(section, `core contention (bench/core --mode pair): a 1-thread pass ${fmt(r.aloneMs, 2)} ms alone, ${fmt(r.bothMs, 2)} ms with another on the other core (×${fmt(r.slowdown, 2)})`);
  return r;
}

async function sectionPass() {
  const rows = [];
  const contentionBefore = await coreContention('pass');
  for (const sc of PASS_SCENARIOS) {
    const [one, two] = await measureWorlds({ section: 'pass', ...sc, threadsList: [1, 2], warmup: P.warmup, ticks: P.ticks });
    rows.push({ ...sc, one, two, speedup: one.passMedianUs / two.passMedianUs });
  }
  const contentionAfter = await coreContention('pass');
  return { rows, contentionBefore, contentionAfter };
}

async function sectionScaling() {
  const fixed = [];
  for (const n of P.scaling) {
    fixed.push(...(await measureWorlds({ section: 'scaling', scenario: 'uniform', entities: n, viewers: n, threadsList: [1], warmup: P.warmup, ticks: P.ticks })));
  }
  // Same density as 8,192 entities in 4,096 m: region side ∝ √n (powers of two).
  const density = [];
  for (const n of P.density) {
    const regionSize = 4096 * Math.sqrt(n / 8192);
    density.push(
      ...(await measureWorlds({ section: 'scaling', scenario: 'uniform', entities: n, viewers: n, threadsList: [1], regionSize, warmup: P.warmup, ticks: P.ticks })),
    );
  }
  return { fixed, density };
}

let coreReady;
function ensureCore(section) {
  if (coreReady === undefined) {
    const err = buildCore((m) => log(section, m));
    coreReady = err === null ? true : err;
    if (err !== null) notes.push(`bench/core could not be built, so its sections were skipped: ${err.split('\n')[0]}`);
  }
  return coreReady === true;
}

async function sectionSnapshot() {
  if (!ensureCore('snapshot')) return { skipped: coreReady };
  await waitQuiet('snapshot');
  const rows = [];
  for (const entities of [8192, 50_000]) {
    for (const scenario of ['uniform', 'town-square']) {
      for (const dense of ['512', 'inf']) {
        log('snapshot', `${scenario}, ${fmt(entities)} entities, dense threshold ${dense}`);
        const r = runCore(['--mode', 'snapshot', '--scenario', scenario, '--entities', String(entities), '--dense', dense, '--ticks', String(P.coreTicks * 2), '--warmup', String(P.coreWarmup)]);
        rows.push({ entities, scenario, dense, ...r });
      }
    }
  }
  return { rows };
}

async function sectionGather() {
  if (!ensureCore('gather')) return { skipped: coreReady };
  await waitQuiet('gather');
  const rows = [];
  for (const scenario of ['town-square', 'uniform']) {
    for (const cap of ['256', 'inf']) {
      log('gather', `${scenario}, 8,192 entities, 8,192 viewers, walk cap ${cap}, 1 thread`);
      const r = runCore(['--mode', 'gather', '--scenario', scenario, '--entities', '8192', '--threads', '1', '--walk-cap', cap, '--ticks', String(P.coreTicks), '--warmup', String(P.coreWarmup)]);
      rows.push({ scenario, cap, ...r });
    }
  }
  return { rows };
}

async function sectionJs() {
  const config = WorldConfig.build();
  const world = new World(config, { capacity: 8192, threads: 0 });
  const herd = createHerd(world, { scenario: 'uniform', entities: 8192, viewers: 8192, seed: SEED });
  await waitQuiet('js');
  // Each tick's packets are read once, as a server reads them, alternately through result.packets
  // and through result.bytesAt(i): P.jsTicks measured ticks for each. (A second loop over the same
  // packets would find them in the cache, and its garbage would bring the collector into the
  // other's time.)
  log('js', `uniform, 8,192 entities, 8,192 viewers, ${world.threads} threads: ${P.warmup} + ${2 * P.jsTicks} ticks, read through packets and bytesAt(i) in turn`);
  const cpu = cpuWindow();
  const call = [];
  const engineSync = [];
  const overhead = [];
  const readPackets = [];
  const readBytesAt = [];
  const receive = [];
  const receiveAndRead = [];
  const elu = () => performance.eventLoopUtilization().active;
  let checksum = 0;
  for (let t = 0; t < P.warmup + 2 * P.jsTicks; t++) {
    herd.step();
    const t0 = now();
    const promise = world.tick();
    const t1 = now();
    const a1 = elu();
    const r = await promise;
    const a2 = elu();
    const t2 = now();
    const viaPackets = t % 2 === 0;
    if (viaPackets) {
      const packets = r.packets;
      for (let i = 0; i < packets.length; i++) {
        const b = packets[i].bytes;
        checksum += b[0] + b.length;
      }
    } else {
      for (let i = 0; i < r.count; i++) {
        const b = r.bytesAt(i);
        checksum += b[0] + b.length;
      }
    }
    const t3 = now();
    if (t < P.warmup) continue;
    const st = r.stats;
    call.push((t1 - t0) * 1000);
    engineSync.push(st.odometerMicros + st.snapshotMicros);
    overhead.push((t2 - t0) * 1000 - st.odometerMicros - st.snapshotMicros - st.passMicros);
    receive.push((a2 - a1) * 1000);
    if (viaPackets) {
      readPackets.push((t3 - t2) * 1000);
      receiveAndRead.push((a2 - a1) * 1000 + (t3 - t2) * 1000);
    } else {
      readBytesAt.push((t3 - t2) * 1000);
    }
  }
  const out = {
    threads: world.threads,
    ticks: 2 * P.jsTicks,
    packets: 8192,
    callMedianUs: median(call),
    engineSyncMedianUs: median(engineSync),
    overheadMedianUs: median(overhead),
    readPacketsMedianUs: median(readPackets),
    readPacketsP99Us: quantile(readPackets, 0.99),
    readBytesAtMedianUs: median(readBytesAt),
    otherCores: cpu(),
    receiveMedianUs: median(receive),
    receiveAndReadMedianUs: median(receiveAndRead),
    checksum,
  };
  log('js', `  tick() call ${ms(out.callMedianUs, 3)} ms, overhead ${ms(out.overheadMedianUs, 3)} ms, receive ${ms(out.receiveMedianUs, 3)} ms, read packets ${ms(out.readPacketsMedianUs, 3)} ms`);
  world.close();
  return out;
}

async function loadOptional(name) {
  try {
    return await import(name);
  } catch {
    return null;
  }
}

async function sectionPeers() {
  const colyseus = await loadOptional('@colyseus/schema');
  if (!colyseus) notes.push('@colyseus/schema is not installed: the Colyseus StateView peer was skipped.');
  const rows = [];
  for (const scenario of ['town-square', 'uniform']) {
    const n = 8192;
    const config = WorldConfig.build();
    const w1 = new World(config, { capacity: n, threads: 1 });
    const h1 = createHerd(w1, { scenario, entities: n, viewers: n, seed: SEED });
    const w2 = new World(config, { capacity: n, threads: 2 });
    const h2 = createHerd(w2, { scenario, entities: n, viewers: n, seed: SEED });
    // Viewers are the herd's first n entities: a viewer's index is its entity index.
    const sample = sampleIndices(n, P.sample);
    const radius = config.input.viewRadius;
    await waitQuiet('peers');
    log('peers', `${scenario}, ${fmt(n)} entities, ${fmt(n)} viewers; peers on ${sample.length} sampled viewers: ${P.peerWarmup} + ${P.peerTicks} ticks`);
    const cpu = cpuWindow();
    const brute = new BruteForcePeer(h1.slots, sample, radius);
    const coly = colyseus ? new ColyseusPeer(colyseus, h1.slots, sample, radius) : null;
    const m = { s1: [], s2: [], p1: [], p2: [], bf: [], cw: [], cm: [], cs: [], cv: [], sBytes: 0, served: 0, bfBytes: 0, cBytes: 0 };
    const { x: X, y: Y, z: Z } = w1.positions;
    for (let t = 0; t < P.peerWarmup + P.peerTicks; t++) {
      h1.step();
      h2.step();
      let a = now();
      const r1 = await w1.tick();
      const s1 = now() - a;
      a = now();
      const r2 = await w2.tick();
      const s2 = now() - a;
      if (t === 0) {
        // The two herds share a seed: the same positions in both worlds.
        const X2 = w2.positions.x;
        for (let i = 0; i < n; i++) if (X[h1.slots[i]] !== X2[h2.slots[i]]) throw new Error('the two sightline worlds diverged');
      }
      brute.sync(X, Y, Z);
      const bf = brute.serve();
      let cw = 0;
      let cm = 0;
      let enc = { sharedMs: 0, viewsMs: 0 };
      if (coly) {
        cw = coly.write(X, Y, Z);
        cm = coly.membership();
        enc = coly.encode();
      }
      if (t < P.peerWarmup) continue;
      m.s1.push(s1);
      m.s2.push(s2);
      m.p1.push(r1.stats.passMicros / 1000);
      m.p2.push(r2.stats.passMicros / 1000);
      m.bf.push(bf);
      m.cw.push(cw);
      m.cm.push(cm);
      m.cs.push(enc.sharedMs);
      m.cv.push(enc.viewsMs);
      m.sBytes += r1.stats.bytes;
      m.served += r1.stats.served;
      m.bfBytes += brute.bytes;
      m.cBytes += coly ? coly.bytes : 0;
    }
    const k = sample.length;
    const scale = n / k;
    const bruteMs = median(m.bf) * scale;
    const colyMs = coly ? median(m.cw) + median(m.cs) + (median(m.cm) + median(m.cv)) * scale : NaN;
    const row = {
      otherCores: cpu(),
      scenario,
      entities: n,
      viewers: n,
      sampled: k,
      ticks: P.peerTicks,
      sightline1Ms: median(m.s1),
      sightline2Ms: median(m.s2),
      pass1Ms: median(m.p1),
      pass2Ms: median(m.p2),
      sightlineBytesPerViewer: m.sBytes / m.served,
      bruteMs,
      brutePerViewerUs: (median(m.bf) / k) * 1000,
      bruteBytesPerViewer: m.bfBytes / (k * P.peerTicks),
      colyseusMs: colyMs,
      colyseusWriteMs: coly ? median(m.cw) : NaN,
      colyseusSharedMs: coly ? median(m.cs) : NaN,
      colyseusMembershipPerViewerUs: coly ? (median(m.cm) / k) * 1000 : NaN,
      colyseusViewEncodePerViewerUs: coly ? (median(m.cv) / k) * 1000 : NaN,
      colyseusBytesPerViewer: coly ? m.cBytes / (k * P.peerTicks) : NaN,
    };
    row.bruteRatio1 = row.bruteMs / row.sightline1Ms;
    row.bruteRatio2 = row.bruteMs / row.sightline2Ms;
    row.colyseusRatio1 = row.colyseusMs / row.sightline1Ms;
    row.colyseusRatio2 = row.colyseusMs / row.sightline2Ms;
    log(
      'peers',
      `  sightline ${fmt(row.sightline1Ms, 1)} ms (1 thread), ${fmt(row.sightline2Ms, 1)} ms (2); brute force ${fmt(bruteMs, 0)} ms (${fmt(row.bruteRatio1, 1)}×); Colyseus ${fmt(colyMs, 0)} ms (${fmt(row.colyseusRatio1, 1)}×)`,
    );
    rows.push(row);
    w1.close();
    w2.close();
  }
  return { rows, colyseusVersion: colyseus ? packageVersion('@colyseus/schema') : null };
}

function packageVersion(name) {
  for (const base of [join(root, 'bench', 'node_modules'), join(root, 'node_modules')]) {
    const p = join(base, name, 'package.json');
    if (existsSync(p)) return JSON.parse(readFileSync(p, 'utf8')).version;
  }
  return null;
}

async function sectionMicro() {
  const tinybench = await loadOptional('tinybench');
  if (!tinybench) {
    notes.push('tinybench is not installed: the micro-benchmarks were skipped.');
    return { skipped: 'tinybench not installed' };
  }
  const { Bench } = tinybench;
  const config = WorldConfig.build();
  // A full packet (98 update records, no despawns) from a real tick.
  const world = new World(config, { capacity: 8192, threads: 1 });
  const herd = createHerd(world, { scenario: 'town-square', entities: 8192, viewers: 8192, seed: SEED });
  let packet = null;
  for (let t = 0; t < 10 && !packet; t++) {
    herd.step();
    const r = await world.tick();
    for (let i = 0; i < r.count; i++) {
      const b = r.bytesAt(i);
      if (b[12] === 0 && b[13] === 0 && b[14] === config.slotsPerPacket && b[15] === 0) {
        packet = b.slice();
        break;
      }
    }
  }
  world.close();
  if (!packet) throw new Error('no full packet found for the decode benchmark');
  const raw = createRawPacket(config.payloadBytes);
  const spawnWorld = new World(config, { capacity: 65_536, threads: 1 });
  for (let i = 0; i < 32_768; i++) spawnWorld.spawn({ x: (i % 181) * 20, y: Math.floor(i / 181) * 20, z: 0 });
  const where = { x: 1000, y: 1000, z: 0 };
  const authored = { regionSize: 8192, viewRadius: 200, maxSpeed: 30, tickHz: 30, walkCap: Infinity, ghostCap: 512, payloadBytes: 1400 };
  let sink = 0;
  const bench = new Bench({ time: P.microMs, warmupTime: Math.min(100, P.microMs) });
  bench
    .add('decodePacket, 1,200 B, 98 updates (meters, new objects)', () => {
      sink += decodePacket(packet, config).updates.length;
    })
    .add('decodePacketRaw, 1,200 B, 98 updates (raw, reused output)', () => {
      sink += decodePacketRaw(packet, config, raw).updateCount;
    })
    .add('WorldConfig.build() (defaults)', () => {
      sink += WorldConfig.build().slotsPerPacket;
    })
    .add('WorldConfig.build({ 7 authored fields })', () => {
      sink += WorldConfig.build(authored).slotsPerPacket;
    })
    .add('world.spawn + world.despawn (32,768 live)', () => {
      spawnWorld.despawn(spawnWorld.spawn(where));
    });
  log('micro', `tinybench ${packageVersion('tinybench')}: ${bench.tasks.length} tasks, ${P.microMs} ms each`);
  await bench.run();
  const rows = bench.tasks.map((task) => {
    const r = task.result;
    return {
      name: task.name,
      samples: r.latency?.samplesCount ?? r.latency?.samples?.length ?? null,
      medianNs: r.latency.p50 * 1e6,
      meanNs: r.latency.mean * 1e6,
      p99Ns: r.latency.p99 * 1e6,
      opsPerSecond: r.throughput.mean,
      rme: r.latency.rme,
    };
  });
  for (const r of rows) log('micro', `  ${r.name}: median ${fmt(r.medianNs, 0)} ns`);
  return { rows, tinybench: packageVersion('tinybench'), sink };
}

// ---------------------------------------------------------------------------------------------
// Run.

const runners = { pass: sectionPass, scaling: sectionScaling, snapshot: sectionSnapshot, gather: sectionGather, js: sectionJs, peers: sectionPeers, micro: sectionMicro };
for (const name of SECTIONS) {
  if (!only.includes(name)) continue;
  const loadBefore = load();
  const busy0 = machineBusySeconds();
  const self0 = selfSeconds();
  const t0 = now();
  const section = await runners[name]();
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
results.notes = notes;

// ---------------------------------------------------------------------------------------------
// Markdown.

/** The cores-busy line under a section heading. */
function cpuLine(sec) {
  if (sec.machineCores === null || sec.machineCores === undefined) return `_Cores busy: this process ${fmt(sec.selfCores, 2)}._`;
  return `_Cores busy during this section: machine ${fmt(sec.machineCores, 2)}, this process ${fmt(sec.selfCores, 2)}, others ≈ ${fmt(Math.max(0, sec.machineCores - sec.selfCores), 2)}${sec.selfCores < 0.5 ? ' (includes the bench/core child process)' : ''}; ${fmt(sec.seconds, 0)} s._`;
}

function markdown(r) {
  const m = r.machine;
  const s = r.sections;
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
      `positions move as tools/herd/scenarios.ts moves them (seed ${SEED}), at the default configuration (region 4,096 m, view radius 256 m, ` +
      'cell 128 m, 20 Hz, 1,200-byte packets = 98 update slots, walk cap 256, ghost cap 256). ' +
      'Under each heading: the cores kept busy during that section by the whole machine and by this process (from /proc/stat and ' +
      'process.cpuUsage()); the difference is other processes, which inflate times, the 2-thread ones most. Each measurement first waits ' +
      `(up to ${QUIET_WAIT_MS / 1000} s) for other processes to use less than ${QUIET_CORES} cores, and tables give their share during it.`,
  );
  if (r.notes.length) {
    out.push('');
    for (const n of r.notes) out.push(`> ${n}`);
  }

  if (s.pass) {
    out.push('', `## Full pass`, '', cpuLine(s.pass), '');
    out.push(
      `\`stats.passMicros\`: the per-viewer pass on the thread pool, over ${P.ticks} ticks after ${P.warmup} warm-up ticks; p99 is nearest-rank ` +
        `(the largest of ${P.ticks}). Per-viewer = median pass / viewers served. Speed-up = 1-thread median / 2-thread median. ` +
        'The 1- and 2-thread worlds run side by side on identical positions (two herds, one seed), ticking in turn, so load from other ' +
        'processes falls on both alike. ' +
        'Snapshot = `stats.snapshotMicros` (JS thread, before the pass); tick wall = `await world.tick()` as the caller sees it. ' +
        'Pass min = the fastest measured tick: on a shared machine whose speed drifts from second to second (this one varies by up ' +
        'to 1.5× between runs with nothing else running), it shows what the code costs when nothing slows it; the median is what ' +
        'a server would see.',
    );
    out.push('');
    const rows = [];
    for (const row of s.pass.rows) {
      for (const [th, x] of [
        [1, row.one],
        [2, row.two],
      ]) {
        rows.push([
          th === 1 ? `${row.title}, ${fmt(row.entities)} entities / ${fmt(row.viewers)} viewers` : '',
          String(x.threads),
          ms(x.passMedianUs),
          ms(x.passMinUs),
          ms(x.passP99Us),
          fmt(x.perViewerUs, 2),
          th === 2 ? `${fmt(row.speedup, 2)}× (${fmt(row.one.passMinUs / row.two.passMinUs, 2)}×)` : '',
          fmt(x.snapshotMedianUs, 0),
          ms(x.tickWallMedianUs),
          fmt(x.recordsPerPacket, 1),
          fmt(x.candidatesPerViewer, 0),
          th === 1 ? fmt(x.otherCores, 2) : '',
        ]);
      }
    }
    out.push(
      table(
        ['Scenario', 'Threads', 'Pass median (ms)', 'Pass min (ms)', 'Pass p99 (ms)', 'Per viewer (µs)', '2-thread speed-up (of the mins)', 'Snapshot (µs)', 'Tick wall (ms)', 'Records / packet', 'Candidates / viewer', 'Other processes (cores)'],
        rows,
      ),
    );
    const cb = s.pass.contentionBefore, ca = s.pass.contentionAfter;
    if (cb && ca) {
      out.push(
        '',
        `Core contention (bench/core \`--mode pair --walk wander\`: two town-square scenes of ${fmt(8192)} viewers, one thread each, ` +
          `alone and then both at once): a 1-thread pass took ${fmt(cb.aloneMs, 2)} ms alone and ${fmt(cb.bothMs, 2)} ms while another ran ` +
          `on the second core (×${fmt(cb.slowdown, 2)}) before this section, ×${fmt(ca.slowdown, 2)} (${fmt(ca.aloneMs, 2)} / ${fmt(ca.bothMs, 2)} ms) after it. ` +
          'Near ×1 the two cores work independently; toward ×2 they share one physical core (a virtual machine whose two vCPUs are ' +
          'SMT siblings) or the host is busy, and no 2-thread pass can run much faster than a 1-thread one.',
      );
    }
  }

  if (s.scaling) {
    out.push('', `## Per-viewer cost against viewer count`, '', cpuLine(s.scaling), '');
    out.push(
      'Uniform scenario, entities = viewers, 1 thread. In the fixed 4,096 m region the density grows with the count (candidates per viewer ' +
        'grow until the walk cap); in the second table the region grows with √count so the density stays that of 8,192 in 4,096 m.',
    );
    const sc = (list) =>
      table(
        ['Viewers (= entities)', 'Region (m)', 'Pass median (ms)', 'Pass p99 (ms)', 'Per viewer (µs)', 'Candidates / viewer', 'Examined / viewer', 'Other processes (cores)'],
        list.map((x) => [fmt(x.viewers), fmt(x.regionSize), ms(x.passMedianUs), ms(x.passP99Us), fmt(x.perViewerUs, 2), fmt(x.candidatesPerViewer, 0), fmt(x.examinedPerViewer, 0), fmt(x.otherCores, 2)]),
      );
    out.push('', '**Fixed region (4,096 m)**', '', sc(s.scaling.fixed));
    out.push('', '**Constant density**', '', sc(s.scaling.density));
  }

  if (s.snapshot) {
    out.push('', `## Snapshot rebuild`, '', cpuLine(s.snapshot), '');
    if (s.snapshot.skipped) out.push(`Skipped: ${s.snapshot.skipped}`);
    else {
      out.push(
        `\`bench/core --mode snapshot\` (C++ only, no Node; built with \`${CORE_BUILD_COMMAND}\`): counting sort of every live entity into cells, plus sub-grids for cells at or above the ` +
          `dense threshold (\`denseCellThreshold\`; "off" = 2^30, no subdivision). Random walk of ≤ 77 raw units per axis per tick; ` +
          `median and p90 over ${P.coreTicks * 2} rebuilds. "One cell" puts every entity in the 128 m cell at the region's center.`,
      );
      out.push('');
      out.push(
        table(
          ['Entities', 'Placement', 'Subdivision', 'Median (µs)', 'p90 (µs)'],
          s.snapshot.rows.map((x) => [
            fmt(x.entities),
            x.scenario === 'uniform' ? 'uniform' : 'one cell',
            x.dense === 'inf' ? 'off' : `on (≥ ${x.dense} per cell)`,
            fmt(x.snapshotUs, 1),
            fmt(x.snapshotP90Us, 1),
          ]),
        ),
      );
    }
  }

  if (s.gather) {
    out.push('', `## Gather alone`, '', cpuLine(s.gather), '');
    if (s.gather.skipped) out.push(`Skipped: ${s.gather.skipped}`);
    else {
      out.push(
        `\`bench/core --mode gather --threads 1\`: the candidate walk of every viewer (8,192 entities, 8,192 viewers), without scoring, selection ` +
          `or packets; median over ${P.coreTicks} ticks.`,
      );
      out.push('');
      out.push(
        table(
          ['Scenario', 'Walk cap', 'All viewers (ms)', 'Per viewer (µs)', 'Candidates / viewer', 'Examined / viewer'],
          s.gather.rows.map((x) => [
            x.scenario === 'town-square' ? 'town square' : x.scenario,
            x.cap === 'inf' ? 'uncapped' : x.cap,
            fmt(x.gatherMs, 2),
            fmt(x.gatherPerViewerUs, 2),
            fmt(x.candidatesPerViewer, 0),
            fmt(x.examinedPerViewer, 0),
          ]),
        ),
      );
    }
  }

  if (s.js) {
    const j = s.js;
    out.push('', `## JavaScript side of a tick`, '', cpuLine(j), '');
    out.push(
      `Uniform, 8,192 entities, 8,192 viewers, ${j.threads} threads, ${j.ticks} ticks; other processes kept ${fmt(j.otherCores, 2)} cores busy. "Engine work on the JS thread" is ` +
        '`stats.odometerMicros + stats.snapshotMicros`, done inside `tick()` before it returns. "tick() call" is the wall time of that call: ' +
        'on a busy 2-core machine it also holds the time the OS takes the JS thread away while the pool threads start the pass. ' +
        '"Overhead" is the wall time from calling `tick()` to the resolved result minus the engine\'s own work (odometer, snapshot, pass): ' +
        'dispatch, thread wake-ups, the completion callback building the result, the promise resolving. ' +
        '"Receive" is the JS thread\'s busy time while awaiting the result (event-loop utilization, active ms): the completion callback ' +
        'building the result object and the promise continuation; the rest of the wait the thread is idle. ' +
        '"Read" is `result.packets` (built on first access) or `result.bytesAt(i)`, touching every packet\'s bytes: each tick\'s packets ' +
        'are read once, as a server reads them, through the two in turn (half the measured ticks each; receive + read is over the ' +
        '`packets` ticks).',
    );
    out.push('');
    out.push(
      table(
        ['Step', 'Median (ms)', 'Target'],
        [
          ['engine work on the JS thread (odometer + snapshot)', ms(j.engineSyncMedianUs, 3), ''],
          ['tick() call, wall', ms(j.callMedianUs, 3), ''],
          ['overhead: tick() → resolved TickResult, beyond engine work (latency)', ms(j.overheadMedianUs, 3), ''],
          ['receive: JS thread busy while awaiting the result', ms(j.receiveMedianUs, 3), ''],
          [`read ${fmt(j.packets)} packets via result.packets`, ms(j.readPacketsMedianUs, 3), ''],
          [`read ${fmt(j.packets)} packets via result.bytesAt(i)`, ms(j.readBytesAtMedianUs, 3), ''],
          ['**receive + read (JS thread)**', `**${ms(j.receiveAndReadMedianUs, 3)}**`, `≤ 0.5 ms: ${j.receiveAndReadMedianUs <= 500 ? 'met' : 'missed'}`],
        ],
        ['l', 'r', 'l'],
      ),
    );
  }

  if (s.peers) {
    out.push('', `## Against peers, same scenario and positions`, '', cpuLine(s.peers), '');
    out.push(
      'Each tick, one herd step moves the entities; two sightline worlds (1 and 2 threads, same seed, identical positions) tick, then the peers ' +
        'work on the same positions. sightline time = wall time of `await world.tick()` (snapshot, pass, delivery). ' +
        'Peers run on one JavaScript thread. **Brute force**: per viewer, a loop over every entity, distance check, matches serialized into a Buffer ' +
        '(16 B each). **Colyseus**: `@colyseus/schema` ' +
        `${s.peers.colyseusVersion ?? '(not installed)'}` +
        ' state with a `.view()` map of entities; per-client StateView membership kept by the same distance loop (`view.add` / `view.remove`), ' +
        'position writes into the Schema, one shared `encode()`, `encodeView()` per client, `discardChanges()`. ' +
        'Neither peer has a byte budget or priorities: they send every entity in range each tick (see bytes per client). ' +
        `**The peers serve ${s.peers.rows[0]?.sampled ?? 0} evenly spaced viewers; their per-viewer time is scaled to 8,192 viewers** ` +
        '(Colyseus: position writes, shared encode and discardChanges once per tick; membership and view encode per viewer). ' +
        `Medians over ${P.peerTicks} ticks after ${P.peerWarmup} warm-up ticks. Ratio = peer time / sightline time in the same run.`,
    );
    out.push('');
    out.push(
      table(
        ['Scenario (8,192 / 8,192)', 'sightline 1 thread (ms)', 'sightline 2 threads (ms)', 'Brute force, scaled (ms)', 'Colyseus StateView, scaled (ms)', 'Brute force ÷ sightline (1 / 2 threads)', 'Colyseus ÷ sightline (1 / 2 threads)', 'Other processes (cores)'],
        s.peers.rows.map((x) => [
          x.scenario === 'town-square' ? 'town square' : x.scenario,
          fmt(x.sightline1Ms, 1),
          fmt(x.sightline2Ms, 1),
          fmt(x.bruteMs, 0),
          fmt(x.colyseusMs, 0),
          `**${fmt(x.bruteRatio1, 1)}×** / ${fmt(x.bruteRatio2, 1)}×`,
          `**${fmt(x.colyseusRatio1, 1)}×** / ${fmt(x.colyseusRatio2, 1)}×`,
          fmt(x.otherCores, 2),
        ]),
      ),
    );
    out.push('');
    out.push(
      table(
        ['Scenario', 'Bytes / client / tick: sightline', 'brute force', 'Colyseus', 'Brute force per viewer (µs)', 'Colyseus: writes (ms/tick)', 'shared encode (ms/tick)', 'membership per viewer (µs)', 'encodeView per viewer (µs)'],
        s.peers.rows.map((x) => [
          x.scenario === 'town-square' ? 'town square' : x.scenario,
          fmt(x.sightlineBytesPerViewer, 0),
          fmt(x.bruteBytesPerViewer, 0),
          fmt(x.colyseusBytesPerViewer, 0),
          fmt(x.brutePerViewerUs, 1),
          fmt(x.colyseusWriteMs, 2),
          fmt(x.colyseusSharedMs, 2),
          fmt(x.colyseusMembershipPerViewerUs, 1),
          fmt(x.colyseusViewEncodePerViewerUs, 1),
        ]),
      ),
    );
  }

  if (s.micro) {
    out.push('', `## Micro-benchmarks`, '', cpuLine(s.micro), '');
    if (s.micro.skipped) out.push(`Skipped: ${s.micro.skipped}`);
    else {
      out.push(`tinybench ${s.micro.tinybench}, ${P.microMs} ms per task after warm-up; latency per call.`);
      out.push('');
      out.push(
        table(
          ['Task', 'Median (ns)', 'Mean (ns)', 'p99 (ns)', 'Throughput (ops/s)', 'Samples'],
          s.micro.rows.map((x) => [x.name, fmt(x.medianNs, 0), fmt(x.meanNs, 0), fmt(x.p99Ns, 0), fmt(x.opsPerSecond, 0), fmt(x.samples)]),
        ),
      );
    }
  }
  return out.join('\n');
}

const DEFAULT_HEADER = `# sightline benchmark results

Measured numbers, written by \`npm run bench\` (bench/run.mjs). Method, and how to read the ratios:
[docs/benchmarks.md](../docs/benchmarks.md).
`;

const generated = `${BEGIN}\n\n${markdown(results)}\n\n${END}\n`;
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
mkdirSync(join(root, 'bench', 'out'), { recursive: true });
writeFileSync(join(root, 'bench', 'out', quick ? 'results.quick.json' : 'results.json'), JSON.stringify(results, null, 2) + '\n');

// ---------------------------------------------------------------------------------------------
// Summary on stdout.

const lines = [];
const s = results.sections;
lines.push(`sightline bench: ${results.machine.cpu}, ${results.machine.cores} cores, Node ${results.machine.node}, ${fmt(results.machine.seconds, 0)} s`);
const rows = [['', 'value']];
if (s.pass)
  for (const row of s.pass.rows)
    rows.push([
      `pass ${row.scenario} (${fmt(row.entities)}/${fmt(row.viewers)}), ms median (p99): 1 thread | 2 threads`,
      `${ms(row.one.passMedianUs)} (${ms(row.one.passP99Us)}) | ${ms(row.two.passMedianUs)} (${ms(row.two.passP99Us)}), ×${fmt(row.speedup, 2)}`,
    ]);
if (s.pass?.contentionBefore && s.pass?.contentionAfter)
  rows.push(['core contention (pair test: both cores busy ÷ one), before | after the passes', `×${fmt(s.pass.contentionBefore.slowdown, 2)} | ×${fmt(s.pass.contentionAfter.slowdown, 2)}`]);
if (s.scaling) for (const x of s.scaling.fixed) rows.push([`per viewer, uniform ${fmt(x.viewers)} viewers, µs (1 thread)`, fmt(x.perViewerUs, 2)]);
if (s.js) rows.push(['JS receive + read 8,192 packets, ms (target ≤ 0.5)', ms(s.js.receiveAndReadMedianUs, 3)]);
if (s.peers)
  for (const x of s.peers.rows)
    rows.push([
      `${x.scenario} peers ÷ sightline (1 thread): brute force | Colyseus`,
      `${fmt(x.bruteRatio1, 1)}× | ${fmt(x.colyseusRatio1, 1)}× (sampled ${x.sampled} viewers, scaled)`,
    ]);
if (s.micro && !s.micro.skipped) for (const x of s.micro.rows) rows.push([`${x.name}, ns median`, fmt(x.medianNs, 0)]);
const w0 = Math.max(...rows.map((r) => r[0].length));
for (const [a, b] of rows) lines.push(`  ${a.padEnd(w0)}  ${b}`);
lines.push(`written: ${relative(root, outPath)}`);
process.stdout.write(lines.join('\n') + '\n');
