// The optional fixed-rate clock: runs a World's ticks on absolute deadlines (tick n is due at
// epoch + n × period, period = 1000 / tickHz ms, measured with performance.now()), calling the
// game's step before each tick and a callback after it.
import { AsyncLocalStorage } from 'node:async_hooks';
import { WorldConfig } from './config.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { GovernorLevers, type GovernorShed } from './governor-levers.js';
import { TickGovernor, readGovernor, type GovernorOptions, type GovernorState } from './governor.js';
import type { TickResult, World } from './world.js';

/**
 * What the loop does when a tick starts past its deadline.
 *
 * - `'stretch'`: run the late tick at once; later deadlines keep their absolute schedule, so the
 *   loop catches up by running ticks back to back. Lateness is reported.
 * - `'drop'`: skip every deadline already missed (by more than `lateToleranceMs`) and wait for the
 *   next one; the skipped ticks are counted as dropped and their indices never run.
 */
export type OverrunPolicy = 'stretch' | 'drop';

/** Valid {@link OverrunPolicy} values. */
export const OVERRUN_POLICIES: readonly OverrunPolicy[] = Object.freeze(['stretch', 'drop'] as const);

/** Timing of one tick the loop ran, handed to `onTick`. Times in milliseconds. */
export interface LoopReport {
  /** Tick index n: the tick was due at epoch + n × period. 0 for the first tick. */
  readonly tick: number;
  /** Time from the `world.tick()` call until it resolved, ms. */
  readonly passMs: number;
  /** Time `step` took (until its promise settled, when it returned one), ms. */
  readonly stepMs: number;
  /** How far past its deadline the tick started, ms (0 when on time). */
  readonly lateness: number;
  /** Whether `lateness` exceeded `lateToleranceMs`. */
  readonly late: boolean;
  /** Ticks dropped so far (`'drop'` policy; always 0 under `'stretch'`). */
  readonly dropped: number;
  /**
   * The tick governor as this tick ran (`enabled` false when off): load factor, level in force,
   * EWMA of the tick time, level changes so far.
   */
  readonly governor: GovernorState;
}

/** Options of {@link run}. */
export interface LoopOptions {
  /**
   * The game's update, called before each tick with the tick index n and the world: move entities
   * by writing `world.positions`, spawn, despawn. May return a promise, which the loop awaits.
   * A throw (or rejection) ends the loop and rejects `done` with that error.
   */
  step?: (tick: number, world: World) => void | Promise<void>;
  /**
   * Called after each tick with its result and timing; send the packets here. May return a
   * promise, which the loop awaits. A throw (or rejection) ends the loop and rejects `done`.
   */
  onTick?: (result: TickResult, report: LoopReport) => void | Promise<void>;
  /** Overrun policy. Default `'stretch'`. */
  overrun?: OverrunPolicy;
  /**
   * Deadlines to serve: the loop ends once tick index `ticks - 1` has run (or, under `'drop'`,
   * been dropped). Under `'stretch'` that is exactly `ticks` ticks. Default: run until stopped.
   */
  ticks?: number;
  /** Aborting it ends the loop like {@link LoopHandle.stop}. */
  signal?: AbortSignal;
  /**
   * A tick that starts more than this many ms past its deadline is late (counted, and dropped
   * under `'drop'`). Default: a tenth of the period (5 ms at 20 Hz), above timer jitter.
   */
  lateToleranceMs?: number;
  /**
   * The tick governor (lib/governor.ts): on by default (`true` or left out), off with `false`, or
   * {@link GovernorOptions}. It keeps an EWMA of each tick's wall time (step, pass and onTick)
   * against the period (from the loop's second tick: the first pays one-off costs, as a new
   * world's first pass filling every viewer's ghost table) and sheds load in levels
   * ({@link GOVERNOR_LEVELS}) before ticks are late:
   * longer send periods for low-priority viewers, smaller walk and ghost caps, smaller packets, a
   * smaller view radius, every viewer's send period. Its decisions take effect before a tick's
   * step, as inputs of that tick; a world never overloaded is never touched.
   */
  governor?: boolean | GovernorOptions;
}

