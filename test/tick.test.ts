import { describe, it, expect } from 'vitest';
import { World, WorldConfig } from '../lib/index.js';
import { rng } from './helpers/model.js';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const config = WorldConfig.build();

function crowd(n: number, threads: number): { w: World; ids: number[] } {
  const w = new World(config, { capacity: n, threads });
  const r = rng(1);
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(w.spawn({ x: 2048 + r() * 128, y: 2048 + r() * 128, z: 0 }));
  for (const id of ids) w.addViewer(id);
  return { w, ids };
}

describe('async tick', () => {
  it('a second tick() while one runs is refused with a coded error; the world carries on', async () => {
    const { w } = crowd(2000, 1);
    const first = w.tick();
    expect(() => w.tick()).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_TICK_IN_PROGRESS' }));
    expect(() => w.rebuildSnapshot()).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_TICK_IN_PROGRESS' }));
    const r1 = await first;
    expect(r1.tick).toBe(1);
    expect(r1.count).toBe(2000);
    const r2 = await w.tick();
    expect(r2.tick).toBe(2);
  });

  it('the event loop stays responsive while the pass runs', async () => {
    const { w } = crowd(8192, 1);
    await w.tick();
    let turns = 0;
    let done = false;
    const spin = () => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const t0 = performance.now();
    const res = await w.tick();
    done = true;
    const ms = performance.now() - t0;
    // The pass took milliseconds; the loop kept turning meanwhile.
    expect(res.stats.served).toBe(8192);
    expect(turns).toBeGreaterThan(ms > 5 ? 5 : 0);
  });

  it('removing a viewer or despawning its avatar mid-pass is safe and takes effect after the pass', async () => {
    const { w, ids } = crowd(3000, 2);
    await w.tick();
    const pending = w.tick();
    w.removeViewer(ids[0]);
    w.despawn(ids[1]);
    expect(w.hasViewer(ids[0])).toBe(false);
    expect(w.viewerCount).toBe(3000 - 1);
    expect(() => w.removeViewer(ids[0])).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_VIEWER' }));
    const spare = w.spawn({ x: 10, y: 10, z: 0 });
    w.addViewer(spare);
    expect(() => w.addViewer(spare)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_VIEWER_EXISTS' }));
    const r = await pending;
    // That pass served everyone it started with.
    expect(r.count).toBe(3000);
    const next = await w.tick();
    expect(next.stats.skippedAvatarGone).toBe(1);
    const viewers = new Set(next.packets.map((p) => p.viewer));
    expect(viewers.has(ids[0])).toBe(false);
    expect(viewers.has(ids[1])).toBe(false);
    expect(viewers.has(spare)).toBe(true);
    expect(next.count).toBe(3000 - 2 + 1);
  });

  it('a viewer added during a tick whose avatar is despawned before it ends exists after it, as outside a tick', async () => {
    async function scenario(duringTick: boolean): Promise<{ has: boolean; skipped: number; removed: boolean }> {
      const w = new World(config, { capacity: 4, threads: 1 });
      const a = w.spawn({ x: 10, y: 10, z: 0 });
      const pending = duringTick ? w.tick() : null;
      w.addViewer(a);
      w.despawn(a);
      await pending;
      const r = await w.tick();
      const has = w.hasViewer(a);
      w.removeViewer(a);
      return { has, skipped: r.stats.skippedAvatarGone, removed: !w.hasViewer(a) };
    }
    const outside = await scenario(false);
    expect(outside).toEqual({ has: true, skipped: 1, removed: true });
    expect(await scenario(true)).toEqual(outside);
  });

  it('skips are counted by reason: not due, avatar despawned, avatar outside the region', async () => {
    const w = new World(config, { capacity: 64, threads: 1 });
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push(w.spawn({ x: 100 + i, y: 100, z: 0 }));
    for (let i = 0; i < 30; i++) w.addViewer(ids[i], { sendPeriod: i < 12 ? 3 : 1 });
    w.despawn(ids[20]);
    w.setPosition(ids[21], { x: -5, y: 100, z: 0 });
    const served = new Map<number, number>();
    for (let t = 0; t < 30; t++) {
      const r = await w.tick();
      expect(r.stats.skippedAvatarGone).toBe(1);
      expect(r.stats.skippedOutsideRegion).toBe(1);
      // Phases are spread: 4 of the 12 period-3 viewers are due each tick.
      expect(r.stats.skippedNotDue).toBe(8);
      expect(r.stats.served).toBe(4 + 18 - 2);
      for (const p of r.packets) served.set(p.viewer, (served.get(p.viewer) ?? 0) + 1);
    }
    for (let i = 0; i < 12; i++) expect(served.get(ids[i])).toBe(10);
    expect(served.get(ids[25])).toBe(30);
  });

  it("a result's bytes stay valid through the next tick and expire when the one after starts", async () => {
    const { w } = crowd(100, 1);
    const r1 = await w.tick();
    const copy = r1.packets[0].bytes.slice();
    const r2 = await w.tick();
    expect(r1.valid).toBe(true);
    expect(Buffer.compare(Buffer.from(r1.bytesAt(0)), Buffer.from(copy))).toBe(0);
    const pending = w.tick();
    expect(r1.valid).toBe(false);
    expect(() => r1.packets).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_RESULT_EXPIRED' }));
    expect(() => r1.bytesAt(0)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_RESULT_EXPIRED' }));
    expect(r2.valid).toBe(true);
    await pending;
  });

  it('viewers added between ticks (the output buffers growing then) leave the results handed out as they were, and the packets as a world given them from the start', async () => {
    // 100 viewers, then 2,000 more: addViewer grows both output buffers several times over.
    const make = (): { w: World; ids: number[] } => {
      const w = new World(config, { capacity: 2200, threads: 2 });
      const r = rng(2);
      const ids: number[] = [];
      for (let i = 0; i < 2100; i++) ids.push(w.spawn({ x: 2048 + r() * 256, y: 2048 + r() * 256, z: 0 }));
      return { w, ids };
    };
    const late = make();
    for (const id of late.ids.slice(0, 100)) late.w.addViewer(id);
    const r1 = await late.w.tick();
    const r2 = await late.w.tick();
    const before = [r1, r2].map((r) => r.packets.map((p) => Buffer.from(p.bytes)));
    for (const id of late.ids.slice(100)) late.w.addViewer(id);
    [r1, r2].forEach((r, k) => r.packets.forEach((p, i) => expect(Buffer.compare(Buffer.from(p.bytes), before[k][i])).toBe(0)));
    const r3 = await late.w.tick();
    expect(r3.count).toBe(2100);
    // The same world ticked the same way, its viewers' output room reserved by the tick instead.
    const early = make();
    for (const id of early.ids.slice(0, 100)) early.w.addViewer(id);
    await early.w.tick();
    await early.w.tick();
    const pending = early.w.tick(); // viewers added during a tick are applied when it ends
    for (const id of early.ids.slice(100)) early.w.addViewer(id);
    await pending;
    // `early` ran one more tick, for its first 100 viewers; the 2,000 are new to both.
    const e4 = await early.w.tick();
    expect(e4.count).toBe(2100);
    for (let i = 100; i < 2100; i++) {
      const a = r3.bytesAt(i);
      const b = e4.bytesAt(i);
      // Same entities seen for the first time from the same positions: the same update records
      // after the header (which holds the tick and sequence numbers).
      expect(r3.viewerAt(i)).toBe(e4.viewerAt(i));
      expect(Buffer.compare(Buffer.from(a.subarray(16)), Buffer.from(b.subarray(16)))).toBe(0);
    }
    late.w.close();
    early.w.close();
  });

  it('viewer options are validated; a rejected call adds nothing', () => {
    const w = new World(config, { capacity: 8 });
    const id = w.spawn({ x: 1, y: 1, z: 0 });
    for (const opts of [{ payloadBytes: 27 }, { payloadBytes: 70_000 }, { sendPeriod: 0 }, { sendPeriod: 1.5 }, { payloadBytes: NaN }]) {
      expect(() => w.addViewer(id, opts)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION' }));
    }
    expect(w.viewerCount).toBe(0);
    expect(() => w.removeViewer(id)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_VIEWER' }));
  });
});

describe('TickResult packet index', () => {
  it('viewerAt and bytesAt take an integer from 0 to count-1; anything else is a coded error and changes nothing', async () => {
    const { w, ids } = crowd(3, 1);
    const r = await w.tick();
    expect(r.count).toBe(3);
    const viewers = [0, 1, 2].map((i) => r.viewerAt(i));
    const bytes = [0, 1, 2].map((i) => r.bytesAt(i).slice());
    expect(viewers.slice().sort()).toEqual(ids.slice().sort());
    for (const i of [-1, 3, 1.5, NaN, Infinity, -Infinity, 2 ** 32, '0', 'x', null, undefined, 1n, Symbol('i'), Object.create(null), {}]) {
      for (const f of [() => r.viewerAt(i as never), () => r.bytesAt(i as never)]) {
        expect(f).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
      }
    }
    expect(() => r.bytesAt(-1)).toThrow('packet index must be an integer from 0 to count-1 (count is 3), received -1');
    expect(() => r.bytesAt('x' as never)).toThrow('received "x"');
    expect([0, 1, 2].map((i) => r.viewerAt(i))).toEqual(viewers);
    for (let i = 0; i < 3; i++) expect(Array.from(r.bytesAt(i))).toEqual(Array.from(bytes[i]));
    expect(r.packets.map((p) => p.viewer)).toEqual(viewers);
    // The packets array is built once and shared by every access: frozen, so no caller changes it for another.
    expect(r.packets).toBe(r.packets);
    expect(Object.isFrozen(r.packets)).toBe(true);
    expect(() => (r.packets as unknown as number[]).push(1)).toThrow(TypeError);
    expect(r.packets.length).toBe(3);
  });

  it('a tick without packets has no index 0', async () => {
    const w = new World(config, { capacity: 4, threads: 1 });
    const a = w.spawn({ x: 1, y: 1, z: 0 });
    w.addViewer(a);
    expect((await w.tick()).viewerAt(0)).toBe(a);
    w.removeViewer(a);
    const r = await w.tick();
    expect(r.count).toBe(0);
    expect(() => r.viewerAt(0)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => r.bytesAt(0)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(r.packets).toEqual([]);
  });
});

// `threads: 0` sizes the pool by the CPUs the process may run on, not the machine's: a process
// pinned to one CPU (taskset, a container's cpuset) gets one thread, not one per core.
const taskset = spawnSync('taskset', ['--version']).status === 0;
describe.runIf(process.platform === 'linux' && taskset)('threads: 0', () => {
  it('is one thread per CPU of the affinity mask', () => {
    const script = "import('sightline').then(({ World, WorldConfig }) => { const w = new World(WorldConfig.build(), { capacity: 4, threads: 0 }); console.log(w.threads); w.close(); })";
    const pinned = spawnSync('taskset', ['-c', '0', process.execPath, '-e', script], { cwd: root, encoding: 'utf8' });
    expect(pinned.stderr).toBe('');
    expect(pinned.stdout.trim()).toBe('1');
    const free = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
    expect(free.stdout.trim()).toBe(String(Math.min(256, availableParallelism())));
  });
});
