// Seeded, repeatable load games: spawn a herd of entities and viewers into a World and move them
// every tick by writing world.positions. The same seed gives the same positions on every run.
import { RAW_PER_METER, SightlineError, WorldConfig, describeValue as describe, mulberry32, readOptions, type ViewerOptions, type World } from 'sightline';

/**
 * A load scenario.
 *
 * - `uniform`: entities spread over the whole region, wandering (slowly turning heading, 1.5 m/s).
 * - `town-square`: every entity inside the grid cell at the region's center (the cell whose lower
 *   corner is the center; 128 m by default), wandering inside it; every entity is a viewer.
 * - `crowd-50k`: 60% of the entities (the crowd) wander inside the center cell, the rest wander
 *   over the whole region; viewers are chosen among the crowd.
 * - `trips`: bots pick a destination (80% within 24 m of one of 6 hubs, else anywhere), travel
 *   there in a straight line at 1.5–6 m/s, linger 5–30 s, and repeat: players gathering at hubs.
 *   Bots start part-way along their first leg (5% lingering at its end), near the steady state.
 * - `speed-mix`: uniform placement, wandering; 35% still, 25% at 0.2 m/s, 25% at 1.5 m/s, 10% at
 *   6 m/s, 5% at 30 m/s (exact shares, randomly assigned).
 */
export type HerdScenario = 'uniform' | 'town-square' | 'crowd-50k' | 'trips' | 'speed-mix';

/** Valid {@link HerdScenario} values. */
export const HERD_SCENARIOS: readonly HerdScenario[] = Object.freeze([
  'uniform',
  'town-square',
  'crowd-50k',
  'trips',
  'speed-mix',
] as const);

/** Default entity and viewer counts of a scenario. */
export interface HerdCounts {
  readonly entities: number;
  readonly viewers: number;
}

const DEFAULT_COUNTS: Readonly<Record<HerdScenario, HerdCounts>> = Object.freeze({
  uniform: { entities: 16_384, viewers: 4_096 },
  'town-square': { entities: 8_192, viewers: 8_192 },
  'crowd-50k': { entities: 50_000, viewers: 8_192 },
  trips: { entities: 16_384, viewers: 4_096 },
  'speed-mix': { entities: 16_384, viewers: 1_024 },
});

/**
 * Default entity and viewer counts of a scenario, and the viewer count for a given entity count:
 * town-square makes every entity a viewer; the others take the scenario's default viewer count,
 * at most the entity count.
 * @throws ERR_SIGHTLINE_INVALID_HERD_OPTION for an unknown scenario.
 */
export function herdDefaults(scenario: HerdScenario, entities?: number): HerdCounts {
  if (!HERD_SCENARIOS.includes(scenario)) {
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_HERD_OPTION',
      `scenario must be one of ${HERD_SCENARIOS.join(', ')}, received ${describe(scenario)}`,
    );
  }
  const d = DEFAULT_COUNTS[scenario];
  const e = entities ?? d.entities;
  return { entities: e, viewers: scenario === 'town-square' ? e : Math.min(d.viewers, e) };
}

/** Options of {@link createHerd}. */
export interface HerdOptions {
  /** Scenario. Default `'town-square'`. */
  scenario?: HerdScenario;
  /** Entities to spawn, ≥ 1. Default: the scenario's ({@link herdDefaults}). */
  entities?: number;
  /** Entities made viewers, 0 to `entities`. Default: the scenario's ({@link herdDefaults}). */
  viewers?: number;
  /** PRNG seed, an integer (taken modulo 2^32). Default 1. */
  seed?: number;
  /** Options for every viewer added (payload bytes, send period). */
  viewerOptions?: ViewerOptions;
}

