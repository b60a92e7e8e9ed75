// Reliable events: who an event reaches (its target), and what a tick defers. Events emitted and
// acknowledgements made while a pass runs are applied when the tick ends, in call order with that
// tick's addViewer and removeViewer calls, so they reach the viewers the same calls between ticks
// would reach (World.emit documents the rules).
import type { NativeWorld } from './binding.js';
import type { WorldConfig } from './config.js';
import { SightlineError, describe } from './errors.js';
import { metersToRaw } from './fixed.js';
import { MAX_ID, isId, rethrow } from './validate.js';
import type { EntityId, Positions } from './world-types.js';

/**
 * Who receives an event; see {@link World.emit}. Positions in meters. Exactly one of the three
 * forms: a target naming two is refused at run time, and the `never` fields make TypeScript refuse
 * it too. (Named so as not to shadow the DOM's and Node's global `EventTarget` where it is imported.)
 */
export type EventRecipients =
  | { viewer: EntityId; holders?: never; near?: never; radius?: never }
  | { holders: EntityId; viewer?: never; near?: never; radius?: never }
  | { near: { x: number; y: number }; radius: number; viewer?: never; holders?: never };

// A target checkTarget accepted: one form, its other fields absent.
type NearTarget = { near: { x: number; y: number }; radius: number };
type CheckedTarget = { viewer: EntityId } | { holders: EntityId } | NearTarget;

function invalidTarget(message: string): never {
  throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', message);
}

const TARGET_FORMS = '{ viewer }, { holders } or { near: { x, y }, radius } (meters)';

// Validates a target completely and returns a copy, so a deferred event does not see later changes
// to the caller's object.
export function checkTarget(target: unknown): CheckedTarget {
  if (typeof target !== 'object' || target === null) {
    invalidTarget(`an event target must be ${TARGET_FORMS}, received ${describe(target)}`);
  }
  const t = target as Record<string, unknown>;
  // A field set to undefined is absent (as the optional `never` fields of EventRecipients allow).
  const keys = Object.keys(t).filter((k) => t[k] !== undefined);
  const forms = Number(keys.includes('viewer')) + Number(keys.includes('holders')) + Number(keys.includes('near'));
  if (forms !== 1) {
    const known = new Set(['viewer', 'holders', 'near', 'radius']);
    const unknown = keys.filter((k) => !known.has(k));
    const received =
      keys.length === 0
        ? 'an object with no fields'
        : `an object with ${forms === 0 ? 'none of them' : `${forms} of them`}${unknown.length > 0 ? ` and unknown ${unknown.length === 1 ? 'field' : 'fields'} ${unknown.map((k) => describe(k)).join(', ')}` : ''} (fields: ${keys.map((k) => describe(k)).join(', ')})`;
    invalidTarget(`an event target must have exactly one of viewer, holders and near (${TARGET_FORMS}), received ${received}`);
  }
  const allowed = keys.includes('viewer') ? ['viewer'] : keys.includes('holders') ? ['holders'] : ['near', 'radius'];
  const extra = keys.find((k) => !allowed.includes(k));
  if (extra !== undefined) invalidTarget(`an event target must be ${TARGET_FORMS}, received an object with ${describe(extra)} as well`);
  if (keys.includes('viewer')) {
    if (!isId(t.viewer)) invalidTarget(`target viewer must be an integer entity id from 0 to ${MAX_ID}, received ${describe(t.viewer)}`);
    return { viewer: t.viewer };
  }
  if (keys.includes('holders')) {
    if (!isId(t.holders)) invalidTarget(`target holders must be an integer entity id from 0 to ${MAX_ID}, received ${describe(t.holders)}`);
    return { holders: t.holders };
  }
  const near = t.near;
  if (typeof near !== 'object' || near === null) invalidTarget(`target near must be an object { x, y } (meters), received ${describe(near)}`);
  const { x, y } = near as { x?: unknown; y?: unknown };
  if (typeof x !== 'number' || !Number.isFinite(x)) invalidTarget(`target near.x must be a finite number of meters, received ${describe(x)}`);
  if (typeof y !== 'number' || !Number.isFinite(y)) invalidTarget(`target near.y must be a finite number of meters, received ${describe(y)}`);
  const radius = t.radius;
  if (typeof radius !== 'number' || !Number.isFinite(radius) || radius < 0) {
    invalidTarget(`target radius must be a finite number of meters ≥ 0, received ${describe(radius)}`);
  }
  return { near: { x, y }, radius };
}

