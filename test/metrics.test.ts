import { describe, expect, it } from 'vitest';
import { WorldConfig, type WorldConfigInput } from '../lib/config.js';
import { createPrometheusRegistry } from '../lib/prometheus.js';
import { TickMetrics } from '../tools/herd/metrics.js';
import { World, type EntityId } from '../lib/world.js';

// A viewer at (1000 m, 1000 m) with entities at the given x offsets (meters) on the same row.
function lineWorld(offsets: number[], config: WorldConfigInput = {}): { world: World; viewer: EntityId; ids: EntityId[] } {
  const world = new World(WorldConfig.build(config), { capacity: 64, threads: 1 });
  const viewer = world.spawn({ x: 1000, y: 1000, z: 0 });
  world.addViewer(viewer);
  const ids = [viewer, ...offsets.map((dx) => world.spawn({ x: 1000 + dx, y: 1000, z: 0 }))];
  return { world, viewer, ids };
}

describe('TickMetrics', () => {
  it('percentiles, late and dropped ticks from the timings', async () => {
    const { world } = lineWorld([10]);
    const m = new TickMetrics(world, { eventLoop: false });
    for (let i = 1; i <= 100; i++) {
      const result = await world.tick();
      m.record(result, { passMs: i, stepMs: 0.5, lateness: i === 7 ? 30 : 0, late: i === 7, dropped: i > 50 ? 3 : 0 });
    }
    const r = m.report();
    expect(r.ticks).toBe(100);
    expect(r.passMs).toMatchObject({ p50: 50, p99: 99, worst: 100, mean: 50.5 });
    expect(r.stepMs.p50).toBe(0.5);
    expect(r.latenessMs.worst).toBe(30);
    expect(r.lateTicks).toBe(1);
    expect(r.droppedTicks).toBe(3);
    expect(r.targets.passP50Ms).toEqual({ target: 12, value: 50, met: false });
    expect(r.targets.lateTicks).toEqual({ target: 0, value: 1, met: false });
    expect(r.targets.allMet).toBe(false);
    expect(r.coverage).toBeNull();
    expect(r.eventLoopDelayMs).toBeNull();
    expect(r.seconds).toBeGreaterThanOrEqual(103 / 20);
    m.close();
  });

  it('a run that ran no tick meets no target (an interrupted set-up measured nothing)', () => {
    const { world } = lineWorld([10]);
    const m = new TickMetrics(world, { eventLoop: false });
    const r = m.report();
    expect(r.ticks).toBe(0);
    expect(r.targets.passP50Ms.met).toBe(false);
    expect(r.targets.passP99Ms.met).toBe(false);
    expect(r.targets.lateTicks.met).toBe(false);
    expect(r.targets.allMet).toBe(false);
    m.close();
  });

  it('packet counters match the tick stats', async () => {
    const { world } = lineWorld([10, 20, 30, 300]);
    const m = new TickMetrics(world, { eventLoop: false });
    let records = 0;
    let bytes = 0;
    for (let i = 0; i < 5; i++) {
      const result = await world.tick();
      records += result.stats.records;
      bytes += result.stats.bytes;
      m.record(result, { passMs: 1 });
    }
    const r = m.report({ ticks: 5, dropped: 0, late: 0, elapsedMs: 250, periodMs: 50, reason: 'completed', governor: { enabled: false, ticksAtLevel: [5], changes: 0, minLoadFactor: 1, final: null } });
    expect(records).toBe(3); // the three within 256 m, once: they never move
    expect(r.packets).toBe(5);
    expect(r.viewersPerTick).toBe(1);
    expect(r.recordsPerPacket).toMatchObject({ mean: records / 5, slots: 98, p50: 0, fullShare: 0 });
    expect(r.bytes.total).toBe(bytes);
    expect(r.bytes.perSecond).toBeCloseTo(bytes / 0.25, 6);
    expect(r.bytes.perClientPerSecond).toBeCloseTo(bytes / 0.25, 6);
    expect(r.bytes.perPacket).toBe(bytes / 5);
    expect(r.candidatesPerViewer).toBe(3);
    expect(r.entities).toBe(5);
  });

  it('coverage: in-range entities by brute force, never-sent ones from decoded packets', async () => {
    // ghostCap 2: only the two nearest of the four in range are ever sent; 400 m is out of range.
    const { world, ids } = lineWorld([10, 20, 100, 200, 400], { ghostCap: 2 });
    const m = new TickMetrics(world, { entities: ids, eventLoop: false });
    for (let i = 0; i < 4; i++) m.record(await world.tick(), { passMs: 1 });
    // The two eligible (nearest ghostCap) were both sent.
    expect(m.report().coverage).toEqual({
      sampledViewers: 1,
      inRange: 4,
      neverSent: 2,
      neverSentShare: 0.5,
      eligible: 2,
      eligibleNeverSent: 0,
      eligibleNeverSentShare: 0,
      nearest: 4,
      nearestNeverSent: 2,
      nearestNeverSentShare: 0.5,
    });

    // The far entity comes into range and is sent once the nearer ones leave the ghost table.
    const far = ids[5];
    world.setPosition(far, { x: 1005, y: 1000, z: 0 });
    for (let i = 0; i < 4; i++) m.record(await world.tick(), { passMs: 1 });
    const c = m.report().coverage;
    expect(c?.inRange).toBe(5);
    expect(c?.neverSent).toBe(2);
  });

  it('coverage: the eligible are the nearest ghostCap, ties at the cut in gather order as the engine takes them', async () => {
    // ghostCap 3: 10 m, then two of the four at 20 m (two pairs on the same spot), never 30 m. The
    // engine sends exactly its eligible set; a different pick at the tie would show as eligible
    // and never sent.
    const { world, ids } = lineWorld([20, 10, -20, 20, -20, 30], { ghostCap: 3 });
    const m = new TickMetrics(world, { entities: ids, eventLoop: false });
    for (let i = 0; i < 3; i++) m.record(await world.tick(), { passMs: 1 });
    expect(m.report().coverage).toMatchObject({ inRange: 6, neverSent: 3, eligible: 3, eligibleNeverSent: 0 });
  });

  it('coverage: the 10 nearest by brute force show a neighbour the capped walk never reached', async () => {
    // 4 entities per m² (3,600 on a 0.5 m grid): the cell is divided as finely as it goes (8 m
    // sub-cells), and still the viewer's own sub-cell holds the walk cap of 256 by itself, so its
    // neighbours 0.5 m away across the sub-cell edge are never candidates.
    const world = new World(WorldConfig.build(), { capacity: 4096, threads: 1 });
    const ids: EntityId[] = [];
    for (let i = 0; i < 3600; i++) ids.push(world.spawn({ x: 1985 + (i % 60) / 2, y: 1985 + Math.floor(i / 60) / 2, z: 0 }));
    const viewer = world.spawn({ x: 2000.01, y: 2000.01, z: 0 });
    world.addViewer(viewer);
    ids.push(viewer);
    const m = new TickMetrics(world, { entities: ids, eventLoop: false });
    for (let i = 0; i < 3; i++) m.record(await world.tick(), { passMs: 1 });
    const c = m.report().coverage!;
    expect(c.eligibleNeverSent).toBe(0);  // what the walk found was all sent...
    expect(c.nearest).toBe(10);
    expect(c.nearestNeverSent).toBeGreaterThan(0);  // ...but not its nearest neighbours
  });

  it('a refused record() records nothing; bad constructor arguments are coded errors', async () => {
    const { world, ids } = lineWorld([10, 20]);
    const m = new TickMetrics(world, { entities: ids, eventLoop: false });
    const first = await world.tick();
    m.record(first, { passMs: 1 });
    const before = JSON.stringify(m.report());
    await world.tick();
    await world.tick();
    const bad = [
      () => m.record(first, { passMs: 1 }),  // expired
      () => m.record({} as never, { passMs: 1 }),
      () => m.record(undefined as never, { passMs: 1 }),
    ];
    const fresh = await world.tick();
    bad.push(() => m.record(fresh, undefined as never), () => m.record(fresh, {} as never), () => m.record(fresh, { passMs: NaN }));
    bad.push(() => m.record(fresh, { passMs: 1, late: 'yes' as never }), () => m.record(fresh, { passMs: 1, stepMs: -1 }));
    bad.push(() => m.record(fresh, { passMs: 1, dropped: 1.5 }), () => m.record(fresh, { passMs: 1, dropped: -1 }));
    // report() takes a loop's summary or nothing.
    for (const summary of [{}, null, 5, { ticks: 1, dropped: 0, late: 0, elapsedMs: NaN }]) {
      expect(() => m.report(summary as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    for (const call of bad) expect(call).toThrow(expect.objectContaining({ code: expect.stringMatching(/^ERR_SIGHTLINE_(INVALID_ARGUMENT|RESULT_EXPIRED)$/) }));
    expect(JSON.stringify(m.report())).toBe(before);
    expect(() => new TickMetrics({} as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => new TickMetrics(world, 5 as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => new TickMetrics(world, { sample: 3 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
    expect(() => new TickMetrics(world, { eventLoop: 1 as never })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_METRICS_OPTION' }));
  });

  it('samples at most maxChecksPerTick / entities viewers', async () => {
    const world = new World(WorldConfig.build(), { capacity: 256, threads: 1 });
    const ids: EntityId[] = [];
    for (let i = 0; i < 200; i++) {
      const id = world.spawn({ x: 100 + (i % 20) * 5, y: 100 + Math.floor(i / 20) * 5, z: 0 });
      ids.push(id);
      if (i < 100) world.addViewer(id);
    }
    const m = new TickMetrics(world, { entities: ids, maxChecksPerTick: 2000, eventLoop: false });
    m.record(await world.tick(), { passMs: 1 });
    expect(m.report().coverage?.sampledViewers).toBe(10);
    const all = new TickMetrics(world, { entities: ids, sampleViewers: 64, eventLoop: false });
    all.record(await world.tick(), { passMs: 1 });
    expect(all.report().coverage?.sampledViewers).toBe(64);
  });

  it('rejects bad options with ERR_SIGHTLINE_INVALID_METRICS_OPTION', () => {
    const { world } = lineWorld([]);
    const code = expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_METRICS_OPTION' });
    expect(() => new TickMetrics(world, { sampleViewers: -1 })).toThrow(code);
    expect(() => new TickMetrics(world, { maxChecksPerTick: 0 })).toThrow(code);
    expect(() => new TickMetrics(world, { entities: 5 as unknown as number[] })).toThrow(code);
    for (const ids of [[NaN], ['x'], [-1], [1.5], [2 ** 32]]) expect(() => new TickMetrics(world, { entities: ids as number[] })).toThrow(code);
  });

  it('with coverage, a record() after World.close() is refused and records nothing', async () => {
    const { world, ids } = lineWorld([10, 20]);
    const m = new TickMetrics(world, { entities: ids, eventLoop: false });
    const result = await world.tick();
    world.close();
    expect(() => m.record(result, { passMs: 1 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_WORLD_CLOSED' }));
    expect(m.report()).toMatchObject({ ticks: 0, packets: 0 });
  });
});

describe('createPrometheusRegistry', () => {
  it('exposes tick duration, records per packet, bytes and late ticks', async () => {
    const { world } = lineWorld([10, 20]);
    const prom = createPrometheusRegistry({ world });
    let bytes = 0;
    for (let i = 0; i < 3; i++) {
      const result = await world.tick();
      bytes += result.stats.bytes;
      prom.record(result, { passMs: 5 + i, stepMs: 0.2, lateness: i === 2 ? 20 : 0, late: i === 2, dropped: i === 2 ? 4 : 0 });
    }
    const text = await prom.registry.metrics();
    expect(text).toContain('sightline_tick_duration_seconds_bucket{le="0.008"} 3');
    expect(text).toContain('sightline_tick_duration_seconds_count 3');
    expect(text).toContain('sightline_ticks_total 3');
    expect(text).toContain('sightline_late_ticks_total 1');
    expect(text).toContain('sightline_dropped_ticks_total 4');
    expect(text).toContain(`sightline_bytes_sent_total ${bytes}`);
    expect(text).toContain('sightline_packets_sent_total 3');
    expect(text).toContain('sightline_packet_slots 98');
    expect(text).toMatch(/sightline_records_per_packet \d/);
    expect(text).toContain('sightline_viewers_served 1');
  });

  it('takes a prefix and an existing registry; refuses a bad prefix', async () => {
    const first = createPrometheusRegistry({ prefix: 'game_' });
    const second = createPrometheusRegistry({ prefix: 'zone2_', registry: first.registry });
    expect(second.registry).toBe(first.registry);
    const text = await first.registry.metrics();
    expect(text).toContain('game_ticks_total 0');
    expect(text).toContain('zone2_ticks_total 0');
    expect(() => createPrometheusRegistry({ prefix: '9bad' })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_METRICS_OPTION' }));
    // The same prefix twice in one registry, a registry that is not one, an unknown option.
    const code = (c: string) => expect.objectContaining({ code: c });
    expect(() => createPrometheusRegistry({ prefix: 'game_', registry: first.registry })).toThrow(code('ERR_SIGHTLINE_INVALID_METRICS_OPTION'));
    expect(() => createPrometheusRegistry({ registry: {} as never })).toThrow(code('ERR_SIGHTLINE_INVALID_METRICS_OPTION'));
    expect(() => createPrometheusRegistry({ world: {} as never })).toThrow(code('ERR_SIGHTLINE_INVALID_METRICS_OPTION'));
    expect(() => createPrometheusRegistry({ prefx: 'x_' } as never)).toThrow(code('ERR_SIGHTLINE_UNKNOWN_OPTION'));
    // Node's default metrics once per registry: a second request is a coded error.
    const withDefaults = createPrometheusRegistry({ prefix: 'a_', defaultMetrics: true });
    expect(() => createPrometheusRegistry({ prefix: 'b_', registry: withDefaults.registry, defaultMetrics: true })).toThrow(code('ERR_SIGHTLINE_INVALID_METRICS_OPTION'));
  });

  it('record() checks what it is given and records nothing it refuses', async () => {
    const { world } = lineWorld([10, 20]);
    const prom = createPrometheusRegistry({ world });
    const result = await world.tick();
    const before = await prom.registry.metrics();
    const bad = [
      () => prom.record(null as never, { passMs: 1 }),
      () => prom.record({} as never, { passMs: 1 }),
      () => prom.record(result, undefined as never),
      () => prom.record(result, { passMs: NaN }),
      () => prom.record(result, { passMs: -1 }),
      () => prom.record(result, { passMs: 1, dropped: 0.5 }),
    ];
    for (const call of bad) expect(call).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(await prom.registry.metrics()).toBe(before);
  });
});
