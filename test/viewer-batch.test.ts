// setViewerSettings, the batched change of many viewers' send periods, packet sizes and view
// radii, against its slow twin (the per-viewer setters, one viewer at a time): the same packets,
// byte for byte; refused as a whole. And the shedding's batched path (setMany, used by the
// governor) against the per-viewer set().
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, type TickResult } from '../lib/index.js';
import { GovernorLevers, shedAt } from '../lib/governor-levers.js';
import { readGovernor } from '../lib/governor.js';
import type { Shed } from '../lib/shedding.js';
import { ENGINE } from '../lib/world-entities.js';
import { errorCode, randInt, rng, withSeed } from './helpers/model.js';

const config = WorldConfig.build({ viewRadius: 64, eventReserveBytes: 16 });

interface Twin {
  w: World;
  viewers: number[];
  movers: number[];
}

// A world of `n` viewers among movers, the same for one seed.
function makeWorld(seed: number, n: number, threads = 2): Twin {
  const r = rng(seed);
  const w = new World(config, { capacity: 4096, threads });
  const movers: number[] = [];
  for (let i = 0; i < 600; i++) movers.push(w.spawn({ x: 20 + r() * 200, y: 20 + r() * 200, z: 0 }));
  const viewers: number[] = [];
  for (let i = 0; i < n; i++) {
    const id = movers[i * 3];
    w.addViewer(id, { payloadBytes: randInt(r, 80, 600), sendPeriod: randInt(r, 1, 4), acks: i % 3 === 0 });
    viewers.push(id);
  }
  return { w, viewers, movers };
}

function move(t: Twin, tick: number): void {
  const p = t.w.positions;
  for (let i = 0; i < t.movers.length; i++) {
    const s = t.w.slotOf(t.movers[i]);
    p.x[s] += ((i * 7 + tick * 13) % 9) * 40 - 160;
    p.y[s] += ((i * 5 + tick * 11) % 9) * 40 - 160;
  }
}

function packets(r: TickResult): [number, Uint8Array][] {
  return r.packets.map((p) => [p.viewer, Uint8Array.from(p.bytes)]);
}

interface Changes {
  ids: number[];
  sendPeriod?: number[];
  payloadBytes?: number[];
  viewRadius?: number[];
}

function randomChanges(r: () => number, viewers: number[]): Changes {
  const ids = viewers.filter(() => r() < 0.6);
  const c: Changes = { ids };
  if (r() < 0.7) c.sendPeriod = ids.map(() => randInt(r, 1, 6));
  if (r() < 0.7) c.payloadBytes = ids.map(() => randInt(r, 60, 900));
  if (r() < 0.7) c.viewRadius = ids.map(() => 4 + Math.round(r() * 60 * 1024) / 1024);
  return c;
}

function batched(w: World, c: Changes): void {
  w.setViewerSettings(Uint32Array.from(c.ids), { sendPeriod: c.sendPeriod, payloadBytes: c.payloadBytes, viewRadius: c.viewRadius });
}

function oneByOne(w: World, c: Changes): void {
  c.ids.forEach((v, i) => {
    if (c.sendPeriod) w.setSendPeriod(v, c.sendPeriod[i]);
    if (c.payloadBytes) w.setPayloadBytes(v, c.payloadBytes[i]);
    if (c.viewRadius) w.setViewRadius(v, c.viewRadius[i]);
  });
}

function settingsOf(t: Twin): unknown[] {
  return t.viewers.map((v) => [t.w.viewerSettings(v), t.w.servedSettings(v)]);
}

