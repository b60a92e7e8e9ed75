// The herd's state beyond positions (`sightline herd --state`): what a game shows of each remote
// entity. A heading from its movement, an animation state from its speed, health that drops and
// comes back, a kind (players and the rest), and a name with a level as attributes, a tenth of the
// levels rising each second.
import type { World, WorldConfigInput } from 'sightline';
import type { Herd } from './scenarios.js';

/** The fields and attributes the herd's state needs: 22 bits of fields (a 15-byte record) and 32-byte attributes. */
export const HERD_STATE_CONFIG: Readonly<Pick<WorldConfigInput, 'fields' | 'attributeBytes'>> = Object.freeze({
  fields: Object.freeze([
    Object.freeze({ name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI }),
    Object.freeze({ name: 'anim', bits: 4 }),
    Object.freeze({ name: 'health', bits: 8, max: 100, weight: 0.25 }),
  ]),
  attributeBytes: 32,
});

/** Kinds the herd gives: its viewers are players, the rest are not. */
export const HERD_KIND_PLAYER = 1;
export const HERD_KIND_OTHER = 2;

/** Animation states in the `anim` field. */
export const HERD_ANIM = Object.freeze({ idle: 0, walk: 1, run: 2 } as const);

/** Drives a herd's state, one step a tick after the herd's own. */
export interface HerdState {
  step(): void;
  /** Levels raised so far (attribute changes after the first). */
  readonly levelUps: number;
}

/**
 * Gives every herd entity its kind and first attributes and returns the per-tick step. `world` must
 * have been built with {@link HERD_STATE_CONFIG}'s fields and attributes.
 */
export function createHerdState(world: World, herd: Herd, seed: number): HerdState {
  const n = herd.ids.length;
  const viewers = new Set(herd.viewers);
  const level = new Uint8Array(n);
  const prevX = new Int32Array(n);
  const prevY = new Int32Array(n);
  const { x, y } = world.positions;
  const yaw = world.fields.yaw;
  const anim = world.fields.anim;
  const health = world.fields.health;
  const yawTop = 2 ** 10 - 1;
  let r = seed >>> 0;
  const rand = (): number => {  // xorshift32: the herd's movement keeps its own PRNG's sequence
    r ^= r << 13;
    r ^= r >>> 17;
    r ^= r << 5;
    return (r >>> 0) / 4294967296;
  };
  const encoder = new TextEncoder();
  const name = (i: number): Uint8Array => encoder.encode(`bot-${herd.ids[i]} lvl ${level[i]}`.slice(0, 32));
  for (let i = 0; i < n; i++) {
    const id = herd.ids[i];
    const s = herd.slots[i];
    level[i] = 1 + Math.floor(rand() * 20);
    world.setKind(id, viewers.has(id) ? HERD_KIND_PLAYER : HERD_KIND_OTHER);
    world.setAttributes(id, name(i));
    health[s] = world.config.fieldToRaw('health', 100);
    prevX[i] = x[s];
    prevY[i] = y[s];
  }
  const raw = world.config.maxMovePerTickRaw;
  let levelUps = 0;
  // A tenth of the levels rise each second, spread over the second's ticks.
  const levelUpsPerTick = (0.1 * n) / world.config.tickHz;
  let owed = 0;
  return {
    get levelUps() {
      return levelUps;
    },
    step(): void {
      for (let i = 0; i < n; i++) {
        const s = herd.slots[i];
        const dx = x[s] - prevX[i];
        const dy = y[s] - prevY[i];
        prevX[i] = x[s];
        prevY[i] = y[s];
        const moved = Math.abs(dx) + Math.abs(dy);
        if (moved > 0) {
          const a = Math.atan2(dy, dx);
          yaw[s] = Math.round(((a < 0 ? a + 2 * Math.PI : a) * yawTop) / (2 * Math.PI));
        }
        anim[s] = moved === 0 ? HERD_ANIM.idle : moved * 4 < raw ? HERD_ANIM.walk : HERD_ANIM.run;
        // Damage now and then; health comes back a point a tick.
        if (rand() < 0.002) health[s] = Math.max(0, health[s] - 20 - Math.floor(rand() * 60));
        else if (health[s] < 255) health[s]++;
      }
      owed += levelUpsPerTick;
      for (; owed >= 1; owed--) {
        const i = Math.floor(rand() * n);
        level[i] = Math.min(255, level[i] + 1);
        world.setAttributes(herd.ids[i], name(i));
        levelUps++;
      }
    },
  };
}
