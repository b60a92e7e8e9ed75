// The tick governor: an AIMD controller over an EWMA of the tick's wall time against the tick
// period, whose load factor picks a level of load shedding. Pure: the same tick times give the
// same decisions, so a replay that feeds them again reproduces them.
import { SightlineError, describe, readOptions } from './errors.js';
import type { EntityId } from './world-types.js';

/** Options of the governor (`run(world, { governor })`). */
export interface GovernorOptions {
  /** EWMA above this share of the period: the load factor × `decrease`. Default 0.90. */
  high?: number;
  /** EWMA below this share of the period: the load factor + `increase`. Default 0.60. Between the two, a dead band. */
  low?: number;
  /** Multiplicative decrease, (0, 1). Default 0.7. */
  decrease?: number;
  /** Additive increase, (0, 1]. Default 0.125. */
  increase?: number;
  /** Lowest load factor, (0, 1). Default 0.15 (the deepest level). */
  floor?: number;
  /** Weight of the newest tick in the EWMA, (0, 1]. Default 0.2 (reacts in about 10 ticks). */
  smoothing?: number;
  /** Ticks between classifications (and the fewest between two level changes). Default 5. */
  evalTicks?: number;
  /** Ticks since the last level change before the load factor may rise again. Default 2 s of ticks (40 at 20 Hz). */
  recoverTicks?: number;
  /**
   * A backlog, in periods: a tick that starts more than this many periods past its deadline finds
   * the loop behind its schedule (under `'stretch'` the late ticks then run back to back until it
   * has caught up). The time lost between ticks (garbage collection, timers, other work of the
   * event loop) is not in the tick's wall time, so a governor that sees only the EWMA can hold in
   * the dead band while the backlog lasts. While the loop is this far behind the load factor never
   * rises, and an evaluation sheds as if the EWMA were above `high` when the backlog is falling
   * behind: when, at the rate it drained over the last ticks (an EWMA of each tick's lateness
   * less the next one's, weight `smoothing`), it would not be gone within `recoverTicks` ticks.
   * A backlog that drains fast (one stall, then cheap ticks) is held through, not shed for. A number ≥ 0 or
   * `Infinity` (the backlog ignored). Default 1 on the real clock; `Infinity` when `clock` is
   * injected (lateness is measured on the real clock, so it would make an injected-clock replay
   * depend on the machine), unless given.
   */
  backlogTicks?: number;
  /**
   * The viewers the game ranks low: the first lever lengthens their send periods. Called for each
   * viewer when that lever engages. Default: none marked, and the lever takes the half of the
   * viewers with the fewest update records in the last tick's packets (those farthest from
   * activity; ties: lower id first).
   */
  lowPriority?: (viewer: EntityId) => boolean;
  /** The clock the tick time is measured with, ms. Default performance.now. A test may inject one. */
  clock?: () => number;
}

/**
 * The levels of load shedding, in order of what they cost players; each adds to the one before:
 *
 * 0. nothing.
 * 1. the low-priority viewers (marked, else the least active half) at twice their send period;
 * 2. walk and ghost caps halved (fewer candidates and ghosts per viewer);
 * 3. packets at 3/4 of their size (the event reserve and acknowledgements untouched);
 * 4. view radius at 3/4;
 * 5. every viewer at twice its send period (the low-priority ones at 4 times).
 *
 * Level of a load factor L: 0 for L ≥ 0.95, 1 for L ≥ 0.65, 2 for L ≥ 0.45, 3 for L ≥ 0.30, 4 for
 * L ≥ 0.22, else 5. From 1, each decrease (× 0.7) sheds about one level.
 */
export const GOVERNOR_LEVELS: readonly string[] = Object.freeze([
  'nothing shed',
  'low-priority viewers at twice their send period',
  '+ walk and ghost caps halved',
  '+ packets at 3/4 of their size',
  '+ view radius at 3/4',
  '+ every viewer at twice its send period (low-priority at 4 times)',
]);

const LEVEL_FLOORS = [0.95, 0.65, 0.45, 0.3, 0.22];

/** The level of a load factor (see {@link GOVERNOR_LEVELS}). */
export function levelOf(loadFactor: number): number {
  let level = 0;
  while (level < LEVEL_FLOORS.length && loadFactor < LEVEL_FLOORS[level]) level++;
  return level;
}