/** A herd spawned into a world. */
export interface Herd {
  readonly scenario: HerdScenario;
  readonly seed: number;
  /** The herd's entity ids, in spawn order. */
  readonly ids: Uint32Array;
  /** Their slots (indices into `world.positions`), in spawn order. */
  readonly slots: Uint32Array;
  /** The viewers' avatar ids (a subset of `ids`). */
  readonly viewers: Uint32Array;
  /** Each entity's nominal speed, m/s, in spawn order (trips: the current leg's; 0 while lingering). */
  readonly speeds: Float64Array;
  /** Steps taken. */
  readonly steps: number;
  /**
   * Moves every entity by one tick, writing `world.positions` (raw units). No entity moves more than
   * config.maxMovePerTickRaw - 1 raw units per axis, and none leaves its area (the region, or the
   * center cell for crowds), reflecting at the edges. `tick` (a loop's tick index) is accepted so
   * that `step` can be handed to a loop as is; it is not used.
   */
  step(tick?: number): void;
}


function invalid(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_HERD_OPTION', message);
}

// Wandering: the heading turns by a turn rate (radians per tick) that decays by TURN_DAMPING and
// gains up to ±TURN_NOISE / 2 each tick. WANDER_SPEED in m/s.
const TURN_NOISE = 0.02;
const TURN_DAMPING = 0.95;
const WANDER_SPEED = 1.5;
// Trips: hub count, share of legs ending at a hub, spread around a hub (m), linger (s), share of
// bots lingering at the start, leg speed (m/s).
const TRIP_HUBS = 6;
const TRIP_HUB_SHARE = 0.8;
const TRIP_HUB_SPREAD_M = 24;
const TRIP_LINGER_S: readonly [number, number] = [5, 30];
const TRIP_START_LINGERING = 0.05;
const TRIP_SPEED: readonly [number, number] = [1.5, 6];
// Speed mix: [share, m/s].
const SPEED_MIX: readonly (readonly [number, number])[] = [
  [0.35, 0],
  [0.25, 0.2],
  [0.25, 1.5],
  [0.1, 6],
  [0.05, 30],
];

// Movement state, by entity index; positions in raw units (floats), speeds in raw units per tick.
interface Mover {
  readonly count: number;
  readonly px: Float64Array;
  readonly py: Float64Array;
  /** Unit heading. */
  readonly dx: Float64Array;
  readonly dy: Float64Array;
  /** Heading change per tick, radians. */
  readonly turn: Float64Array;
  readonly speed: Float64Array;
  /** 0: the whole region [lo0, hi0]; 1: the center cell [lo1, hi1]. */
  readonly area: Uint8Array;
  readonly slots: Uint32Array;
  readonly X: Int32Array;
  readonly Y: Int32Array;
  readonly lo0: number;
  readonly hi0: number;
  readonly lo1: number;
  readonly hi1: number;
  readonly rand: () => number;
}

// Reflects entity i back inside its area, turning its heading.
function reflect(m: Mover, i: number): void {
  const inCell = m.area[i] !== 0;
  const lo = inCell ? m.lo1 : m.lo0;
  const hi = inCell ? m.hi1 : m.hi0;
  const { px, py, dx, dy } = m;
  const x = px[i];
  const y = py[i];
  if (x < lo) {
    px[i] = 2 * lo - x;
    dx[i] = -dx[i];
  } else if (x > hi) {
    px[i] = 2 * hi - x;
    dx[i] = -dx[i];
  }
  if (y < lo) {
    py[i] = 2 * lo - y;
    dy[i] = -dy[i];
  } else if (y > hi) {
    py[i] = 2 * hi - y;
    dy[i] = -dy[i];
  }
}

