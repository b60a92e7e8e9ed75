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
  /**
   * {@link read} for viewers[i], i < viewers.length, in one engine call: out[3i .. 3i + 2] =
   * sendPeriod, payloadBytes, viewRadius (m).
   */
  readMany(viewers: Uint32Array, out: Float64Array): void;
  /**
   * {@link write} for viewers[i] with the settings settings[3i .. 3i + 2] (as readMany gives them),
   * i < viewers.length, in one engine call (checked as a whole: a throw changes nothing).
   */
  writeMany(viewers: Uint32Array, settings: Float64Array): void;
  /** The smallest packet a viewer may have: the config's minPayloadBytes (28 + eventReserveBytes, more with fields or attributes). */
  readonly minPayloadBytes: number;
}

/** The send period the engine takes at most. */
const MAX_PERIOD = 65535;

function isNoShed(s: Shed): boolean {
  return s.period === 1 && s.payload === 1 && s.radius === 1;
}

function sameShed(a: Shed, b: Shed): boolean {
  return a === b || (a.period === b.period && a.payload === b.payload && a.radius === b.radius);
}

// A viewer something sheds from: its base settings and each source's shed (NO_SHED: none). Two
// fields rather than a map: a level change reads and writes them once a viewer.
interface Shedded {
  base: EngineSettings;
  governor: Shed;
  congestion: Shed;
}

function shedBy(v: Shedded, source: ShedSource): Shed {
  return source === 'governor' ? v.governor : v.congestion;
}

// Sets `source`'s shed of v; returns whether any source still sheds from it.
function putShed(v: Shedded, source: ShedSource, shed: Shed): boolean {
  const s = isNoShed(shed) ? NO_SHED : shed;
  if (source === 'governor') v.governor = s;
  else v.congestion = s;
  return v.governor !== NO_SHED || v.congestion !== NO_SHED;
}

/**
 * The base settings of the viewers something sheds from, and each source's shed. A viewer no
 * source sheds from is not tracked: its settings are the engine's alone.
 */
export class ViewerShedding {
  readonly #target: SheddingTarget;
  readonly #viewers = new Map<EntityId, Shedded>();

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
    const v = this.#viewers.get(viewer);
    return v === undefined ? NO_SHED : shedBy(v, source);
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
      v = { base: { ...this.#target.read(viewer) }, governor: NO_SHED, congestion: NO_SHED };
      this.#viewers.set(viewer, v);
    }
    const still = putShed(v, source, shed);
    this.#target.write(viewer, this.effective(viewer)!);
    if (!still) this.#viewers.delete(viewer);
  }

  /**
   * {@link set} for many viewers at once: `shed(i)` is what `source` sheds from viewers[i] (no id
   * twice). Viewers whose shed by `source` is unchanged are left alone; the bases of those it
   * starts shedding from are read in one engine call, and the settings that result written in
   * another (none when nothing changed). Returns how many viewers' settings were written.
   */
  setMany(source: ShedSource, viewers: Uint32Array, shed: (i: number) => Shed): number {
    const n = viewers.length;
    const changed = new Uint32Array(n); // indices into viewers of the viewers whose shed changes
    const sheds: Shed[] = [];
    let fresh = 0; // of those, the ones nothing shed from yet
    for (let i = 0; i < n; i++) {
      const s = shed(i);
      const v = this.#viewers.get(viewers[i]);
      if (v === undefined) {
        if (isNoShed(s)) continue;
        fresh++;
      } else if (sameShed(shedBy(v, source), s)) continue;
      changed[sheds.length] = i;
      sheds.push(s);
    }
    const k = sheds.length;
    if (k === 0) return 0;
    if (fresh > 0) {
      const ids = new Uint32Array(fresh);
      for (let j = 0, f = 0; j < k; j++) if (!this.#viewers.has(viewers[changed[j]])) ids[f++] = viewers[changed[j]];
      const read = new Float64Array(3 * fresh);
      this.#target.readMany(ids, read);
      for (let f = 0; f < fresh; f++) {
        this.#viewers.set(ids[f], { base: { sendPeriod: read[3 * f], payloadBytes: read[3 * f + 1], viewRadius: read[3 * f + 2] }, governor: NO_SHED, congestion: NO_SHED });
      }
    }
    const ids = new Uint32Array(k);
    const settings = new Float64Array(3 * k);
    for (let j = 0; j < k; j++) {
      const id = (ids[j] = viewers[changed[j]]);
      const v = this.#viewers.get(id)!;
      const still = putShed(v, source, sheds[j]);
      this.#effectiveInto(v, settings, 3 * j);
      if (!still) this.#viewers.delete(id);
    }
    this.#target.writeMany(ids, settings);
    return k;
  }

  /** The settings the engine gets for a viewer shed from, or undefined. */
  effective(viewer: EntityId): EngineSettings | undefined {
    const v = this.#viewers.get(viewer);
    if (v === undefined) return undefined;
    const out = new Float64Array(3);
    this.#effectiveInto(v, out, 0);
    return { sendPeriod: out[0], payloadBytes: out[1], viewRadius: out[2] };
  }

  // out[at .. at + 2] = the effective sendPeriod, payloadBytes, viewRadius (m) of v.
  #effectiveInto(v: Shedded, out: Float64Array, at: number): void {
    const g = v.governor;
    const c = v.congestion;
    const period = Math.max(1, g.period, c.period);
    const payload = Math.min(1, g.payload, c.payload);
    const radius = Math.min(1, g.radius, c.radius);
    const b = v.base;
    out[at] = Math.min(MAX_PERIOD, b.sendPeriod * period);
    out[at + 1] = Math.max(Math.min(b.payloadBytes, this.#target.minPayloadBytes), Math.floor(b.payloadBytes * payload));
    out[at + 2] = b.viewRadius * radius;
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

  /**
   * {@link rebase} for many viewers: viewers[i] changed the settings named by what[i] (CHANGE
   * bits of sendPeriod 1, payloadBytes 2, viewRadius 4) to sendPeriod[i], payloadBytes[i],
   * viewRadius[i] (m). The shed settings of those something sheds from are written again, in one
   * engine call; the others are left to the caller. Returns how many were written.
   */
  rebaseMany(viewers: Uint32Array, what: Uint8Array, sendPeriod: Float64Array, payloadBytes: Float64Array, viewRadius: Float64Array): number {
    if (this.#viewers.size === 0) return 0;
    const ids: number[] = [];
    const settings: number[] = [];
    const out = new Float64Array(3);
    for (let i = 0; i < viewers.length; i++) {
      const v = this.#viewers.get(viewers[i]);
      if (v === undefined) continue;
      const w = what[i];
      v.base = {
        sendPeriod: w & 1 ? sendPeriod[i] : v.base.sendPeriod,
        payloadBytes: w & 2 ? payloadBytes[i] : v.base.payloadBytes,
        viewRadius: w & 4 ? viewRadius[i] : v.base.viewRadius,
      };
      this.#effectiveInto(v, out, 0);
      ids.push(viewers[i]);
      settings.push(out[0], out[1], out[2]);
    }
    if (ids.length > 0) this.#target.writeMany(Uint32Array.from(ids), Float64Array.from(settings));
    return ids.length;
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