/** The governor's state after a tick: in each loop report and the Prometheus registry. */
export interface GovernorState {
  /** Whether the governor runs (false: `governor: false`; the other fields then stay at rest). */
  readonly enabled: boolean;
  /** ∈ [floor, 1]: 1 is no shedding. */
  readonly loadFactor: number;
  /** The shedding level in force for the next tick (see {@link GOVERNOR_LEVELS}). */
  readonly level: number;
  /** EWMA of the tick's wall time (step, pass and onTick), ms. */
  readonly ewmaMs: number;
  /** The tick period, ms. */
  readonly periodMs: number;
  /** Level changes so far. */
  readonly changes: number;
  /**
   * Ticks a level must hold before the load factor may rise: `recoverTicks`, doubled (to 8 ×) by
   * each rise that failed (a shed within 2 × recoverTicks of it), halved (back to recoverTicks)
   * by each rise that held that long. 0 while off.
   */
  readonly recoverWaitTicks: number;
}

/** Options read, defaults filled in. */
export type GovernorSettings = Required<Omit<GovernorOptions, 'lowPriority'>> & Pick<GovernorOptions, 'lowPriority'>;

const OPTIONS = ['high', 'low', 'decrease', 'increase', 'floor', 'smoothing', 'evalTicks', 'recoverTicks', 'backlogTicks', 'lowPriority', 'clock'] as const;

function invalid(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_LOOP_OPTION', message);
}

/**
 * Reads `governor` of LoopOptions: true or left out (on, the defaults), false (off: null), or
 * {@link GovernorOptions}. `tickHz` sets the default recoverTicks.
 * @throws ERR_SIGHTLINE_INVALID_LOOP_OPTION for a field out of range; ERR_SIGHTLINE_UNKNOWN_OPTION.
 */
export function readGovernor(value: unknown, tickHz: number): GovernorSettings | null {
  if (value === false) return null;
  const o = (value === undefined || value === true ? {} : readOptions('governor', value as object, OPTIONS)) as GovernorOptions;
  const frac = (name: string, v: unknown, lo: number, hi: number, hiOpen: boolean): number => {
    if (typeof v !== 'number' || !(v > lo) || !(hiOpen ? v < hi : v <= hi)) {
      invalid(`governor.${name} must be a number above ${lo} and ${hiOpen ? 'below' : 'at most'} ${hi}, received ${describe(v)}`);
    }
    return v;
  };
  const int = (name: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 100_000) invalid(`governor.${name} must be an integer from 1 to 100000 (ticks), received ${describe(v)}`);
    return v;
  };
  const s: GovernorSettings = {
    high: frac('high', o.high ?? 0.9, 0, 10, false),
    low: frac('low', o.low ?? 0.6, 0, 10, false),
    decrease: frac('decrease', o.decrease ?? 0.7, 0, 1, true),
    increase: frac('increase', o.increase ?? 0.125, 0, 1, false),
    floor: frac('floor', o.floor ?? 0.15, 0, 1, true),
    smoothing: frac('smoothing', o.smoothing ?? 0.2, 0, 1, false),
    evalTicks: int('evalTicks', o.evalTicks ?? 5),
    recoverTicks: int('recoverTicks', o.recoverTicks ?? Math.max(1, Math.round(2 * tickHz))),
    backlogTicks: o.backlogTicks ?? (o.clock === undefined ? 1 : Infinity),
    lowPriority: o.lowPriority,
    clock: o.clock ?? (() => performance.now()),
  };
  if (typeof s.backlogTicks !== 'number' || Number.isNaN(s.backlogTicks) || s.backlogTicks < 0) {
    invalid(`governor.backlogTicks must be a number ≥ 0 (periods) or Infinity, received ${describe(s.backlogTicks)}`);
  }
  if (s.low >= s.high) invalid(`governor.low (${s.low}) must be below governor.high (${s.high})`);
  if (s.lowPriority !== undefined && typeof s.lowPriority !== 'function') invalid(`governor.lowPriority must be a function, received ${describe(s.lowPriority)}`);
  if (typeof s.clock !== 'function') invalid(`governor.clock must be a function, received ${describe(s.clock)}`);
  return s;
}