// One tick of wandering: the turn rate drifts, the heading turns, the entity moves and reflects.
function wanderAll(m: Mover): void {
  const { count, px, py, dx, dy, turn, speed, area, slots, X, Y, lo0, hi0, lo1, hi1, rand } = m;
  for (let i = 0; i < count; i++) {
    const s = speed[i];
    if (s === 0) continue;
    const t = turn[i] * TURN_DAMPING + (rand() - 0.5) * TURN_NOISE;
    turn[i] = t;
    // Rotate the heading by t (small angle), then renormalize.
    const hx = dx[i] - t * dy[i];
    const hy = dy[i] + t * dx[i];
    const norm = 1 / Math.sqrt(hx * hx + hy * hy);
    dx[i] = hx * norm;
    dy[i] = hy * norm;
    const x = px[i] + dx[i] * s;
    const y = py[i] + dy[i] * s;
    px[i] = x;
    py[i] = y;
    const inCell = area[i] !== 0;
    const lo = inCell ? lo1 : lo0;
    const hi = inCell ? hi1 : hi0;
    if (x < lo || x > hi || y < lo || y > hi) reflect(m, i);
    const slot = slots[i];
    X[slot] = Math.round(px[i]);
    Y[slot] = Math.round(py[i]);
  }
}

const HERD_OPTIONS = ['scenario', 'entities', 'viewers', 'seed', 'viewerOptions'] as const;

/**
 * Spawns a herd into `world` and makes some of its entities viewers. Positions are raw fixed point
 * (1 m = 1024 raw); z is 0. Call `herd.step()` once per tick (or hand it to a loop as `step`).
 *
 * @throws ERR_SIGHTLINE_INVALID_HERD_OPTION for an unknown scenario, `entities` not an integer
 *   ≥ 1, `viewers` not an integer from 0 to `entities`, a non-integer `seed`, a world with fewer
 *   than `entities` free slots, or a region smaller than one cell around its center.
 * @throws ERR_SIGHTLINE_UNKNOWN_OPTION for an option not listed in {@link HerdOptions}.
 * @throws the World's errors for `viewerOptions` it refuses (ERR_SIGHTLINE_INVALID_VIEWER_OPTION);
 *   the herd is then undone (its viewers removed, its entities despawned).
 */