/**
 * Why a loop ended: `ticks` ran (`'completed'`), {@link LoopHandle.stop} (`'stopped'`), the
 * signal (`'aborted'`), or {@link World.close} between ticks or in a step (`'closed'`).
 * The first one wins. `stop()` and an abort are recorded when they happen; a close is seen when
 * the next tick would start (or right after the step that closed), so a stop or abort that comes
 * between a close and that moment is the reason given.
 */
export type LoopEndReason = 'completed' | 'stopped' | 'aborted' | 'closed';

/** Totals of a loop that ended normally. */
export interface LoopSummary {
  /** Ticks run. */
  readonly ticks: number;
  /** Deadlines skipped under `'drop'`. */
  readonly dropped: number;
  /** Ticks that started more than `lateToleranceMs` past their deadline. */
  readonly late: number;
  /** Time from the first deadline until the loop ended, ms. */
  readonly elapsedMs: number;
  /** The tick period, ms: 1000 / config.tickHz. */
  readonly periodMs: number;
  /** Why the loop ended (see {@link LoopEndReason}). */
  readonly reason: LoopEndReason;
  /**
   * What the tick governor did: whether it ran, the ticks run at each level (index = level), its
   * level changes, the lowest load factor, and what was shed when the loop ended (null when off;
   * its caps are the world's then). The loop gives back what it shed as it ends: the world's
   * viewers and caps are the game's own again.
   */
  readonly governor: {
    readonly enabled: boolean;
    readonly ticksAtLevel: readonly number[];
    readonly changes: number;
    readonly minLoadFactor: number;
    readonly final: GovernorShed | null;
  };
}

/** A running loop. */
export interface LoopHandle {
  /**
   * Ends the loop after the current tick (and its `onTick`), or at once when it is waiting for a
   * deadline. Resolves once the loop has ended, whether `done` resolved or rejected; called from
   * the loop's own `step` or `onTick` (or anything they await), it resolves at once, since the
   * loop cannot end before that callback returns.
   */
  stop(): Promise<void>;
  /**
   * Resolves with the totals when the loop ends; rejects with the error of a throwing step or
   * onTick, of `world.tick()`, of a throwing `governor.lowPriority`, or
   * ERR_SIGHTLINE_INVALID_LOOP_OPTION when `governor.clock` returns something other than a finite
   * number.
   */
  readonly done: Promise<LoopSummary>;
}

// The last stretch of a wait is spent on setImmediate turns, the rest on one setTimeout.
const SPIN_MS = 1;

function invalid(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_LOOP_OPTION', message);
}

// An injected governor clock's reading, checked: a NaN would make the EWMA NaN and the governor
// silently never shed.
function clockMs(clock: () => number): number {
  const t = clock();
  if (typeof t !== 'number' || !Number.isFinite(t)) invalid(`governor.clock must return a finite number of ms, returned ${describe(t)}`);
  return t;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

interface Waker {
  wake: (() => void) | undefined;
}

// Resolves once performance.now() >= deadline, or when waker.wake() is called.
function sleepUntil(deadline: number, waker: Waker): Promise<void> {
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let immediate: ReturnType<typeof setImmediate> | undefined;
    const finish = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      if (immediate !== undefined) clearImmediate(immediate);
      timer = immediate = undefined;
      waker.wake = undefined;
      resolve();
    };
    const check = (): void => {
      timer = immediate = undefined;
      const remaining = deadline - performance.now();
      if (remaining <= 0) finish();
      else if (remaining > SPIN_MS + 1) timer = setTimeout(check, Math.floor(remaining - SPIN_MS));
      else immediate = setImmediate(check);
    };
    waker.wake = finish;
    check();
  });
}

const LOOP_OPTIONS = ['step', 'onTick', 'overrun', 'ticks', 'signal', 'lateToleranceMs', 'governor'] as const;

// The state a loop without a governor reports.
function restingGovernor(periodMs: number): GovernorState {
  return { enabled: false, loadFactor: 1, level: 0, ewmaMs: 0, periodMs, changes: 0, recoverWaitTicks: 0 };
}

// Worlds with a loop running: a second run() on one of them is refused.
// The loop whose step or onTick is running (through anything they await): see LoopHandle.stop.
const insideLoop = new AsyncLocalStorage<LoopHandle>();

const running = new WeakSet<World>();