/**
 * The controller: {@link observe} each tick's wall time; every `evalTicks` ticks it classifies the
 * EWMA against the period: above `high` × period the load factor falls (× decrease, to `floor`),
 * below `low` × period it rises (+ increase, to 1) once `recoverWaitTicks` have passed since the
 * last level change (recoverTicks, doubled by each rise that a shed undid within 2 × recoverTicks,
 * up to 8 ×, and halved by each rise that held), between the two it holds. While its ticks start more than `backlogTicks` periods
 * late (the loop behind its schedule) it never rises, and sheds as above `high` when that backlog
 * would not drain within `recoverTicks` at its recent rate. Two level changes are at least `evalTicks` apart, and
 * a rise at least `recoverTicks` after the change before it, so the level changes at most
 * 60 × tickHz / evalTicks times a minute while shedding and far fewer while oscillating.
 */
export class TickGovernor {
  readonly settings: GovernorSettings;
  readonly periodMs: number;
  #ewma = -1;
  #load = 1;
  #level = 0;
  #ticks = 0;
  #sinceChange = Infinity;
  #changes = 0;
  #lateness = 0; // the last tick's, ms
  #drain: number | null = null; // EWMA of the backlog given back a tick while behind, ms (null: not behind)
  #wait: number; // ticks a level holds before a rise (recoverWaitTicks)
  #sinceRise = Infinity; // ticks since a level rise still on trial (Infinity: none)

  constructor(settings: GovernorSettings, periodMs: number) {
    this.settings = settings;
    this.periodMs = periodMs;
    this.#wait = settings.recoverTicks;
  }

  /**
   * Feeds one tick's wall time and how late it started (`latenessMs`, past its deadline; 0 when
   * on time), both ms; returns whether the level changed (it applies from the next tick).
   */
  observe(tickMs: number, latenessMs = 0): boolean {
    const s = this.settings;
    this.#ewma = this.#ewma < 0 ? tickMs : this.#ewma + s.smoothing * (tickMs - this.#ewma);
    // While behind (under 'stretch' the ticks then run back to back), the lateness of one tick
    // less the next is what that tick gave back of the backlog: the period less its cycle.
    const limit = s.backlogTicks * this.periodMs;
    const behind = latenessMs > limit;
    if (behind && this.#lateness > limit) {
      const d = this.#lateness - latenessMs;
      this.#drain = this.#drain === null ? d : this.#drain + s.smoothing * (d - this.#drain);
    } else if (!behind) this.#drain = null;
    this.#lateness = latenessMs;
    this.#ticks++;
    this.#sinceChange++;
    // A rise that held 2 × recoverTicks without a shed: the wait before the next one halves.
    if (this.#sinceRise !== Infinity && ++this.#sinceRise >= 2 * s.recoverTicks) {
      this.#wait = Math.max(s.recoverTicks, this.#wait / 2);
      this.#sinceRise = Infinity;
    }
    if (this.#ticks % s.evalTicks !== 0) return false;
    let load = this.#load;
    // Falling behind: the backlog would not be gone within recoverTicks at the rate it drains.
    const falling = behind && this.#drain !== null && this.#drain * s.recoverTicks < latenessMs;
    if (falling || this.#ewma > s.high * this.periodMs) load = Math.max(s.floor, load * s.decrease);
    else if (!behind && this.#ewma < s.low * this.periodMs && this.#sinceChange >= this.#wait) load = Math.min(1, load + s.increase);
    this.#load = load;
    const level = levelOf(load);
    if (level === this.#level) return false;
    if (level < this.#level) this.#sinceRise = 0;
    else if (this.#sinceRise !== Infinity) {
      // The rise before failed (the level it left was needed after all): wait twice as long
      // before the next (the doubling penalty of Fiedler's good/bad mode switch).
      this.#wait = Math.min(8 * s.recoverTicks, 2 * this.#wait);
      this.#sinceRise = Infinity;
    }
    this.#level = level;
    this.#sinceChange = 0;
    this.#changes++;
    return true;
  }

  get state(): GovernorState {
    return {
      enabled: true,
      loadFactor: this.#load,
      level: this.#level,
      ewmaMs: Math.max(0, this.#ewma),
      periodMs: this.periodMs,
      changes: this.#changes,
      recoverWaitTicks: this.#wait,
    };
  }
}
