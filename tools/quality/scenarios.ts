// The quality harness's populations: umwelt-rs's published scenario, the herd's speed mix, and a
// crowd in one cell where the byte budget binds. Each spawns into a World and moves by writing
// world.positions once per tick.
import { RAW_PER_METER, SightlineError, mulberry32, type World } from 'sightline';
import { createHerd } from '../herd/scenarios.js';

/**
 * A population the quality harness measures.
 *
 * - `umwelt`: umwelt-rs's harness scenario as published (examples/harness.rs): entities placed
 *   uniformly 8 m or more inside the region's edges; each draws a speed class (35% still, 25% at
 *   0.2 m/s, 25% at 1.5, 10% at 6, 5% at 30) and one of 8 compass headings, and keeps both, moving
 *   round(speed / tickHz × 1024) raw units a tick along each axis of its heading (a diagonal
 *   moves that much on both axes) and bouncing off those edges (the component reverses, the
 *   position stays for that tick). Viewers are the first walkers (1.5 m/s) in spawn order.
 * - `speed-mix`: the herd's speed-mix (tools/herd/scenarios.ts): the same shares of speeds,
 *   exactly, on wandering (slowly turning) headings; viewers are the first entities, any speed.
 * - `crowd`: the herd's town square: every entity in the cell at the region's center, wandering
 *   at walking speed (1.5 m/s), every one within every viewer's radius, so a packet's 98 slots
 *   cover a small share of what is in range; viewers are the first entities.
 */
export type QualityScenario = 'umwelt' | 'speed-mix' | 'crowd';

/** Valid {@link QualityScenario} values. */
export const QUALITY_SCENARIOS: readonly QualityScenario[] = Object.freeze(['umwelt', 'speed-mix', 'crowd'] as const);

/** A scenario's default run. */
export interface QualityScenarioDefaults {
  readonly entities: number;
  readonly viewers: number;
  readonly ticks: number;
  readonly warmupTicks: number;
}

/**
 * Defaults per scenario: umwelt-rs's run for `umwelt` (60,000 entities, 200 viewers, 400 ticks,
 * the first 40 discarded), the same counts for `speed-mix` (20 warm-up ticks), and a crowd small
 * enough to measure every viewer on every tick in about a minute (4,096 entities, 100 viewers, 200
 * ticks).
 */
export const QUALITY_SCENARIO_DEFAULTS: Readonly<Record<QualityScenario, QualityScenarioDefaults>> = Object.freeze({
  umwelt: { entities: 60_000, viewers: 200, ticks: 400, warmupTicks: 40 },
  'speed-mix': { entities: 60_000, viewers: 200, ticks: 400, warmupTicks: 20 },
  crowd: { entities: 4_096, viewers: 100, ticks: 200, warmupTicks: 20 },
});

/** A population spawned into a World. */
export interface QualityPopulation {
  /** Entity ids in spawn order (the harness's entity index). */
  readonly ids: Uint32Array;
  /** Their slots in world.positions. */
  readonly slots: Uint32Array;
  /** The viewers' avatar ids, in viewer order (added to the world as viewers with default options). */
  readonly viewers: Uint32Array;
  /** Moves every entity by one tick (writes world.positions). */
  step(): void;
}

// umwelt-rs's speed classes: [share, m/s], and the class its viewers are drawn from.
const UMWELT_MIX: readonly (readonly [number, number])[] = [
  [0.35, 0],
  [0.25, 0.2],
  [0.25, 1.5],
  [0.1, 6],
  [0.05, 30],
];
const UMWELT_VIEWER_CLASS = 2;
// Distance kept from the region's edges, m.
const UMWELT_MARGIN_M = 8;
// The 8 compass headings as per-axis signs.
const COMPASS: readonly (readonly [number, number])[] = [
  [1, 0],
  [1, 1],
  [0, 1],
  [-1, 1],
  [-1, 0],
  [-1, -1],
  [0, -1],
  [1, -1],
];

