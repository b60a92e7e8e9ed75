// The JavaScript side of a tick: the tick() call, the JS thread's busy time while awaiting the
// result, reading every packet through result.packets and through result.bytesAt(i).
import { World, WorldConfig } from '../../dist/lib/index.js';
import { createHerd } from '../../dist/tools/herd/index.js';
import { cpuLine, fmt, ms, table } from '../format.mjs';
import { cpuWindow, log, median, now, quantile, waitQuiet } from '../measure.mjs';

export async function measure(run) {
  const { P } = run;
  const config = WorldConfig.build();
  const world = new World(config, { capacity: 8192, threads: 0 });
  const herd = createHerd(world, { scenario: 'uniform', entities: 8192, viewers: 8192, seed: run.seed });
  await waitQuiet('js', run.quietWaitMs);
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

export function markdown(j) {
  const out = ['', `## JavaScript side of a tick`, '', cpuLine(j), ''];
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
  return out;
}

/** Summary rows on stdout: [label, value]. */
export function summary(j) {
  return [['JS receive + read 8,192 packets, ms (target ≤ 0.5)', ms(j.receiveAndReadMedianUs, 3)]];
}