describe('setViewerSettings', () => {
  it('gives the packets the per-viewer setters give, byte for byte, between ticks and during them (randomized)', async () => {
    for (const seed of [1, 2, 3]) {
      await withSeed(seed, async () => {
        const a = makeWorld(seed, 40);
        const b = makeWorld(seed, 40);
        const r = rng(seed * 101);
        for (let tick = 0; tick < 24; tick++) {
          move(a, tick);
          move(b, tick);
          const c = tick % 3 === 0 ? randomChanges(r, a.viewers) : undefined;
          const during = tick % 2 === 1;
          if (c && !during) batched(a.w, c), oneByOne(b.w, c);
          const pa = a.w.tick();
          const pb = b.w.tick();
          if (c && during) batched(a.w, c), oneByOne(b.w, c);
          const [ra, rb] = [await pa, await pb];
          expect(packets(ra)).toEqual(packets(rb));
          expect(settingsOf(a)).toEqual(settingsOf(b));
        }
        a.w.close();
        b.w.close();
      });
    }
  });

  it('refuses bad input as a whole: the coded error, and every viewer as it was', async () => {
    const a = makeWorld(7, 12);
    const b = makeWorld(7, 12);
    const ids = Uint32Array.from(a.viewers);
    const n = ids.length;
    const fill = (x: number, last = x) => Array.from({ length: n }, (_, i) => (i === n - 1 ? last : x));
    const cases: [string, () => void][] = [
      ['ERR_SIGHTLINE_UNKNOWN_VIEWER', () => a.w.setViewerSettings(Uint32Array.from([...ids.slice(0, -1), a.movers[1]]), { sendPeriod: fill(2) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2), viewRadius: fill(10, 64.5) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { payloadBytes: fill(300), sendPeriod: fill(2, 0) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: fill(3, 65536) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2, 1.5) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2, NaN) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2), payloadBytes: fill(300, NaN) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { payloadBytes: fill(300, 20) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2), viewRadius: fill(10, NaN) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { viewRadius: new Float64Array(n) })],
      ['ERR_SIGHTLINE_INVALID_VIEWER_OPTION', () => a.w.setViewerSettings(ids, { sendPeriod: [...fill(2).slice(1), '2' as unknown as number] })],
      ['ERR_SIGHTLINE_INVALID_ARGUMENT', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2).slice(1) })],
      ['ERR_SIGHTLINE_INVALID_ARGUMENT', () => a.w.setViewerSettings(ids, { sendPeriod: fill(2), payloadBytes: [...fill(300), 300] })],
      ['ERR_SIGHTLINE_INVALID_ARGUMENT', () => a.w.setViewerSettings(Array.from(ids) as unknown as Uint32Array, { sendPeriod: fill(2) })],
      ['ERR_SIGHTLINE_INVALID_ARGUMENT', () => a.w.setViewerSettings(ids, null as unknown as object)],
      ['ERR_SIGHTLINE_UNKNOWN_OPTION', () => a.w.setViewerSettings(ids, { sendPeriods: fill(2) } as unknown as object)],
    ];
    const before = settingsOf(a);
    for (let tick = 0; tick < 6; tick++) {
      move(a, tick);
      move(b, tick);
      // Between ticks on even ticks, during them on odd ones.
      const pa = tick % 2 === 1 ? a.w.tick() : undefined;
      for (const [code, f] of cases) expect(errorCode(f), `${code}: ${f.toString()}`).toBe(code);
      expect(settingsOf(a)).toEqual(before);
      const ra = await (pa ?? a.w.tick());
      expect(packets(ra)).toEqual(packets(await b.w.tick()));
    }
    // The engine's own checks of the typed arrays (lengths, types, what), as the library never sends them.
    const e = a.w[ENGINE as unknown as keyof World] as unknown as { changeViewers: (...args: unknown[]) => void };
    const f64 = (x: number, k = n) => new Float64Array(k).fill(x);
    const call = (...args: unknown[]) => () => e.changeViewers(...args);
    const codeOf = (f: () => void): string => {
      try {
        f();
        return 'no error';
      } catch (err) {
        return (err as { code: string }).code;
      }
    };
    expect(codeOf(call(ids, new Uint8Array(n).fill(1), f64(2, n - 1), f64(300), f64(1024)))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(codeOf(call(ids, new Uint8Array(n - 1).fill(1), f64(2), f64(300), f64(1024)))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(codeOf(call(ids, new Uint8Array(n).fill(8), f64(2), f64(300), f64(1024)))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(codeOf(call(ids, new Uint8Array(n).fill(1), new Uint32Array(n).fill(2), f64(300), f64(1024)))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(codeOf(call(ids, new Uint8Array(n).fill(4), f64(2), f64(300), f64(64 * 1024 + 1)))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    expect(settingsOf(a)).toEqual(before);
    a.w.close();
    b.w.close();
  });

  it('refused by the output room part way through: the viewers before it are put back', () => {
    const w = new World(WorldConfig.build({ ghostCap: 1 }), { capacity: 65_570, threads: 1 });
    const ids = Array.from({ length: 65_566 }, (_, i) => w.spawn({ x: 1 + (i % 4000), y: 1 + Math.floor(i / 4000), z: 0 }));
    const limit = 2 ** 32 - 2 ** 16;
    const big = Math.floor(limit / 65_507);
    for (let i = 0; i < big; i++) w.addViewer(ids[i], { payloadBytes: 65_507 });
    w.addViewer(ids[big], { payloadBytes: 28, acks: true });
    w.addViewer(ids[big + 1], { payloadBytes: 28, acks: true });
    const room = limit - big * 65_507 - 56;
    const viewers = Uint32Array.from([ids[big], ids[big + 1]]);
    // Each fits alone; together they do not: the second is refused, and the first put back.
    expect(errorCode(() => w.setViewerSettings(viewers, { payloadBytes: [28 + room, 28 + room], sendPeriod: [3, 3] }))).toBe('ERR_SIGHTLINE_OUTPUT_FULL');
    for (const v of viewers) expect(w.viewerSettings(v)).toMatchObject({ payloadBytes: 28, sendPeriod: 1 });
    w.setViewerSettings(viewers, { payloadBytes: [28 + room, 28], sendPeriod: [3, 3] }); // exactly full
    expect(w.viewerSettings(ids[big])).toMatchObject({ payloadBytes: 28 + room, sendPeriod: 3 });
    expect(errorCode(() => w.setPayloadBytes(ids[big + 1], 29))).toBe('ERR_SIGHTLINE_OUTPUT_FULL');
    w.close();
  });

  it('on a viewer shed from, changes its base, as the setters do', async () => {
    const a = makeWorld(9, 8);
    const b = makeWorld(9, 8);
    const la = new GovernorLevers(a.w, readGovernor(undefined, 20)!);
    const lb = new GovernorLevers(b.w, readGovernor(undefined, 20)!);
    la.apply(5, undefined);
    lb.apply(5, undefined);
    const c: Changes = { ids: a.viewers.slice(0, 5), sendPeriod: [1, 2, 3, 4, 5], payloadBytes: [100, 200, 300, 400, 500], viewRadius: [10, 20, 30, 40, 50] };
    batched(a.w, c);
    oneByOne(b.w, c);
    expect(settingsOf(a)).toEqual(settingsOf(b));
    expect(a.w.viewerSettings(a.viewers[1])).toMatchObject({ sendPeriod: 2, payloadBytes: 200, viewRadius: 20 });
    for (let tick = 0; tick < 4; tick++) {
      if (tick === 2) la.apply(0, undefined), lb.apply(0, undefined);
      move(a, tick);
      move(b, tick);
      expect(packets(await a.w.tick())).toEqual(packets(await b.w.tick()));
      expect(settingsOf(a)).toEqual(settingsOf(b));
    }
    a.w.close();
    b.w.close();
  });
});

describe('the shedding of viewer settings, batched', () => {
  const SHEDS: Shed[] = [0, 1, 2, 3, 4, 5].flatMap((l) => [shedAt(l, false), shedAt(l, true)]);

  it('setMany gives the settings and packets set() gives one viewer at a time (randomized, two sources)', async () => {
    await withSeed(5, async () => {
      const a = makeWorld(5, 30);
      const b = makeWorld(5, 30);
      const r = rng(55);
      const ids = Uint32Array.from(a.viewers);
      for (let tick = 0; tick < 20; tick++) {
        const source = r() < 0.3 ? 'congestion' : 'governor';
        const sheds = a.viewers.map(() => SHEDS[randInt(r, 0, SHEDS.length)]);
        const pa = tick % 2 === 1 ? a.w.tick() : undefined;
        const pb = tick % 2 === 1 ? b.w.tick() : undefined;
        a.w.shedding.setMany(source, ids, (i) => sheds[i]);
        a.viewers.forEach((v, i) => b.w.shedding.set(source, v, sheds[i]));
        expect(settingsOf(a)).toEqual(settingsOf(b));
        if (r() < 0.2) {
          const c = randomChanges(r, a.viewers);
          batched(a.w, c);
          oneByOne(b.w, c);
        }
        move(a, tick);
        move(b, tick);
        if (pa) await pa, await pb;
        expect(packets(await a.w.tick())).toEqual(packets(await b.w.tick()));
      }
      a.w.close();
      b.w.close();
    });
  });

  it('a level change is a few engine calls, however many viewers', () => {
    const t = makeWorld(11, 120);
    const engine = t.w[ENGINE as unknown as keyof World] as unknown as Record<string, (...args: unknown[]) => unknown>;
    const calls = new Map<string, number>();
    for (const name of ['changeViewer', 'changeViewers', 'servedSettingsInto', 'servedSettingsOf', 'viewerSettings', 'viewerIds']) {
      const f = engine[name].bind(engine);
      const counted = (...args: unknown[]) => (calls.set(name, (calls.get(name) ?? 0) + 1), f(...args));
      Object.defineProperty(engine, name, { value: counted, configurable: true });
    }
    const levers = new GovernorLevers(t.w, readGovernor(undefined, 20)!);
    for (const level of [1, 2, 3, 4, 5, 4, 3, 0]) {
      calls.clear();
      levers.apply(level, undefined);
      const total = [...calls.values()].reduce((x, y) => x + y, 0);
      expect(calls.get('changeViewer') ?? 0, `level ${level}`).toBe(0);
      if (level !== 2) expect(calls.get('changeViewers'), `level ${level}`).toBe(1); // 1 → 2: only the caps change
      expect(total, `level ${level}: ${JSON.stringify([...calls])}`).toBeLessThanOrEqual(4);
    }
    t.w.close();
  });
});
