// The tick governor's levers on a World: per-viewer send periods, packet sizes and view radii
// (through the World's shedding of viewer settings) and the engine's walk and ghost caps. Applied
// between ticks, as inputs of the next one.
import type { GovernorSettings } from './governor.js';
import { NO_SHED, type Shed } from './shedding.js';
import { packetIndexOf, type TickResult } from './tick-result.js';
import type { World } from './world.js';
import type { EntityId } from './world-types.js';

/** What the levers shed at the level in force (in the loop's summary and the herd report). */
export interface GovernorShed {
  /** The level in force. */
  readonly level: number;
  /** Viewers served less often than their own send period. */
  readonly slowedViewers: number;
  /** Of those, the low-priority ones (marked, or the least active half). */
  readonly lowPriorityViewers: number;
  /** The caps in use. */
  readonly walkCap: number;
  readonly ghostCap: number;
  /** Packet size scale and view radius scale in force, (0, 1]. */
  readonly payloadScale: number;
  readonly radiusScale: number;
}

// The sheds of the levels (shedAt's results), made once: a level change compares and keeps
// these, and builds nothing per viewer.
const SHEDS: readonly (readonly [Shed, Shed])[] = Array.from({ length: 6 }, (_, level) => {
  const make = (lowPriority: boolean): Shed => {
    const period = level >= 5 ? (lowPriority ? 4 : 2) : level >= 1 && lowPriority ? 2 : 1;
    const payload = level >= 3 ? 0.75 : 1;
    const radius = level >= 4 ? 0.75 : 1;
    return period === 1 && payload === 1 && radius === 1 ? NO_SHED : Object.freeze({ period, payload, radius });
  };
  return [make(false), make(true)] as const;
});

/** The per-viewer shed of a level (0 to 5), for a low-priority viewer or another. */
export function shedAt(level: number, lowPriority: boolean): Shed {
  return SHEDS[Math.max(0, Math.min(5, level))][lowPriority ? 1 : 0];
}

/**
 * Applies governor levels to one World. Walk and ghost caps are halved from the game's own
 * (world.caps when shedding starts; a cap the game sets while shedding becomes that cap's base at
 * the next level change) and given back at level 0. The low-priority set is chosen when shedding starts
 * (level 0 → above) and kept until it ends: the viewers `lowPriority` marks, or, without it, the
 * half of the viewers with the fewest update records in the last tick's packets (a viewer without
 * a packet then counts 0; ties: lower id first). Viewers added while shedding are left alone until
 * the next level change.
 */
export class GovernorLevers {
  readonly #world: World;
  readonly #settings: GovernorSettings;
  #level = 0;
  #low = new Set<EntityId>();
  #shed: GovernorShed;
  // The game's caps, and the ones this governor wrote last (null: none in force).
  #capsBase: { walkCap: number; ghostCap: number };
  #capsSet: { walkCap: number; ghostCap: number } | null = null;

  constructor(world: World, settings: GovernorSettings) {
    this.#world = world;
    this.#settings = settings;
    const caps = world.caps;
    this.#capsBase = caps;
    this.#shed = { level: 0, slowedViewers: 0, lowPriorityViewers: 0, walkCap: caps.walkCap, ghostCap: caps.ghostCap, payloadScale: 1, radiusScale: 1 };
  }

  get shed(): GovernorShed {
    return this.#shed;
  }

  /** Puts `level` in force for the next tick; `last`: the last tick's result (still valid), for the activity ranking. */
  apply(level: number, last: TickResult | undefined): void {
    const world = this.#world;
    const ids = world.viewerIds();
    if (this.#level === 0 && level > 0) this.#low = this.#chooseLow(ids, last);
    if (level === 0) this.#low = new Set();
    // One batched engine call for every viewer whose shed changes (none when only the caps do).
    const low = this.#low;
    const [other, lowShed] = SHEDS[Math.max(0, Math.min(5, level))];
    let lowCount = 0;
    world.shedding.setMany('governor', ids, (i) => {
      if (!low.has(ids[i])) return other;
      lowCount++;
      return lowShed;
    });
    const slowed = (other.period > 1 ? ids.length - lowCount : 0) + (lowShed.period > 1 ? lowCount : 0);
    // The caps shed from are the game's (world.caps when shedding starts, or what the game set
    // since the governor last wrote them), as the viewers' own settings are for the other levers.
    const caps = world.caps;
    const set = this.#capsSet;
    const base = (this.#capsBase = {
      walkCap: set === null || caps.walkCap !== set.walkCap ? caps.walkCap : this.#capsBase.walkCap,
      ghostCap: set === null || caps.ghostCap !== set.ghostCap ? caps.ghostCap : this.#capsBase.ghostCap,
    });
    const walkCap = level >= 2 ? Math.max(1, Math.ceil(base.walkCap / 2)) : base.walkCap;
    const ghostCap = level >= 2 ? Math.max(1, Math.ceil(base.ghostCap / 2)) : base.ghostCap;
    if (caps.walkCap !== walkCap || caps.ghostCap !== ghostCap) world.setCaps({ walkCap, ghostCap });
    this.#capsSet = level === 0 ? null : { walkCap, ghostCap };
    this.#level = level;
    this.#shed = {
      level,
      slowedViewers: slowed,
      lowPriorityViewers: lowCount,
      walkCap,
      ghostCap,
      payloadScale: level >= 3 ? 0.75 : 1,
      radiusScale: level >= 4 ? 0.75 : 1,
    };
  }

  #chooseLow(ids: Uint32Array, last: TickResult | undefined): Set<EntityId> {
    const mark = this.#settings.lowPriority;
    if (mark !== undefined) {
      const low = new Set<EntityId>();
      for (const v of ids) if (mark(v)) low.add(v);
      return low;
    }
    const records = new Map<EntityId, number>();
    const packets = last === undefined ? null : packetIndexOf(last);
    if (packets !== null) {
      // The update record count in each packet's header (bytes 14–15), read without a view a packet.
      const { index, bytes } = packets;
      for (let i = 0; i < last!.count; i++) {
        const at = index[3 * i + 1];
        records.set(index[3 * i], index[3 * i + 2] >= 16 ? bytes[at + 14] | (bytes[at + 15] << 8) : 0);
      }
    }
    // Ranked by records, then id: the key records × 2^32 + id (below 2^48, exact) sorts numerically.
    const keys = new Float64Array(ids.length);
    for (let i = 0; i < ids.length; i++) keys[i] = (records.get(ids[i]) ?? 0) * 2 ** 32 + ids[i];
    keys.sort();
    const low = new Set<EntityId>();
    for (let i = 0; i < Math.floor(ids.length / 2); i++) low.add(keys[i] % 2 ** 32);
    return low;
  }
}
