// Load shedding per viewer: what the tick governor and congestion control take away from a
// viewer's own settings, composed in one place. The game's settings (addViewer, setSendPeriod,
// setPayloadBytes, setViewRadius) stay the base; each source asks for a longer send period and
// smaller packets or radius; the engine gets the base with the strongest of each applied.
import type { ViewerSettings } from './world-types.js';
import type { EntityId } from './world-types.js';

/** What one source sheds from a viewer: factors on its base settings. */
export interface Shed {
  /** Send period multiplier, an integer ≥ 1. */
  readonly period: number;
  /** Packet size scale, (0, 1]: payloadBytes × this, at least the smallest packet. */
  readonly payload: number;
  /** View radius scale, (0, 1]. */
  readonly radius: number;
}

/** Nothing shed. */
export const NO_SHED: Shed = Object.freeze({ period: 1, payload: 1, radius: 1 });

/** Who sheds. */
export type ShedSource = 'governor' | 'congestion';

/** The settings the engine is asked for (ViewerSettings' numbers; viewRadius in meters). */
export type EngineSettings = Pick<ViewerSettings, 'sendPeriod' | 'payloadBytes' | 'viewRadius'>;

/** How {@link ViewerShedding} reaches the engine. */
export interface SheddingTarget {
  /** The viewer's settings as the engine has them. */
  read(viewer: EntityId): EngineSettings;
  /** Sets the fields of `settings` that differ from what the engine has. */
  write(viewer: EntityId, settings: EngineSettings): void;
  /** The smallest packet a viewer may have: 28 + eventReserveBytes. */
  readonly minPayloadBytes: number;
}

/** The send period the engine takes at most. */
const MAX_PERIOD = 65535;

function isNoShed(s: Shed): boolean {
  return s.period === 1 && s.payload === 1 && s.radius === 1;
}

/**
 * The base settings of the viewers something sheds from, and each source's shed. A viewer no
 * source sheds from is not tracked: its settings are the engine's alone.
 */
export class ViewerShedding {
  readonly #target: SheddingTarget;
  readonly #viewers = new Map<EntityId, { base: EngineSettings; by: Map<ShedSource, Shed> }>();

  constructor(target: SheddingTarget) {
    this.#target = target;
  }

  /** Viewers something sheds from now. */
  get size(): number {
    return this.#viewers.size;
  }

  /** The base (the game's) settings of a viewer shed from, or undefined. */
  base(viewer: EntityId): EngineSettings | undefined {
    return this.#viewers.get(viewer)?.base;
  }

  /** A source's shed of a viewer (NO_SHED when none). */
  shedOf(source: ShedSource, viewer: EntityId): Shed {
    return this.#viewers.get(viewer)?.by.get(source) ?? NO_SHED;
  }

  /**
   * Sets what `source` sheds from `viewer` (NO_SHED: nothing) and writes the settings that result.
   * The base is read from the engine when the first source starts shedding, and written back when
   * the last one stops.
   */
  set(source: ShedSource, viewer: EntityId, shed: Shed): void {
    let v = this.#viewers.get(viewer);
    if (v === undefined) {
      if (isNoShed(shed)) return;
      v = { base: { ...this.#target.read(viewer) }, by: new Map() };
      this.#viewers.set(viewer, v);
    }
    if (isNoShed(shed)) v.by.delete(source);
    else v.by.set(source, shed);
    this.#target.write(viewer, this.effective(viewer)!);
    if (v.by.size === 0) this.#viewers.delete(viewer);
  }

  /** The settings the engine gets for a viewer shed from, or undefined. */
  effective(viewer: EntityId): EngineSettings | undefined {
    const v = this.#viewers.get(viewer);
    if (v === undefined) return undefined;
    let period = 1;
    let payload = 1;
    let radius = 1;
    for (const s of v.by.values()) {
      period = Math.max(period, s.period);
      payload = Math.min(payload, s.payload);
      radius = Math.min(radius, s.radius);
    }
    const b = v.base;
    return {
      sendPeriod: Math.min(MAX_PERIOD, b.sendPeriod * period),
      payloadBytes: Math.max(Math.min(b.payloadBytes, this.#target.minPayloadBytes), Math.floor(b.payloadBytes * payload)),
      viewRadius: b.viewRadius * radius,
    };
  }

  /**
   * The game changed a viewer's settings: when something sheds from it, the change becomes its
   * base and the shed settings are written again; returns false when nothing does (the caller
   * applies the change itself).
   */
  rebase(viewer: EntityId, change: Partial<EngineSettings>): boolean {
    const v = this.#viewers.get(viewer);
    if (v === undefined) return false;
    v.base = { ...v.base, ...change };
    this.#target.write(viewer, this.effective(viewer)!);
    return true;
  }

  /** Forgets a viewer (removed). */
  forget(viewer: EntityId): void {
    this.#viewers.delete(viewer);
  }

  /** Every viewer shed from, in no particular order. */
  viewers(): IterableIterator<EntityId> {
    return this.#viewers.keys();
  }
}
