import { describe, expect, it } from 'vitest';
import { WorldConfig } from '../lib/config.js';
import { mulberry32 } from '../lib/random.js';
import { HERD_SCENARIOS, createHerd, herdDefaults, type Herd, type HerdScenario } from '../tools/herd/scenarios.js';
import { World } from '../lib/world.js';

function makeWorld(capacity: number): World {
  return new World(WorldConfig.build(), { capacity, threads: 1 });
}

function snapshot(world: World, herd: Herd): { x: Int32Array; y: Int32Array } {
  const x = new Int32Array(herd.slots.length);
  const y = new Int32Array(herd.slots.length);
  for (let i = 0; i < herd.slots.length; i++) {
    x[i] = world.positions.x[herd.slots[i]];
    y[i] = world.positions.y[herd.slots[i]];
  }
  return { x, y };
}

describe('mulberry32', () => {
  it('repeats a sequence for a seed and stays in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const sa = Array.from({ length: 1000 }, a);
    const sb = Array.from({ length: 1000 }, b);
    const sc = Array.from({ length: 1000 }, c);
    expect(sa).toEqual(sb);
    expect(sa).not.toEqual(sc);
    expect(Math.min(...sa)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...sa)).toBeLessThan(1);
  });
});

describe('createHerd', () => {
  it.each(HERD_SCENARIOS)('%s: the same seed gives the same positions after 60 steps', (scenario) => {
    const run = (seed: number): { x: Int32Array; y: Int32Array } => {
      const world = makeWorld(3000);
      const herd = createHerd(world, { scenario, entities: 3000, viewers: 10, seed });
      for (let t = 0; t < 60; t++) herd.step(t);
      expect(herd.steps).toBe(60);
      return snapshot(world, herd);
    };
    const a = run(7);
    const b = run(7);
    const c = run(8);
    expect(b.x).toEqual(a.x);
    expect(b.y).toEqual(a.y);
    expect(c.x).not.toEqual(a.x);
  });

  it.each(HERD_SCENARIOS)('%s: moves stay within maxMovePerTickRaw per axis and inside the region', (scenario) => {
    const world = makeWorld(4000);
    const cfg = world.config;
    const herd = createHerd(world, { scenario, entities: 4000, viewers: 0, seed: 3 });
    let prev = snapshot(world, herd);
    let maxMove = 0;
    let moved = 0;
    let outside = 0;
    for (let t = 0; t < 200; t++) {
      herd.step(t);
      const cur = snapshot(world, herd);
      for (let i = 0; i < cur.x.length; i++) {
        const dx = Math.abs(cur.x[i] - prev.x[i]);
        const dy = Math.abs(cur.y[i] - prev.y[i]);
        maxMove = Math.max(maxMove, dx, dy);
        if (dx + dy > 0) moved++;
        if (!(cur.x[i] >= 0 && cur.x[i] < cfg.regionRaw && cur.y[i] >= 0 && cur.y[i] < cfg.regionRaw)) outside++;
      }
      prev = cur;
    }
    expect(outside).toBe(0);
    expect(maxMove).toBeLessThanOrEqual(cfg.maxMovePerTickRaw);
    expect(moved).toBeGreaterThan(0);
    for (let i = 0; i < herd.slots.length; i++) expect(world.positions.z[herd.slots[i]]).toBe(0);
  });

  it('town-square keeps every entity in the center cell and makes each a viewer', () => {
    const world = makeWorld(8192);
    const cfg = world.config;
    const herd = createHerd(world, { scenario: 'town-square', seed: 5 });
    expect(herd.ids.length).toBe(8192);
    expect(herd.viewers.length).toBe(8192);
    expect(world.viewerCount).toBe(8192);
    const center = cfg.cellsPerAxis >> 1;
    for (let t = 0; t < 300; t++) {
      herd.step(t);
      let elsewhere = 0;
      for (let i = 0; i < herd.slots.length; i++) {
        const s = herd.slots[i];
        if (world.positions.x[s] >> cfg.cellShift !== center || world.positions.y[s] >> cfg.cellShift !== center) elsewhere++;
      }
      expect(elsewhere).toBe(0);
    }
  });

  it('scenario defaults: entity and viewer counts', () => {
    const expected: Record<HerdScenario, [number, number]> = {
      uniform: [16_384, 4_096],
      'town-square': [8_192, 8_192],
      'crowd-50k': [50_000, 8_192],
      trips: [16_384, 4_096],
      'speed-mix': [16_384, 1_024],
    };
    for (const scenario of HERD_SCENARIOS) {
      const d = herdDefaults(scenario);
      expect([d.entities, d.viewers]).toEqual(expected[scenario]);
    }
    expect(herdDefaults('town-square', 100)).toEqual({ entities: 100, viewers: 100 });
    expect(herdDefaults('crowd-50k', 1000)).toEqual({ entities: 1000, viewers: 1000 });

    const world = makeWorld(16_384);
    const herd = createHerd(world, { scenario: 'uniform' });
    expect(world.liveCount).toBe(16_384);
    expect(world.viewerCount).toBe(4_096);
    expect(herd.ids.length).toBe(16_384);
    expect(herd.viewers.length).toBe(4_096);
    for (const v of herd.viewers) expect(world.hasViewer(v)).toBe(true);
  });

  it('crowd-50k puts 60% in the center cell and picks viewers from the crowd', () => {
    const world = makeWorld(50_000);
    const cfg = world.config;
    const herd = createHerd(world, { scenario: 'crowd-50k', seed: 11 });
    expect(world.liveCount).toBe(50_000);
    expect(world.viewerCount).toBe(8_192);
    for (let t = 0; t < 20; t++) herd.step(t);
    const center = cfg.cellsPerAxis >> 1;
    const inCell = (id: number): boolean => {
      const s = world.slotOf(id);
      return world.positions.x[s] >> cfg.cellShift === center && world.positions.y[s] >> cfg.cellShift === center;
    };
    let crowd = 0;
    for (const id of herd.ids) if (inCell(id)) crowd++;
    expect(crowd).toBeGreaterThanOrEqual(30_000);
    expect(crowd).toBeLessThan(31_000); // the rest is uniform: about 20,000 / 1024 cells land there
    for (const v of herd.viewers) expect(inCell(v)).toBe(true);
  });

  it('speed-mix assigns the exact speed shares', () => {
    const world = makeWorld(10_000);
    const herd = createHerd(world, { scenario: 'speed-mix', entities: 10_000, seed: 2 });
    const counts = new Map<number, number>();
    for (const s of herd.speeds) counts.set(s, (counts.get(s) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ 0: 3500, 0.2: 2500, 1.5: 2500, 6: 1000, 30: 500 });
  });

  it('trips: bots travel at 1.5–6 m/s, linger, and gather at hubs', () => {
    const world = makeWorld(5000);
    const cfg = world.config;
    const herd = createHerd(world, { scenario: 'trips', entities: 5000, viewers: 0, seed: 9 });
    const busiestCell = (): number => {
      const cells = new Map<number, number>();
      for (const s of herd.slots) {
        const c = (world.positions.x[s] >> cfg.cellShift) * cfg.cellsPerAxis + (world.positions.y[s] >> cfg.cellShift);
        cells.set(c, (cells.get(c) ?? 0) + 1);
      }
      return Math.max(...cells.values());
    };
    const mean = 5000 / cfg.cellCount;
    expect(busiestCell()).toBeGreaterThan(4 * mean);
    for (let t = 0; t < 20 * 60; t++) herd.step(t);
    expect(busiestCell()).toBeGreaterThan(4 * mean);
    let lingering = 0;
    for (const s of herd.speeds) {
      if (s === 0) lingering++;
      else {
        expect(s).toBeGreaterThanOrEqual(1.5);
        expect(s).toBeLessThanOrEqual(6);
      }
    }
    expect(lingering).toBeGreaterThan(0);
    expect(lingering).toBeLessThan(2500);
  });

  it('rejects bad options with ERR_SIGHTLINE_INVALID_HERD_OPTION', () => {
    const world = makeWorld(100);
    const code = { code: 'ERR_SIGHTLINE_INVALID_HERD_OPTION' };
    expect(() => createHerd(world, { scenario: 'mall' as HerdScenario })).toThrow(expect.objectContaining(code));
    for (const notWorld of [undefined, null, {}, { config: {} }]) expect(() => createHerd(notWorld as never)).toThrow(expect.objectContaining(code));
    expect(() => createHerd(world, { entities: 0 })).toThrow(expect.objectContaining(code));
    expect(() => createHerd(world, { entities: 1.5 })).toThrow(expect.objectContaining(code));
    expect(() => createHerd(world, { entities: 10, viewers: 11 })).toThrow(expect.objectContaining(code));
    expect(() => createHerd(world, { entities: 10, seed: 0.5 })).toThrow(expect.objectContaining(code));
    expect(() => createHerd(world, { entities: 101 })).toThrow(/free entity slots/);
    expect(() => createHerd(world, { entites: 10 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
    // A refused viewer option undoes the herd.
    expect(() => createHerd(world, { entities: 50, viewers: 10, viewerOptions: { payloadBytes: 1 } })).toThrow(
      expect.objectContaining({ code: expect.stringMatching(/^ERR_SIGHTLINE_/) }),
    );
    expect(world.liveCount).toBe(0);
    expect(world.viewerCount).toBe(0);
  });
});
