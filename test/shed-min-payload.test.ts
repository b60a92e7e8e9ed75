// Shedding packet size never goes below the config's smallest packet (config.minPayloadBytes),
// which fast fields (records longer than 12 bytes) and attributes raise above 28 + eventReserveBytes:
// a governor level that scales packets, run() under it, and setViewerSettings or the per-viewer
// setters on a viewer shed from are accepted with such a config, the packets equal between the two.
// And a packet size below it is refused naming that smallest size, and in a batch the element.
import { describe, expect, it } from 'vitest';
import { WorldConfig } from '../lib/config.js';
import { readGovernor } from '../lib/governor.js';
import { GovernorLevers } from '../lib/governor-levers.js';
import { run } from '../lib/loop.js';
import { World, type TickResult } from '../lib/world.js';

const CONFIGS = {
  fields: WorldConfig.build({ viewRadius: 64, fields: [{ name: 'hp', bits: 7, max: 100 }] }),
  attributes: WorldConfig.build({ viewRadius: 64, attributeBytes: 32 }),
  both: WorldConfig.build({ viewRadius: 64, eventReserveBytes: 8, fields: [{ name: 'yaw', bits: 10 }, { name: 'anim', bits: 4 }], attributeBytes: 16 }),
};

function makeWorld(config: WorldConfig): { w: World; viewers: number[]; movers: number[] } {
  const w = new World(config, { capacity: 256, threads: 1 });
  const movers: number[] = [];
  for (let i = 0; i < 40; i++) movers.push(w.spawn({ x: 100 + (i % 8), y: 100 + Math.floor(i / 8), z: 0 }));
  const viewers = [movers[0], movers[1], movers[2]];
  w.addViewer(viewers[0], { payloadBytes: config.minPayloadBytes });
  w.addViewer(viewers[1], { payloadBytes: config.minPayloadBytes + 1, acks: true });
  w.addViewer(viewers[2], { payloadBytes: 300 });
  return { w, viewers, movers };
}

function packets(r: TickResult): [number, Uint8Array][] {
  return r.packets.map((p) => [p.viewer, Uint8Array.from(p.bytes)]);
}

describe('shedding packet size with fast fields or attributes', () => {
  for (const [name, config] of Object.entries(CONFIGS)) {
    it(`${name}: every governor level is applied, packets never below config.minPayloadBytes`, () => {
      const { w, viewers } = makeWorld(config);
      const levers = new GovernorLevers(w, readGovernor(undefined, 20)!);
      for (const level of [1, 2, 3, 4, 5, 3, 0]) {
        levers.apply(level, undefined);
        for (const v of viewers) expect(w.servedSettings(v).payloadBytes).toBeGreaterThanOrEqual(config.minPayloadBytes);
      }
      w.close();
    });

    it(`${name}: setViewerSettings on a viewer shed from equals the setters, settings and packets`, async () => {
      const a = makeWorld(config);
      const b = makeWorld(config);
      const la = new GovernorLevers(a.w, readGovernor(undefined, 20)!);
      const lb = new GovernorLevers(b.w, readGovernor(undefined, 20)!);
      la.apply(5, undefined);
      lb.apply(5, undefined);
      const sizes = [config.minPayloadBytes, config.minPayloadBytes + 2, 200];
      a.w.setViewerSettings(Uint32Array.from(a.viewers), { payloadBytes: sizes, sendPeriod: [1, 2, 1] });
      b.viewers.forEach((v, i) => (b.w.setPayloadBytes(v, sizes[i]), b.w.setSendPeriod(v, [1, 2, 1][i])));
      for (let tick = 0; tick < 6; tick++) {
        if (tick === 3) la.apply(3, undefined), lb.apply(3, undefined);
        expect(a.viewers.map((v) => [a.w.viewerSettings(v), a.w.servedSettings(v)])).toEqual(b.viewers.map((v) => [b.w.viewerSettings(v), b.w.servedSettings(v)]));
        for (const t of [a, b]) for (const m of t.movers) t.w.positions.x[t.w.slotOf(m)] += tick % 2 ? 200 : -200;
        expect(packets(await a.w.tick())).toEqual(packets(await b.w.tick()));
      }
      a.w.close();
      b.w.close();
    });
  }

  it('run() with the governor shedding to its last level completes (fields, a viewer at the smallest packet)', async () => {
    const { w } = makeWorld(CONFIGS.fields);
    let now = 0;
    const levels = new Set<number>();
    const summary = await run(w, {
      ticks: 20,
      governor: { clock: () => (now += 200), evalTicks: 1 },
      onTick: (_r, report) => void levels.add(report.governor.level),
    }).done;
    expect(summary.reason).toBe('completed');
    expect(Math.max(...levels)).toBeGreaterThanOrEqual(3);
    w.close();
  });

  for (const [name, config] of Object.entries(CONFIGS)) {
    it(`${name}: a packet size below config.minPayloadBytes is refused naming it (and the element, in a batch)`, () => {
      const { w, viewers } = makeWorld(config);
      const min = config.minPayloadBytes;
      const range = `between ${min} and 65507`;
      const before = viewers.map((v) => w.viewerSettings(v));
      for (const bad of [20, 28, min - 1]) {
        expect(() => w.setViewerSettings(Uint32Array.from(viewers), { payloadBytes: [300, 300, bad] }), `batch ${bad}`).toThrow(
          expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION', message: expect.stringMatching(new RegExp(`^payloadBytes\\[2\\] .*${range}, received ${bad}$`)) }),
        );
        expect(() => w.setPayloadBytes(viewers[2], bad), `setter ${bad}`).toThrow(
          expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION', message: expect.stringContaining(`${range}, received ${bad}`) }),
        );
      }
      expect(viewers.map((v) => w.viewerSettings(v))).toEqual(before);
      w.setViewerSettings(Uint32Array.from(viewers), { payloadBytes: [min, min, min] });
      w.close();
    });
  }
});

describe('a view radius set on a viewer shed from', () => {
  it('reads back rounded to raw units as on one not shed, and is served alike whether set before or during shedding', async () => {
    const config = CONFIGS.fields;
    const meters = 10.3;
    const rounded = Math.round(meters * 1024) / 1024;
    const before = makeWorld(config);
    const during = makeWorld(config);
    const batch = makeWorld(config);
    const [lb, ld, lt] = [before, during, batch].map((t) => new GovernorLevers(t.w, readGovernor(undefined, 20)!));
    before.viewers.forEach((v) => before.w.setViewRadius(v, meters));
    lb.apply(4, undefined);
    ld.apply(4, undefined);
    lt.apply(4, undefined);
    during.viewers.forEach((v) => during.w.setViewRadius(v, meters));
    batch.w.setViewerSettings(Uint32Array.from(batch.viewers), { viewRadius: batch.viewers.map(() => meters) });
    for (const t of [before, during, batch]) {
      for (const v of t.viewers) expect(t.w.viewerSettings(v).viewRadius).toBe(rounded);
    }
    const served = (t: typeof before) => t.viewers.map((v) => t.w.servedSettings(v));
    expect(served(during)).toEqual(served(before));
    expect(served(batch)).toEqual(served(before));
    for (let tick = 0; tick < 3; tick++) {
      const [a, b, c] = await Promise.all([before.w.tick(), during.w.tick(), batch.w.tick()].map((p) => p.then(packets)));
      expect(b).toEqual(a);
      expect(c).toEqual(a);
    }
    for (const t of [before, during, batch]) t.w.close();
  });
});
