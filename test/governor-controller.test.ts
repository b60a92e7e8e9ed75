// The tick governor's controller alone, fed tick times and lateness: AIMD over the EWMA, the dead
// band, the backlog rule, the doubling wait after a failed rise, bounded level changes, options.
import { describe, expect, it } from 'vitest';
import { GOVERNOR_LEVELS, TickGovernor, levelOf, readGovernor } from '../lib/governor.js';
import { randInt, rng, withSeed } from './helpers/model.js';

const PERIOD = 50;
const governorAt = (options: object = {}): TickGovernor => new TickGovernor(readGovernor(options, 20)!, PERIOD);

describe('TickGovernor', () => {
  it('holds at 1 while ticks stay under the high watermark', () => {
    const g = governorAt();
    for (let i = 0; i < 1000; i++) expect(g.observe(44)).toBe(false);
    expect(g.state).toMatchObject({ enabled: true, loadFactor: 1, level: 0, changes: 0 });
  });

  it('falls within a few ticks of an overload, × 0.7 each evaluation, down to the floor', () => {
    const g = governorAt();
    for (let i = 0; i < 20; i++) g.observe(20);
    const loads: number[] = [];
    for (let i = 0; i < 40; i++) {
      g.observe(80);
      loads.push(g.state.loadFactor);
    }
    // The EWMA passes 45 ms on the third tick of 80 ms; the first evaluation after it decreases.
    expect(loads.findIndex((l) => l < 1)).toBeLessThan(10);
    expect(loads[4]).toBeCloseTo(0.7, 12);
    expect(loads[9]).toBeCloseTo(0.49, 12);
    expect(loads[39]).toBe(0.15);
    expect(g.state.level).toBe(5);
  });

  it('holds in the dead band, and rises by 0.125 per evaluation once recoverTicks have passed since the last change', () => {
    const g = governorAt({ recoverTicks: 20 });
    for (let i = 0; i < 10; i++) g.observe(100); // two decreases: 0.49, level 2
    expect(g.state.loadFactor).toBeCloseTo(0.49, 12);
    // 0.8 of the period: the dead band, once the EWMA has come down from 100 ms (two more
    // evaluations find it above 45 ms).
    for (let i = 0; i < 20; i++) g.observe(40);
    const held = g.state.loadFactor;
    expect(held).toBeCloseTo(0.2401, 12);
    for (let i = 0; i < 200; i++) g.observe(40);
    expect(g.state.loadFactor).toBe(held);
    let rose = -1;
    for (let i = 0; i < 200 && rose < 0; i++) {
      g.observe(10);
      if (g.state.loadFactor > held + 1e-9) rose = i;
    }
    // The EWMA falls below 30 ms within a few ticks; the level last changed long ago.
    expect(rose).toBeGreaterThanOrEqual(0);
    expect(rose).toBeLessThan(15);
    expect(g.state.loadFactor).toBeCloseTo(held + 0.125, 12);
    for (let i = 0; i < 400; i++) g.observe(10);
    expect(g.state).toMatchObject({ loadFactor: 1, level: 0 });
  });

  it('sheds while the loop is behind its schedule, though the EWMA holds in the dead band, and never rises then', () => {
    const g = governorAt({ recoverTicks: 5 });
    // 40 ms ticks (the dead band) that start on time: it holds at 1.
    for (let i = 0; i < 50; i++) g.observe(40, 0);
    expect(g.state.loadFactor).toBe(1);
    // The same ticks, started 120 ms late (more than a period behind): each evaluation sheds.
    for (let i = 0; i < 10; i++) g.observe(40, 120);
    expect(g.state.loadFactor).toBeCloseTo(0.49, 12);
    // Ticks that start behind by as much each time (the backlog does not drain): it sheds on.
    for (let i = 0; i < 50; i++) g.observe(5, 60);
    expect(g.state.loadFactor).toBe(0.15);
    // Caught up (late by less than a period): it rises again.
    for (let i = 0; i < 50; i++) g.observe(5, 10);
    expect(g.state.loadFactor).toBeGreaterThan(0.15);
    // One stall between ticks (a collection, a blocking call elsewhere: not in any tick's time),
    // then cheap ticks that give the backlog back at 45 ms a tick: it holds through the catch-up
    // (no shed, no rise), and does not shed for it. (A stall inside a tick sheds by the EWMA.)
    const stalled = governorAt({ recoverTicks: 40 });
    for (let i = 0; i < 20; i++) stalled.observe(5, 0);
    for (let late = 1500; late > 0; late -= 45) stalled.observe(5, late);
    expect(stalled.state).toMatchObject({ loadFactor: 1, level: 0, changes: 0 });
    // A backlog that drains too slowly (5 ms a tick from 1,000 ms: 200 ticks, more than
    // recoverTicks) is shed for, though the EWMA (45 ms) is in the dead band.
    const slow = governorAt({ recoverTicks: 40 });
    for (let late = 1000; late > 800; late -= 5) slow.observe(44, late);
    expect(slow.state.loadFactor).toBeLessThan(0.5);
    // backlogTicks: Infinity ignores lateness; an injected clock defaults to it.
    const ignoring = governorAt({ backlogTicks: Infinity });
    for (let i = 0; i < 50; i++) ignoring.observe(40, 10_000);
    expect(ignoring.state.loadFactor).toBe(1);
    expect(readGovernor({ clock: () => 0 }, 20)!.backlogTicks).toBe(Infinity);
    expect(readGovernor({ clock: () => 0, backlogTicks: 2 }, 20)!.backlogTicks).toBe(2);
    expect(readGovernor(undefined, 20)!.backlogTicks).toBe(1);
  });

  it('waits twice as long before a rise after one that failed, up to 8 × recoverTicks, and half as long after one that held', () => {
    const g = governorAt({ recoverTicks: 20 });
    // Shed to level 1 (load 0.7) under 80 ms ticks.
    for (let i = 0; i < 5; i++) g.observe(80);
    expect(g.state).toMatchObject({ level: 1, recoverWaitTicks: 20 });
    // Light ticks: it rises once 20 ticks have passed; the load comes back at once (a failed rise).
    const cycle = (): number => {
      let t = 0;
      while (g.state.level !== 0) {
        g.observe(10);
        t++;
      }
      for (let i = 0; i < 5; i++) g.observe(80); // undone within 2 × recoverTicks
      return t;
    };
    const waits: number[] = [];
    for (let k = 0; k < 5; k++) {
      cycle();
      waits.push(g.state.recoverWaitTicks);
    }
    expect(waits).toEqual([40, 80, 160, 160, 160]);
    // A rise that holds 2 × recoverTicks halves the wait.
    while (g.state.level !== 0) g.observe(10);
    for (let i = 0; i < 40; i++) g.observe(10);
    expect(g.state.recoverWaitTicks).toBe(80);
    expect(readGovernor(undefined, 20) && governorAt().state.recoverWaitTicks).toBe(40);
  });

  for (const seed of [1, 2, 3]) {
    it(`changes level at most a bounded number of times a minute, whatever the load (seed ${seed})`, () => {
      withSeed(seed, () => {
        const r = rng(seed);
        const g = governorAt();
        // A minute at 20 Hz of loads switching between far over and far under the budget at random.
        let load = 100;
        const changesAt: number[] = [];
        for (let t = 0; t < 1200; t++) {
          if (r() < 0.1) load = r() < 0.5 ? randInt(r, 60, 200) : randInt(r, 1, 25);
          if (g.observe(load)) changesAt.push(t);
        }
        // Rises wait recoverTicks (40) after a change, and there are 5 levels to fall through.
        expect(changesAt.length).toBeLessThanOrEqual(2 * Math.ceil(1200 / 40) + 5);
        for (let i = 1; i < changesAt.length; i++) expect(changesAt[i] - changesAt[i - 1]).toBeGreaterThanOrEqual(5);
      });
    });
  }

  it('maps load factors to levels, and AIMD steps shed about one level each', () => {
    expect([1, 0.96, 0.95, 0.94, 0.7, 0.65, 0.49, 0.45, 0.343, 0.3, 0.24, 0.22, 0.168, 0.15].map(levelOf)).toEqual([0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    expect(GOVERNOR_LEVELS).toHaveLength(6);
  });

  it('refuses bad options', () => {
    for (const bad of [{ high: 0 }, { low: -1 }, { high: 0.5, low: 0.6 }, { decrease: 1 }, { increase: 0 }, { floor: 1 }, { smoothing: 2 }, { evalTicks: 0 }, { recoverTicks: 1.5 }, { backlogTicks: -1 }, { backlogTicks: NaN }, { backlogTicks: '1' }, { lowPriority: 3 }, { clock: 'now' }]) {
      expect(() => readGovernor(bad, 20), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_LOOP_OPTION' }));
    }
    expect(() => readGovernor({ hgh: 0.9 }, 20)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
    expect(readGovernor(false, 20)).toBeNull();
    expect(readGovernor(undefined, 20)).toMatchObject({ high: 0.9, low: 0.6, decrease: 0.7, increase: 0.125, evalTicks: 5, recoverTicks: 40, backlogTicks: 1 });
  });
});