export function createHerd(world: World, herdOptions: HerdOptions = {}): Herd {
  if (typeof world !== 'object' || world === null || !WorldConfig.isBuilt(world.config)) invalid(`world must be a World, received ${describe(world)}`);
  const options = readOptions('createHerd', herdOptions, HERD_OPTIONS) as HerdOptions;
  const scenario = options.scenario ?? 'town-square';
  if (!HERD_SCENARIOS.includes(scenario)) invalid(`scenario must be one of ${HERD_SCENARIOS.join(', ')}, received ${describe(scenario)}`);
  const entitiesIn = options.entities;
  if (entitiesIn !== undefined && (typeof entitiesIn !== 'number' || !Number.isInteger(entitiesIn) || entitiesIn < 1)) {
    invalid(`entities must be an integer ≥ 1, received ${describe(entitiesIn)}`);
  }
  const defaults = herdDefaults(scenario, entitiesIn);
  const count = defaults.entities;
  const viewerCount = options.viewers ?? defaults.viewers;
  if (typeof viewerCount !== 'number' || !Number.isInteger(viewerCount) || viewerCount < 0 || viewerCount > count) {
    invalid(`viewers must be an integer from 0 to entities (${count}), received ${describe(viewerCount)}`);
  }
  const seed = options.seed ?? 1;
  if (typeof seed !== 'number' || !Number.isInteger(seed)) invalid(`seed must be an integer, received ${describe(seed)}`);
  const free = world.capacity - world.liveCount;
  if (free < count) invalid(`the world has ${free} free entity slots (capacity ${world.capacity}), fewer than the ${count} entities asked for`);

  const cfg = world.config;
  const region = cfg.regionRaw;
  const tickHz = cfg.input.tickHz;
  // Largest step length, raw: the rounded move per axis then stays within maxMovePerTickRaw - 1.
  const maxStep = Math.max(0, cfg.maxMovePerTickRaw - 2);
  const perTick = (mps: number): number => Math.min((mps * RAW_PER_METER) / tickHz, maxStep);
  const rand = mulberry32(seed);

  // Bounds per entity area: 0 = whole region, 1 = the center cell.
  const cellLo = (cfg.cellsPerAxis >> 1) * cfg.cellRaw;
  const cellHi = cellLo + cfg.cellRaw - 1;
  if (cellHi >= region) invalid(`the region (${region} raw) is too small for a center cell of ${cfg.cellRaw} raw`);
  const areaLo = [0, cellLo];
  const areaHi = [region - 1, cellHi];

  const px = new Float64Array(count);
  const py = new Float64Array(count);
  const dx = new Float64Array(count); // unit heading
  const dy = new Float64Array(count);
  const turn = new Float64Array(count);
  const speed = new Float64Array(count); // raw per tick
  const speeds = new Float64Array(count); // m/s
  const area = new Uint8Array(count);

  const place = (i: number, a: number): void => {
    const lo = areaLo[a];
    const span = areaHi[a] - lo;
    area[i] = a;
    px[i] = lo + rand() * span;
    py[i] = lo + rand() * span;
    const h = rand() * 2 * Math.PI;
    dx[i] = Math.cos(h);
    dy[i] = Math.sin(h);
  };
  const setSpeed = (i: number, mps: number): void => {
    speeds[i] = mps;
    speed[i] = perTick(mps);
  };

  // Trips: hubs, destinations, linger countdowns (ticks).
  const hubs: number[] = [];
  const destX = new Float64Array(scenario === 'trips' ? count : 0);
  const destY = new Float64Array(scenario === 'trips' ? count : 0);
  const linger = new Int32Array(scenario === 'trips' ? count : 0);
  const margin = Math.min(region / 8, 64 * RAW_PER_METER);
  const clampRegion = (v: number): number => (v < 0 ? 0 : v > region - 1 ? region - 1 : v);
  const pickDestination = (i: number): void => {
    let x: number;
    let y: number;
    if (rand() < TRIP_HUB_SHARE) {
      const h = Math.floor(rand() * TRIP_HUBS);
      const r = Math.sqrt(rand()) * TRIP_HUB_SPREAD_M * RAW_PER_METER;
      const a = rand() * 2 * Math.PI;
      x = hubs[2 * h] + r * Math.cos(a);
      y = hubs[2 * h + 1] + r * Math.sin(a);
    } else {
      x = rand() * (region - 1);
      y = rand() * (region - 1);
    }
    destX[i] = clampRegion(x);
    destY[i] = clampRegion(y);
    const ex = destX[i] - px[i];
    const ey = destY[i] - py[i];
    const len = Math.hypot(ex, ey);
    dx[i] = len > 0 ? ex / len : 1;
    dy[i] = len > 0 ? ey / len : 0;
    setSpeed(i, TRIP_SPEED[0] + rand() * (TRIP_SPEED[1] - TRIP_SPEED[0]));
  };
  const lingerTicks = (): number => Math.round((TRIP_LINGER_S[0] + rand() * (TRIP_LINGER_S[1] - TRIP_LINGER_S[0])) * tickHz);

  switch (scenario) {
    case 'uniform':
      for (let i = 0; i < count; i++) {
        place(i, 0);
        setSpeed(i, WANDER_SPEED);
      }
      break;
    case 'town-square':
      for (let i = 0; i < count; i++) {
        place(i, 1);
        setSpeed(i, WANDER_SPEED);
      }
      break;
    case 'crowd-50k': {
      const crowd = Math.round(count * 0.6);
      for (let i = 0; i < count; i++) {
        place(i, i < crowd ? 1 : 0);
        setSpeed(i, WANDER_SPEED);
      }
      break;
    }
    case 'trips':
      for (let h = 0; h < TRIP_HUBS; h++) hubs.push(margin + rand() * (region - 2 * margin), margin + rand() * (region - 2 * margin));
      // Start near the steady state: most bots part-way along their first leg, some lingering at
      // its end, so the flows toward the hubs exist from the first tick.
      for (let i = 0; i < count; i++) {
        place(i, 0);
        pickDestination(i);
        if (rand() < TRIP_START_LINGERING) {
          px[i] = destX[i];
          py[i] = destY[i];
          linger[i] = 1 + Math.floor(rand() * lingerTicks());
          setSpeed(i, 0);
        } else {
          const f = rand();
          px[i] += (destX[i] - px[i]) * f;
          py[i] += (destY[i] - py[i]) * f;
        }
      }
      break;
    case 'speed-mix': {
      // Exact shares, then a seeded shuffle.
      const classes = new Float64Array(count);
      let k = 0;
      for (let c = 0; c < SPEED_MIX.length; c++) {
        const end = c === SPEED_MIX.length - 1 ? count : Math.min(count, k + Math.round(SPEED_MIX[c][0] * count));
        for (; k < end; k++) classes[k] = SPEED_MIX[c][1];
      }
      for (let i = count - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        const t = classes[i];
        classes[i] = classes[j];
        classes[j] = t;
      }
      for (let i = 0; i < count; i++) {
        place(i, 0);
        setSpeed(i, classes[i]);
      }
      break;
    }
  }

  // Spawn at the rounded positions (raw / 1024 m converts back to the same raw value exactly).
  const ids = new Uint32Array(count);
  const slots = new Uint32Array(count);
  // Viewers: the first `viewerCount` entities. They are randomly placed, except in crowd-50k where
  // the first 60% are the crowd, so viewers are chosen among the crowd first. A refused viewer
  // option undoes the herd: its viewers are removed and its entities despawned.
  let spawned = 0;
  let added = 0;
  try {
    for (; spawned < count; spawned++) {
      const id = world.spawn({ x: Math.round(px[spawned]) / RAW_PER_METER, y: Math.round(py[spawned]) / RAW_PER_METER, z: 0 });
      ids[spawned] = id;
      slots[spawned] = world.slotOf(id);
    }
    for (; added < viewerCount; added++) world.addViewer(ids[added], options.viewerOptions);
  } catch (e) {
    for (let i = 0; i < added; i++) world.removeViewer(ids[i]);
    for (let i = 0; i < spawned; i++) world.despawn(ids[i]);
    throw e;
  }
  const viewers = ids.slice(0, viewerCount);

  const mover: Mover = {
    count,
    px,
    py,
    dx,
    dy,
    turn,
    speed,
    area,
    slots,
    X: world.positions.x,
    Y: world.positions.y,
    lo0: areaLo[0],
    hi0: areaHi[0],
    lo1: areaLo[1],
    hi1: areaHi[1],
    rand,
  };
  let steps = 0;

  const travelAll = (): void => {
    const { X, Y } = mover;
    for (let i = 0; i < count; i++) {
      if (linger[i] > 0) {
        if (--linger[i] === 0) pickDestination(i);
        continue;
      }
      const s = speed[i];
      const ex = destX[i] - px[i];
      const ey = destY[i] - py[i];
      if (ex * ex + ey * ey <= s * s) {
        px[i] = destX[i];
        py[i] = destY[i];
        linger[i] = Math.max(1, lingerTicks());
        setSpeed(i, 0);
      } else {
        px[i] += dx[i] * s;
        py[i] += dy[i] * s;
        reflect(mover, i);
      }
      const slot = slots[i];
      X[slot] = Math.round(px[i]);
      Y[slot] = Math.round(py[i]);
    }
  };

  const stepAll = scenario === 'trips' ? travelAll : (): void => wanderAll(mover);

  return {
    scenario,
    seed,
    ids,
    slots,
    viewers,
    speeds,
    get steps() {
      return steps;
    },
    step(): void {
      stepAll();
      steps++;
    },
  };
}
