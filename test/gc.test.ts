// Garbage collection in the herd report (tools/herd/gc.ts): pauses counted from perf_hooks gc
// entries, the heap after forced collections under --expose-gc, and the command's report.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GcMonitor } from '../tools/herd/gc.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'tools', 'cli', 'main.js');

// Garbage: many short-lived objects (scavenges), then a large retained array dropped (a major
// collection may follow).
function churn(): number {
  let keep = 0;
  for (let i = 0; i < 200; i++) {
    const a = Array.from({ length: 20_000 }, (_, k) => ({ k, s: `x${k}` }));
    keep += a.length;
  }
  return keep;
}

describe('GcMonitor', () => {
  it('counts the collections between start and stop, by kind, and their pauses', async () => {
    const m = new GcMonitor(() => 1234);
    m.start();
    expect(churn()).toBe(4_000_000);
    // gc entries are delivered asynchronously; stop() takes the queued ones too.
    await new Promise((r) => setTimeout(r, 20));
    m.stop();
    const r = m.report();
    expect(r.pauses.count).toBeGreaterThan(0);
    expect(r.pauses.totalMs).toBeGreaterThan(0);
    expect(r.pauses.longestMs).toBeGreaterThan(0);
    expect(r.pauses.longestMs).toBeLessThanOrEqual(r.pauses.totalMs);
    const k = r.byKind;
    expect(k.minor.count + k.major.count + k.incremental.count + k.weakcb.count).toBe(r.pauses.count);
    expect(k.minor.totalMs + k.major.totalMs + k.incremental.totalMs + k.weakcb.totalMs).toBeCloseTo(r.pauses.totalMs, 6);
    expect(r.engineBytes).toEqual({ start: 1234, end: 1234 });
    // This process has no gc(): no heap measurement.
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    expect(r.heap).toBeNull();
    // Nothing is counted after stop().
    churn();
    await new Promise((r) => setTimeout(r, 20));
    expect(m.report().pauses).toEqual(r.pauses);
    m.stop();
  });

  it('without an engine reader, engineBytes is null', () => {
    const m = new GcMonitor();
    m.start();
    m.stop();
    expect(m.report().engineBytes).toBeNull();
  });
});

describe('sightline herd under --expose-gc', () => {
  it('reports the heap after a forced collection at the start and the end, and the pauses', () => {
    const run = (flags: string[]) =>
      spawnSync(process.execPath, [...flags, cli, 'herd', '--scenario', 'uniform', '--entities', '2000', '--viewers', '200', '--threads', '1', '--seconds', '0.5', '--json'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
      });
    const exposed = run(['--expose-gc']);
    expect(exposed.status, exposed.stderr).toBe(0);
    const g = JSON.parse(exposed.stdout).gc;
    for (const at of [g.heap.start, g.heap.end]) {
      for (const k of ['heapUsed', 'external', 'arrayBuffers', 'rss']) expect(at[k]).toBeGreaterThan(0);
    }
    expect(g.pauses.count).toBeGreaterThanOrEqual(0);
    // The engine's own memory: 2,000 entities and 200 viewers' ghost tables, a few MB.
    expect(g.engineBytes.start).toBeGreaterThan(1 << 20);
    expect(g.engineBytes.end).toBeGreaterThanOrEqual(g.engineBytes.start);
    expect(g.forced).toBe(0);
    const plain = run([]);
    expect(plain.status, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout).gc.heap).toBeNull();
    const text = spawnSync(process.execPath, [cli, 'herd', '--scenario', 'uniform', '--entities', '500', '--viewers', '50', '--threads', '1', '--seconds', '0.3', '--no-progress'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(text.stdout).toContain('GC pauses: count / total / longest');
    expect(text.stdout).toContain('run with node --expose-gc to measure');
  });
});
