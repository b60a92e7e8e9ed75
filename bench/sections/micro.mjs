// The micro-benchmarks (tinybench): decodePacket and decodePacketRaw of a full packet from a real
// tick, WorldConfig.build, world.spawn + world.despawn.
import { World, WorldConfig, decodePacket, decodePacketRaw, createRawPacket } from '../../dist/lib/index.js';
import { createHerd } from '../../dist/tools/herd/index.js';
import { cpuLine, fmt, table } from '../format.mjs';
import { log } from '../measure.mjs';
import { loadOptional, packageVersion } from '../packages.mjs';

export async function measure(run) {
  const { P } = run;
  const tinybench = await loadOptional('tinybench');
  if (!tinybench) {
    run.notes.push('tinybench is not installed: the micro-benchmarks were skipped.');
    return { skipped: 'tinybench not installed' };
  }
  const { Bench } = tinybench;
  const config = WorldConfig.build();
  // A full packet (98 update records, no despawns) from a real tick.
  const world = new World(config, { capacity: 8192, threads: 1 });
  const herd = createHerd(world, { scenario: 'town-square', entities: 8192, viewers: 8192, seed: run.seed });
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

export function markdown(micro, { P }) {
  const out = ['', `## Micro-benchmarks`, '', cpuLine(micro), ''];
  if (micro.skipped) {
    out.push(`Skipped: ${micro.skipped}`);
    return out;
  }
  out.push(`tinybench ${micro.tinybench}, ${P.microMs} ms per task after warm-up; latency per call.`);
  out.push('');
  out.push(
    table(
      ['Task', 'Median (ns)', 'Mean (ns)', 'p99 (ns)', 'Throughput (ops/s)', 'Samples'],
      micro.rows.map((x) => [x.name, fmt(x.medianNs, 0), fmt(x.meanNs, 0), fmt(x.p99Ns, 0), fmt(x.opsPerSecond, 0), fmt(x.samples)]),
    ),
  );
  return out;
}

/** Summary rows on stdout: [label, value]. */
export function summary(micro) {
  return micro.skipped ? [] : micro.rows.map((x) => [`${x.name}, ns median`, fmt(x.medianNs, 0)]);
}