function umwelt(world: World, entities: number, viewers: number, seed: number): QualityPopulation {
  const cfg = world.config;
  const rand = mulberry32(seed);
  const margin = UMWELT_MARGIN_M * RAW_PER_METER;
  const extent = cfg.regionRaw - 2 * margin;
  if (extent <= 0) throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', `the umwelt scenario needs a region wider than ${2 * UMWELT_MARGIN_M} m, received ${cfg.regionSize} m`);
  const lo = margin;
  const hi = margin + extent;
  const px = new Int32Array(entities);
  const py = new Int32Array(entities);
  const vx = new Int32Array(entities);
  const vy = new Int32Array(entities);
  const walkers: number[] = [];
  const cuts: number[] = [];
  let acc = 0;
  for (const [share] of UMWELT_MIX) cuts.push((acc += share));
  const perTickMax = cfg.maxMovePerTickRaw - 1;
  for (let i = 0; i < entities; i++) {
    px[i] = margin + Math.floor(rand() * extent);
    py[i] = margin + Math.floor(rand() * extent);
    const roll = rand();
    let k = cuts.findIndex((c) => roll < c);
    if (k < 0) k = UMWELT_MIX.length - 1;
    const perTick = Math.round((UMWELT_MIX[k][1] / cfg.tickHz) * RAW_PER_METER);
    if (perTick > perTickMax) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', `the umwelt scenario's ${UMWELT_MIX[k][1]} m/s class moves ${perTick} raw a tick, more than this config's maxSpeed allows (${perTickMax})`);
    }
    const [sx, sy] = perTick === 0 ? [0, 0] : COMPASS[Math.floor(rand() * 8)];
    vx[i] = sx * perTick;
    vy[i] = sy * perTick;
    if (k === UMWELT_VIEWER_CLASS) walkers.push(i);
  }
  if (walkers.length < viewers) {
    throw new SightlineError('ERR_SIGHTLINE_INVALID_QUALITY_OPTION', `viewers must be at most the walkers drawn (${walkers.length} of ${entities} entities), received ${viewers}`);
  }
  const ids = new Uint32Array(entities);
  const slots = new Uint32Array(entities);
  for (let i = 0; i < entities; i++) {
    ids[i] = world.spawn({ x: px[i] / RAW_PER_METER, y: py[i] / RAW_PER_METER, z: 0 });
    slots[i] = world.slotOf(ids[i]);
  }
  const avatars = Uint32Array.from(walkers.slice(0, viewers), (i) => ids[i]);
  for (const a of avatars) world.addViewer(a);
  const X = world.positions.x;
  const Y = world.positions.y;
  return {
    ids,
    slots,
    viewers: avatars,
    step(): void {
      for (let i = 0; i < entities; i++) {
        const nx = px[i] + vx[i];
        if (nx < lo || nx > hi) vx[i] = -vx[i];
        else px[i] = nx;
        const ny = py[i] + vy[i];
        if (ny < lo || ny > hi) vy[i] = -vy[i];
        else py[i] = ny;
        X[slots[i]] = px[i];
        Y[slots[i]] = py[i];
      }
    },
  };
}

/**
 * Spawns a scenario's population into `world` and adds its viewers.
 * @throws ERR_SIGHTLINE_INVALID_QUALITY_OPTION (umwelt: fewer walkers than viewers, a region too
 *   small, a config whose maxSpeed is below 30 m/s); the herd's errors (tools/herd/scenarios.ts).
 */
export function createPopulation(world: World, scenario: QualityScenario, entities: number, viewers: number, seed: number): QualityPopulation {
  if (scenario === 'umwelt') return umwelt(world, entities, viewers, seed);
  const herd = createHerd(world, { scenario: scenario === 'crowd' ? 'town-square' : 'speed-mix', entities, viewers, seed });
  return { ids: herd.ids, slots: herd.slots, viewers: herd.viewers, step: () => herd.step() };
}