/**
 * Runs `world`'s ticks at config.tickHz (20 Hz by default) on absolute deadlines: tick n is
 * due at epoch + n × period, so timing errors never accumulate. Each tick: `step(n, world)`, then
 * `await world.tick()`, then `onTick(result, report)`. Between ticks the loop waits on one
 * setTimeout and, for the last millisecond, setImmediate turns, so the event loop stays free.
 *
 * The first tick runs on the next turn of the microtask queue (after `run` returns). When the loop
 * ends (stop, abort, ticks reached, or an error) no tick is in progress: the world stays usable.
 *
 * ```ts
 * const loop = run(world, { step: (n) => game.update(n), onTick: (r) => send(r.packets) });
 * process.once('SIGINT', () => void loop.stop());
 * const summary = await loop.done;
 * ```
 *
 * @throws ERR_SIGHTLINE_INVALID_LOOP_OPTION (synchronously) for a world without `tick()`, a
 *   `step` or `onTick` that is not a function, an unknown `overrun`, a `ticks` that is not a
 *   non-negative integer, a negative or non-finite `lateToleranceMs`, or a `signal` that is not an
 *   AbortSignal; ERR_SIGHTLINE_UNKNOWN_OPTION for a key that is none of these options;
 *   ERR_SIGHTLINE_LOOP_RUNNING while another loop runs on the same world;
 *   ERR_SIGHTLINE_TICK_IN_PROGRESS while a `world.tick()` of the caller's own is pending.
 */
