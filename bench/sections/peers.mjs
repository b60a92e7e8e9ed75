// The comparison against peers (bench/peers.mjs: brute force and a Colyseus StateView) on the
// same positions each tick, next to two sightline worlds at 1 and 2 threads.
import { World, WorldConfig } from '../../dist/lib/index.js';
import { createHerd } from '../../dist/tools/herd/index.js';
import { cpuLine, fmt, table } from '../format.mjs';
import { cpuWindow, log, median, now, waitQuiet } from '../measure.mjs';
import { loadOptional, packageVersion } from '../packages.mjs';
import { BruteForcePeer, ColyseusPeer, sampleIndices } from '../peers.mjs';

export async function measure(run) {
  const { P } = run;
  const colyseus = await loadOptional('@colyseus/schema');
  if (!colyseus) run.notes.push('@colyseus/schema is not installed: the Colyseus StateView peer was skipped.');
  const rows = [];
  for (const scenario of ['town-square', 'uniform']) {
    const n = 8192;
    const config = WorldConfig.build();
    const w1 = new World(config, { capacity: n, threads: 1 });
    const h1 = createHerd(w1, { scenario, entities: n, viewers: n, seed: run.seed });
    const w2 = new World(config, { capacity: n, threads: 2 });
    const h2 = createHerd(w2, { scenario, entities: n, viewers: n, seed: run.seed });
    // Viewers are the herd's first n entities: a viewer's index is its entity index.
    const sample = sampleIndices(n, P.sample);
    const radius = config.input.viewRadius;
    await waitQuiet('peers', run.quietWaitMs);
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

export function markdown(peers, { P }) {
  const out = ['', `## Against peers, same scenario and positions`, '', cpuLine(peers), ''];
  out.push(
    'Each tick, one herd step moves the entities; two sightline worlds (1 and 2 threads, same seed, identical positions) tick, then the peers ' +
      'work on the same positions. sightline time = wall time of `await world.tick()` (snapshot, pass, delivery). ' +
      'Peers run on one JavaScript thread. **Brute force**: per viewer, a loop over every entity, distance check, matches serialized into a Buffer ' +
      '(16 B each). **Colyseus**: `@colyseus/schema` ' +
      `${peers.colyseusVersion ?? '(not installed)'}` +
      ' state with a `.view()` map of entities; per-client StateView membership kept by the same distance loop (`view.add` / `view.remove`), ' +
      'position writes into the Schema, one shared `encode()`, `encodeView()` per client, `discardChanges()`. ' +
      'Neither peer has a byte budget or priorities: they send every entity in range each tick (see bytes per client). ' +
      `**The peers serve ${peers.rows[0]?.sampled ?? 0} evenly spaced viewers; their per-viewer time is scaled to 8,192 viewers** ` +
      '(Colyseus: position writes, shared encode and discardChanges once per tick; membership and view encode per viewer). ' +
      `Medians over ${P.peerTicks} ticks after ${P.peerWarmup} warm-up ticks. Ratio = peer time / sightline time in the same run.`,
  );
  out.push('');
  out.push(
    table(
      ['Scenario (8,192 / 8,192)', 'sightline 1 thread (ms)', 'sightline 2 threads (ms)', 'Brute force, scaled (ms)', 'Colyseus StateView, scaled (ms)', 'Brute force ÷ sightline (1 / 2 threads)', 'Colyseus ÷ sightline (1 / 2 threads)', 'Other processes (cores)'],
      peers.rows.map((x) => [
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
      peers.rows.map((x) => [
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
  return out;
}

/** Summary rows on stdout: [label, value]. */
export function summary(peers) {
  return peers.rows.map((x) => [
    `${x.scenario} peers ÷ sightline (1 thread): brute force | Colyseus`,
    `${fmt(x.bruteRatio1, 1)}× | ${fmt(x.colyseusRatio1, 1)}× (sampled ${x.sampled} viewers, scaled)`,
  ]);
}