/**
 * @internal The World's events: emitting to a target now, or deferring it (and acknowledgements)
 * while a tick runs, and applying what was deferred when the tick ends.
 */
export class EventRouter {
  readonly #engine: () => NativeWorld;
  readonly #positions: Positions;
  readonly #config: WorldConfig;
  readonly #hasViewer: (viewer: EntityId) => boolean;
  // Events emitted and acknowledgements made during a tick, applied when it ends, in call order;
  // `changes` is #viewerChanges when called; `near`, for a { near } target, the viewers whose
  // avatars were in range when emitted.
  #deferredEvents: (
    | { bytes: Uint8Array; target: CheckedTarget; changes: number; near?: ReadonlySet<EntityId> }
    | { ack: { viewer: EntityId; ack: number; ackBits: number }; changes: number }
  )[] = [];
  readonly #addedDuringTick = new Set<EntityId>();
  // Viewer additions and removals during the current tick, counted, and the count at each viewer's
  // last one: a deferred event is applied in call order with them (a viewer added or removed after
  // the emit is not the one the event was meant for).
  #viewerChanges = 0;
  readonly #changedDuringTick = new Map<EntityId, number>();
  #eventsDropped = 0;

  /** `engine` refuses every call once the world is closed; `hasViewer` is World.hasViewer. */
  constructor(engine: () => NativeWorld, positions: Positions, config: WorldConfig, hasViewer: (viewer: EntityId) => boolean) {
    this.#engine = engine;
    this.#positions = positions;
    this.#config = config;
    this.#hasViewer = hasViewer;
  }

  /** Events not queued for a viewer (see World.eventsDropped). */
  get dropped(): number {
    return this.#eventsDropped;
  }

  /** A viewer was added during the running tick. */
  viewerAdded(avatar: EntityId): void {
    this.#addedDuringTick.add(avatar);
    this.#changedDuringTick.set(avatar, ++this.#viewerChanges);
  }

  /** A viewer was removed during the running tick. */
  viewerRemoved(avatar: EntityId): void {
    this.#changedDuringTick.set(avatar, ++this.#viewerChanges);
  }

  /** An acknowledgement checked during the running tick, to apply when it ends. */
  deferAcknowledgement(viewer: EntityId, ack: number, ackBits: number): void {
    this.#deferredEvents.push({ ack: { viewer, ack, ackBits }, changes: this.#viewerChanges });
  }

  /** Forgets what was deferred (the world closed). */
  clear(): void {
    this.#deferredEvents = [];
  }

  /** World.emit after its open check; `ticking`: a tick is running. */
  emit(bytes: Uint8Array, target: EventRecipients, ticking: boolean): number {
    if (!(bytes instanceof Uint8Array)) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `an event must be a Uint8Array, received ${describe(bytes)}`);
    }
    const t = checkTarget(target);
    const max = this.#config.eventReserveBytes - 5;
    if (max < 1) {
      throw new SightlineError(
        'ERR_SIGHTLINE_EVENTS_DISABLED',
        `events need an event reserve: build the config with eventReserveBytes above 5 (it is ${this.#config.eventReserveBytes})`,
      );
    }
    if (bytes.length === 0) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `an event must hold 1 to ${max} bytes, received an empty Uint8Array`);
    }
    if (bytes.length > max) {
      throw new SightlineError('ERR_SIGHTLINE_EVENT_TOO_LARGE', `an event must be 1 to ${max} bytes (eventReserveBytes - 5), received ${bytes.length}`);
    }
    if ('viewer' in t && !this.#hasViewer(t.viewer)) {
      throw new SightlineError('ERR_SIGHTLINE_UNKNOWN_VIEWER', `entity ${describe(t.viewer)} is not a viewer`);
    }
    if (ticking) {
      if ('viewer' in t && !this.#addedDuringTick.has(t.viewer) && !this.#takesEvents(t.viewer)) {
        throw new SightlineError(
          'ERR_SIGHTLINE_EVENTS_DISABLED',
          `viewer ${t.viewer} cannot take events: it needs { acks: true } and the config an eventReserveBytes above 5 (it is ${this.#config.eventReserveBytes})`,
        );
      }
      // A { near } target is measured now, as the same call between ticks would: the avatars may
      // move or go before the tick ends. (Viewers added during this tick count by their avatars
      // too; whether they are viewers when the event applies is decided then, in call order.)
      const near = 'near' in t ? new Set(this.#inRange(t, [...this.#engine().viewerIds(), ...this.#changedDuringTick.keys()])) : undefined;
      this.#deferredEvents.push({ bytes: bytes.slice(), target: t, changes: this.#viewerChanges, near });
      return 0;
    }
    return this.#emitNow(bytes, t, true);
  }

  // Whether a registered viewer takes events; true for one the engine does not know yet (added
  // during this tick), whose event is then checked when the tick ends.
  #takesEvents(viewer: EntityId): boolean {
    try {
      return this.#engine().eventStats(viewer) !== null;
    } catch (e) {
      if ((e as { code?: unknown }).code === 'ERR_SIGHTLINE_UNKNOWN_VIEWER') return true;
      rethrow(e);
    }
  }

  // Of `ids`, the live ones whose avatar is within the { near } target's radius (2D), in order.
  #inRange(target: NearTarget, ids: ArrayLike<EntityId>): EntityId[] {
    const cx = metersToRaw(target.near.x);
    const cy = metersToRaw(target.near.y);
    const r = metersToRaw(target.radius);
    const out: EntityId[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (!this.#engine().isLive(ids[i])) continue;
      const s = this.#engine().slotOf(ids[i]);
      // hypot: dx * dx + dy * dy would overflow to Infinity for far-off points and huge radii.
      if (Math.hypot(this.#positions.x[s] - cx, this.#positions.y[s] - cy) <= r) out.push(ids[i]);
    }
    return out;
  }

  // Queues an event for its target's viewers now. `changes`, for an event deferred during a tick:
  // #viewerChanges when it was emitted; viewers added or removed after that are left out (a
  // { viewer } target removed after it, even if added again, is a drop: its queue went with it).
  // `near`: for a deferred { near } event, the viewers that were in range when it was emitted.
  #emitNow(bytes: Uint8Array, target: CheckedTarget, strict: boolean, changes = Infinity, near?: ReadonlySet<EntityId>): number {
    const changedSince = (v: number): boolean => (this.#changedDuringTick.get(v) ?? 0) > changes;
    if ('viewer' in target) {
      if (changedSince(target.viewer)) {
        this.#eventsDropped++;
        return 0;
      }
      try {
        this.#engine().emit(target.viewer, bytes, !strict);  // a refusal thrown to the caller is not a drop
        return 1;
      } catch (e) {
        if (strict) rethrow(e);
        this.#eventsDropped++;
        return 0;
      }
    }
    let viewers: ArrayLike<number>;
    if ('holders' in target) {
      viewers = this.#engine().holders(target.holders);
    } else {
      const all = this.#engine().viewerIds();
      viewers = near ? Array.from(all).filter((v) => near.has(v)) : this.#inRange(target, all);
    }
    let queued = 0;
    for (let i = 0; i < viewers.length; i++) {
      if (changedSince(viewers[i])) continue;  // not a viewer when it was emitted, or not this one
      const stats = this.#engine().eventStats(viewers[i]);
      if (!stats) continue; // takes no events
      try {
        this.#engine().emit(viewers[i], bytes);
        queued++;
      } catch {
        this.#eventsDropped++;
      }
    }
    return queued;
  }

  /** Applies the events and acknowledgements deferred during the tick that just ended, in call order. */
  flush(): void {
    const events = this.#deferredEvents;
    this.#deferredEvents = [];
    this.#addedDuringTick.clear();
    for (const deferred of events) {
      if ('ack' in deferred) {
        // A viewer removed (or removed and added again) after the acknowledgement: that session's
        // packets went with it.
        const { viewer, ack, ackBits } = deferred.ack;
        if ((this.#changedDuringTick.get(viewer) ?? 0) > deferred.changes) continue;
        try {
          this.#engine().acknowledge(viewer, ack, ackBits);
        } catch {
          // Unreachable: checked in full when made, against the packets sent before the tick.
        }
        continue;
      }
      const { bytes, target, changes, near } = deferred;
      try {
        this.#emitNow(bytes, target, false, changes, near);  // a { viewer } removed meanwhile: counted as dropped
      } catch {
        this.#eventsDropped++;
      }
    }
    this.#changedDuringTick.clear();
    this.#viewerChanges = 0;
  }
}