export function run(world: World, options: LoopOptions = {}): LoopHandle {
  if (typeof world !== 'object' || world === null || typeof (world as { tick?: unknown }).tick !== 'function' || !WorldConfig.isBuilt(world.config)) {
    invalid(`world must be a World, received ${describe(world)}`);
  }
  const o = readOptions('loop', options, LOOP_OPTIONS) as LoopOptions;
  const { step, onTick, overrun = 'stretch', ticks, signal } = o;
  if (step !== undefined && typeof step !== 'function') invalid(`step must be a function, received ${describe(step)}`);
  if (onTick !== undefined && typeof onTick !== 'function') invalid(`onTick must be a function, received ${describe(onTick)}`);
  if (!OVERRUN_POLICIES.includes(overrun)) {
    invalid(`overrun must be one of ${OVERRUN_POLICIES.join(', ')}, received ${describe(overrun)}`);
  }
  if (ticks !== undefined && (typeof ticks !== 'number' || !Number.isInteger(ticks) || ticks < 0)) {
    invalid(`ticks must be a non-negative integer, received ${describe(ticks)}`);
  }
  const tickHz = world.config.tickHz;
  const period = 1000 / tickHz;
  const lateToleranceMs = o.lateToleranceMs === undefined ? period / 10 : o.lateToleranceMs;
  if (typeof lateToleranceMs !== 'number' || !Number.isFinite(lateToleranceMs) || lateToleranceMs < 0) {
    invalid(`lateToleranceMs must be a finite number ≥ 0, received ${describe(lateToleranceMs)}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) invalid(`signal must be an AbortSignal, received ${describe(signal)}`);
  const governorSettings = readGovernor(o.governor, tickHz);
  if (running.has(world)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_LOOP_RUNNING',
      'a run() loop is already running on this world: stop() it (or let it end) before starting another',
    );
  }
  // A tick() of the caller's own still pending would make the loop's first tick fail: refused now.
  if (world.tickPending) {
    throw new SightlineError(
      'ERR_SIGHTLINE_TICK_IN_PROGRESS',
      'run() cannot start while a tick() of yours is pending: await it first (while the loop runs, it owns the ticks)',
    );
  }
  const limit = ticks ?? Infinity;
  const tolerance = lateToleranceMs;

  const waker: Waker = { wake: undefined };
  let reason: LoopEndReason | undefined;
  const requestEnd = (why: LoopEndReason): void => {
    if (reason === undefined) reason = why;
    waker.wake?.();
  };
  const onAbort = (): void => requestEnd('aborted');
  if (signal) {
    if (signal.aborted) reason = 'aborted';
    else signal.addEventListener('abort', onAbort, { once: true });
  }

  const loop = async (): Promise<LoopSummary> => {
    await undefined;
    const epoch = performance.now();
    let n = 0;
    let ran = 0;
    let dropped = 0;
    let late = 0;
    // The governor: its controller, its levers on the world, and what it did.
    const governor = governorSettings === null ? null : new TickGovernor(governorSettings, period);
    const levers = governorSettings === null ? null : new GovernorLevers(world, governorSettings);
    const clock = governorSettings?.clock;
    const ticksAtLevel: number[] = [];
    let minLoad = 1;
    let levelDue = false; // a level change waits to be applied before the next step
    let last: TickResult | undefined;
    let finalShed: GovernorShed | undefined;
    let restoreError: unknown;
    try {
      while (reason === undefined && n < limit) {
        const deadline = epoch + n * period;
        if (performance.now() < deadline) {
          await sleepUntil(deadline, waker);
          if (reason !== undefined) break;
        }
        const start = performance.now();
        const lateness = start > deadline ? start - deadline : 0;
        if (overrun === 'drop' && lateness > tolerance) {
          // First index whose deadline, plus the tolerance, is not yet past.
          const next = Math.max(n + 1, Math.ceil((start - tolerance - epoch) / period));
          dropped += Math.min(next, limit) - n;
          n = next;
          continue;
        }
        const isLate = lateness > tolerance;
        // World.close() between ticks (it refuses to run during one) ends the loop here.
        if (world.closed) {
          reason = 'closed';
          break;
        }
        // The governor's decision, as an input of this tick.
        if (levelDue && levers && governor) {
          levers.apply(governor.state.level, last);
          levelDue = false;
        }
        const began = clock ? clockMs(clock) : 0;
        if (step) {
          const r = insideLoop.run(handle, step, n, world);
          if (isThenable(r)) await r;
        }
        const stepped = performance.now();
        if (world.closed) {
          reason = 'closed'; // closed by the step
          break;
        }
        const result = await world.tick();
        const ticked = performance.now();
        ran++;
        if (isLate) late++;
        const state = governor ? governor.state : restingGovernor(period);
        ticksAtLevel[state.level] = (ticksAtLevel[state.level] ?? 0) + 1;
        if (onTick) {
          const report: LoopReport = {
            tick: n,
            passMs: ticked - stepped,
            stepMs: stepped - start,
            lateness,
            late: isLate,
            dropped,
            governor: state,
          };
          const r = insideLoop.run(handle, onTick, result, report);
          if (isThenable(r)) await r;
        }
        // From the loop's second tick: the first pays one-off costs (a new world's first pass fills
        // every viewer's ghost table, the game's code runs cold) that say nothing of the load.
        if (governor && clock && ran > 1) {
          if (governor.observe(clockMs(clock) - began, lateness)) levelDue = true;
          minLoad = Math.min(minLoad, governor.state.loadFactor);
        }
        last = result;
        n++;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      running.delete(world);
      // What the governor shed goes back when its loop ends (a later loop, or the game's own
      // ticks, start from the game's settings); the summary keeps what was in force at the end.
      if (levers !== null && !world.closed && levers.shed.level !== 0) {
        finalShed = { ...levers.shed, ...world.caps };
        try {
          levers.apply(0, undefined);
        } catch (e) {
          restoreError = e;
        }
      }
    }
    if (restoreError !== undefined) throw restoreError;
    return {
      ticks: ran,
      dropped,
      late,
      elapsedMs: performance.now() - epoch,
      periodMs: period,
      reason: reason ?? 'completed',
      governor: {
        enabled: governor !== null,
        ticksAtLevel: Array.from({ length: ticksAtLevel.length }, (_, i) => ticksAtLevel[i] ?? 0),
        changes: governor?.state.changes ?? 0,
        minLoadFactor: minLoad,
        final: finalShed ?? levers?.shed ?? null,
      },
    };
  };

  running.add(world);
  let ended: Promise<void> | undefined;
  const handle: LoopHandle = {
    done: undefined as unknown as Promise<LoopSummary>,
    stop(): Promise<void> {
      requestEnd('stopped');
      // From this loop's own step or onTick (or what they await), waiting for the end would wait
      // for that very callback: resolve at once (the loop ends when the callback returns).
      if (insideLoop.getStore() === handle) return Promise.resolve();
      ended ??= handle.done.then(
        () => undefined,
        () => undefined,
      );
      return ended;
    },
  };
  (handle as { done: Promise<LoopSummary> }).done = loop();
  return handle;
}

/** {@link run}, resolving with the summary when the loop ends: `run(world, options).done`. */
export function runLoop(world: World, options: LoopOptions = {}): Promise<LoopSummary> {
  return run(world, options).done;
}
