import { describe, it, expect } from 'vitest';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// Each worker loads the addon itself (its own environment, its own pools), builds a crowded world
// and runs ticks; `terminateMidPass` ends it while a pass is in flight.
const source = `
const { parentPort, workerData } = require('node:worker_threads');
const native = require(require.resolve('node-gyp-build', { paths: [workerData.root] }))(workerData.root);
const w = new native.NativeWorld({}, 4096, 2, true, false);
const ids = [];
for (let i = 0; i < 4000; i++) ids.push(w.spawn(2048 * 1024 + (i * 37) % 131072, 2048 * 1024 + (i * 91) % 131072, 0));
for (const id of ids) w.addViewer(id, 1200, 1, false);
(async () => {
  let records = 0;
  const RECORDS = native.tickMetaFields.indexOf('records'); // a native tick resolves with its metadata
  for (let t = 0; t < workerData.ticks; t++) records += (await w.tick())[RECORDS];
  if (workerData.terminateMidPass) { w.tick(); parentPort.postMessage({ inFlight: true }); return; }
  parentPort.postMessage({ records });
})();
`;

// A worker that ticks and, while each pass runs, calls into the world in a loop: terminated at
// any moment, it may be inside a call, inside tick() or between them.
const busy = `
const { parentPort, workerData } = require('node:worker_threads');
const native = require(require.resolve('node-gyp-build', { paths: [workerData.root] }))(workerData.root);
const w = new native.NativeWorld({}, 8192, workerData.threads, true, false);
const ids = [];
for (let i = 0; i < 8000; i++) ids.push(w.spawn(2048 * 1024 + (i % 90) * 1024, 2048 * 1024 + Math.floor(i / 90) * 1024, 0));
for (let i = 0; i < 4000; i++) w.addViewer(ids[i], 1200, 1, false);
parentPort.postMessage('go');
if (workerData.sync) {
  for (;;) for (const id of ids) w.slotOf(id);  // never yields: terminated inside or between calls
} else {
  (async () => {
    for (;;) {
      const p = w.tick();
      for (let k = 0; k < 20; k++) for (const id of ids) w.slotOf(id);
      await p;
    }
  })();
}
`;

function start(ticks: number, terminateMidPass: boolean): Worker {
  return new Worker(source, { eval: true, workerData: { root, ticks, terminateMidPass } });
}

describe('worker_threads', () => {
  it('worlds in several workers tick side by side and the workers exit cleanly', async () => {
    const workers = [start(5, false), start(5, false), start(5, false)];
    const results = await Promise.all(workers.map((w) => new Promise<{ records: number }>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    })));
    for (const r of results) expect(r.records).toBeGreaterThan(0);
    const codes = await Promise.all(workers.map((w) => w.terminate()));
    expect(codes.length).toBe(3);
  });

  it('terminating a worker while its pass runs leaves the process intact', async () => {
    for (let i = 0; i < 3; i++) {
      const w = start(1, true);
      await new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
      await w.terminate();
    }
    // The main thread still works.
    const again = start(2, false);
    const r = await new Promise<{ records: number }>((resolve) => again.once('message', resolve));
    expect(r.records).toBeGreaterThan(0);
    await again.terminate();
  });

  it('terminating a worker inside a call or a tick() leaves the process intact, and it exits', async () => {
    for (let i = 0; i < 8; i++) {
      const w = new Worker(busy, { eval: true, workerData: { root, threads: i % 3, sync: i % 2 === 0 } });
      await new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
      await new Promise((resolve) => setTimeout(resolve, 3 + 7 * i));
      await w.terminate();  // would hang if a tick that never started were counted in flight
    }
    const again = start(2, false);
    const r = await new Promise<{ records: number }>((resolve) => again.once('message', resolve));
    expect(r.records).toBeGreaterThan(0);
    await again.terminate();
  }, 60_000);
});
