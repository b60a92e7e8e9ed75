import { describe, expect, it } from 'vitest';
import { WorldConfig } from '../lib/config.js';
import { createHerd } from '../tools/herd/scenarios.js';
import { run, runLoop, type LoopReport, type LoopOptions } from '../lib/loop.js';
import { World } from '../lib/world.js';

const PERIOD = 50;

function makeWorld(): World {
  const world = new World(WorldConfig.build(), { capacity: 1024, threads: 1 });
  createHerd(world, { scenario: 'uniform', entities: 500, viewers: 20, seed: 1 });
  return world;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('run', () => {
  it('keeps absolute deadlines: mean period ≈ 50 ms, no drift', async () => {
    const world = makeWorld();
    const herd = createHerd(world, { scenario: 'uniform', entities: 200, viewers: 0, seed: 2 });
    const starts: number[] = [];
    const reports: LoopReport[] = [];
    const summary = await runLoop(world, {
      step: () => {
        starts.push(performance.now());
        herd.step();
      },
      onTick: (result, report) => {
        expect(result.count).toBe(20);
        reports.push(report);
      },
      ticks: 41,
    });
    expect(summary).toMatchObject({ ticks: 41, dropped: 0, reason: 'completed', periodMs: PERIOD });
    expect(reports.map((r) => r.tick)).toEqual(Array.from({ length: 41 }, (_, i) => i));
    // Each tick starts near epoch + n × period: errors do not accumulate. A loaded machine can
    // start any one tick late, so the bounds are on the median and on the schedule as a whole.
    const errors = starts.map((t, n) => Math.abs(t - starts[0] - n * PERIOD)).sort((a, b) => a - b);
    expect(errors[Math.floor(errors.length / 2)]).toBeLessThan(10);
    const mean = (starts[40] - starts[0]) / 40;
    expect(mean).toBeGreaterThan(PERIOD * 0.9);
    expect(mean).toBeLessThan(PERIOD * 1.1);
    for (const r of reports) {
      expect(r.passMs).toBeGreaterThanOrEqual(0);
      expect(r.stepMs).toBeGreaterThanOrEqual(0);
      expect(r.lateness).toBeGreaterThanOrEqual(0);
      expect(r.dropped).toBe(0);
    }
    expect(world.tickCount).toBe(41);
  });

  it("'stretch' runs late ticks at once and catches up on the absolute schedule", async () => {
    const world = makeWorld();
    const starts = new Map<number, number>();
    const reports: LoopReport[] = [];
    let epoch = 0;
    const summary = await runLoop(world, {
      step: async (n) => {
        const now = performance.now();
        if (n === 0) epoch = now;
        starts.set(n, now);
        if (n === 2) await sleep(130);
      },
      onTick: (_, report) => void reports.push(report),
      ticks: 10,
    });
    expect(summary.ticks).toBe(10);
    expect(summary.dropped).toBe(0);
    expect(reports.map((r) => r.tick)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Tick 3 was due at 150 ms but tick 2 ran until about 230 ms.
    expect(reports[3].lateness).toBeGreaterThan(40);
    expect(reports[3].late).toBe(true);
    expect(summary.late).toBeGreaterThanOrEqual(2);
    // Caught up: tick 9 starts on its original deadline.
    expect(Math.abs((starts.get(9) ?? 0) - epoch - 9 * PERIOD)).toBeLessThan(PERIOD / 2);
  });

  it("'drop' skips missed deadlines and counts them", async () => {
    const world = makeWorld();
    const reports: LoopReport[] = [];
    const summary = await runLoop(world, {
      step: async (n) => {
        if (n === 2) await sleep(180);
      },
      onTick: (_, report) => void reports.push(report),
      overrun: 'drop',
      ticks: 10,
      // Wide enough that a busy machine's timer delays never drop ticks 0 to 2.
      lateToleranceMs: 40,
    });
    const ran = reports.map((r) => r.tick);
    // Tick 2 ran until about 280 ms: the deadlines at 150 and 200 ms were missed by more than 40 ms.
    expect(ran.slice(0, 3)).toEqual([0, 1, 2]);
    expect(ran).not.toContain(3);
    expect(ran).not.toContain(4);
    expect(summary.dropped).toBeGreaterThanOrEqual(2);
    expect(summary.ticks + summary.dropped).toBe(10);
    expect(reports[reports.length - 1].dropped).toBe(summary.dropped);
    expect(world.tickCount).toBe(summary.ticks);
  });

  it('a throwing step rejects done with its error; the world still ticks', async () => {
    const world = makeWorld();
    const boom = new Error('step failed');
    const seen: number[] = [];
    const handle = run(world, {
      step: (n) => {
        if (n === 3) throw boom;
      },
      onTick: (r) => void seen.push(r.tick),
    });
    await expect(handle.done).rejects.toBe(boom);
    expect(seen).toEqual([1, 2, 3]);
    await handle.stop();
    const result = await world.tick();
    expect(result.tick).toBe(4);
    expect(result.count).toBe(20);
  });

  it('a throwing onTick rejects done; a rejecting async step too', async () => {
    const world = makeWorld();
    const boom = new Error('send failed');
    await expect(
      runLoop(world, {
        onTick: (r) => {
          if (r.tick === 2) throw boom;
        },
      }),
    ).rejects.toBe(boom);
    const later = new Error('async step failed');
    await expect(
      runLoop(world, {
        step: async () => {
          await sleep(1);
          throw later;
        },
      }),
    ).rejects.toBe(later);
    expect((await world.tick()).tick).toBe(3);
  });

  it('stop() ends the loop and resolves; no tick runs afterwards', async () => {
    const world = makeWorld();
    let ticks = 0;
    const handle = run(world, { onTick: () => void ticks++ });
    await sleep(180);
    const t0 = performance.now();
    await handle.stop();
    // Stopped while waiting for a deadline: it ends without waiting for it.
    expect(performance.now() - t0).toBeLessThan(2 * PERIOD);
    const summary = await handle.done;
    expect(summary.reason).toBe('stopped');
    expect(summary.ticks).toBe(ticks);
    expect(ticks).toBeGreaterThanOrEqual(3);
    await sleep(120);
    expect(ticks).toBe(summary.ticks);
    expect(world.tickCount).toBe(ticks);
    await expect(handle.stop()).resolves.toBeUndefined();
  });

  it('stop() during a tick lets that tick and its onTick finish', async () => {
    const world = makeWorld();
    const seen: number[] = [];
    const handle = run(world, {
      step: async (n) => {
        if (n === 2) await sleep(20);
      },
      onTick: (_, report) => void seen.push(report.tick),
    });
    await sleep(110); // inside tick 2's step
    await handle.stop();
    expect(seen).toEqual([0, 1, 2]);
    expect(world.tickCount).toBe(3);
  });

  it('stop() from inside onTick ends the loop after that tick', async () => {
    const world = makeWorld();
    const seen: number[] = [];
    const handle: ReturnType<typeof run> = run(world, {
      onTick: (_, report) => {
        seen.push(report.tick);
        if (report.tick === 4) void handle.stop();
      },
    });
    const summary = await handle.done;
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(summary).toMatchObject({ ticks: 5, reason: 'stopped' });
  });

  it('an aborted signal ends the loop', async () => {
    const world = makeWorld();
    const controller = new AbortController();
    const handle = run(world, { signal: controller.signal });
    await sleep(120);
    controller.abort();
    const summary = await handle.done;
    expect(summary.reason).toBe('aborted');
    expect(summary.ticks).toBeGreaterThanOrEqual(2);
    const pre = new AbortController();
    pre.abort();
    expect(await runLoop(world, { signal: pre.signal })).toMatchObject({ ticks: 0, reason: 'aborted' });
  });

  it('World.close() between ticks, or in a step, ends the loop with reason closed; during a tick it is refused', async () => {
    const world = makeWorld();
    let steps = 0;
    const handle = run(world, { step: () => void steps++ });
    await sleep(120);
    // Between ticks here or the tick is running: either close() works, or it is refused and works once the tick is done.
    for (;;) {
      try {
        world.close();
        break;
      } catch (e) {
        expect((e as { code?: string }).code).toBe('ERR_SIGHTLINE_TICK_IN_PROGRESS');
        await sleep(1);
      }
    }
    const stepsAtClose = steps;
    const summary = await handle.done;
    expect(summary.reason).toBe('closed');
    expect(steps - stepsAtClose).toBeLessThanOrEqual(1); // a step already started may finish; no tick runs after
    const other = makeWorld();
    const closedInStep = await runLoop(other, { step: (n, w) => void (n === 2 && w.close()) });
    expect(closedInStep).toMatchObject({ ticks: 2, reason: 'closed' });
  });

  it('the first reason to end wins: a stop or abort after a close, before the next tick would start, is the reason', async () => {
    // onTick closes the world and stops the loop in the same turn: the loop sees the stop first.
    const stopped = makeWorld();
    const h1 = run(stopped, {
      onTick: (_r, info) => {
        if (info.tick === 1) {
          stopped.close();
          void h1.stop();
        }
      },
    });
    expect(await h1.done).toMatchObject({ ticks: 2, reason: 'stopped' });
    const aborted = makeWorld();
    const ac = new AbortController();
    const h2 = run(aborted, {
      signal: ac.signal,
      onTick: (_r, info) => {
        if (info.tick === 1) {
          aborted.close();
          ac.abort();
        }
      },
    });
    expect(await h2.done).toMatchObject({ ticks: 2, reason: 'aborted' });
    // A close alone is seen when the next tick would start.
    const closed = makeWorld();
    expect(await runLoop(closed, { onTick: (_r, info) => void (info.tick === 1 && closed.close()) })).toMatchObject({ ticks: 2, reason: 'closed' });
  });

  it('refuses a second loop on a world while one runs, and takes one once it has ended', async () => {
    const world = makeWorld();
    const first = world.run({ ticks: 3 });
    expect(() => world.run({ ticks: 1 })).toThrowError(expect.objectContaining({ code: 'ERR_SIGHTLINE_LOOP_RUNNING' }));
    expect(() => run(world)).toThrowError(expect.objectContaining({ code: 'ERR_SIGHTLINE_LOOP_RUNNING' }));
    expect((await first.done).ticks).toBe(3);
    // Ended: a new loop may start; another world is never blocked by this one's loop.
    const second = world.run({ ticks: 1 });
    const other = makeWorld().run({ ticks: 1 });
    expect((await second.done).ticks).toBe(1);
    expect((await other.done).ticks).toBe(1);
    // A loop that ended by throwing frees the world too.
    const failing = world.run({ step: () => { throw new Error('step failed'); } });
    await expect(failing.done).rejects.toThrow('step failed');
    const third = world.run({ ticks: 1 });
    expect((await third.done).ticks).toBe(1);
  });

  it('stop() awaited inside the loop\'s own onTick or async step resolves at once; the loop then ends', async () => {
    const world = makeWorld();
    const fromTick = run(world, {
      onTick: async (_r, info) => {
        if (info.tick === 1) await fromTick.stop();
      },
    });
    expect(await fromTick.done).toMatchObject({ ticks: 2, reason: 'stopped' });
    const fromStep = run(world, {
      step: async (n) => {
        await sleep(1);
        if (n === 2) await fromStep.stop();
      },
    });
    expect(await fromStep.done).toMatchObject({ ticks: 3, reason: 'stopped' });
    // From outside the loop, stop() still waits for the end.
    const outside = run(world);
    await sleep(60);
    let ended = false;
    void outside.done.then(() => (ended = true));
    await outside.stop();
    expect(ended).toBe(true);
  });

  it('rejects bad options with ERR_SIGHTLINE_INVALID_LOOP_OPTION', () => {
    const world = makeWorld();
    const code = expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_LOOP_OPTION' });
    const bad: unknown[] = [
      { overrun: 'skip' },
      { ticks: -1 },
      { ticks: 1.5 },
      { step: 'move' },
      { onTick: 1 },
      { lateToleranceMs: -1 },
      { lateToleranceMs: null },
      { signal: {} },
    ];
    for (const options of bad) expect(() => run(world, options as LoopOptions)).toThrow(code);
    expect(() => run({} as World)).toThrow(code);
    expect(() => run({ tick() {} } as never)).toThrow(code); // a tick method alone is not a World
    // Only own keys are read: an inherited option is refused rather than half read.
    expect(() => run(world, Object.create({ ticks: 2, step: 5 }) as LoopOptions)).toThrow(
      expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT', message: expect.stringContaining('inherited') }),
    );
    // A misspelt option is refused, not ignored (a `tick` for `ticks` would run forever).
    expect(() => run(world, { tick: 3 } as LoopOptions)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
  });
});
