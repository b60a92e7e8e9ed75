// The viewers of a World (world.ts): adding them (spectators too) and removing them, their settings
// and interest controls, their acknowledgements, the shedding of their settings (world-overload.ts)
// and their reliable events (events.ts). World adds the tick on top of it.
import { EventRouter, type EventRecipients } from './events.js';
import type { CongestionStats } from './congestion.js';
import { SightlineError, describe, readOptions } from './errors.js';
import { toMeters } from './fixed.js';
import { ALL_GROUPS, CHANGE, boostSet, groupsMask, teleportDistanceRaw, viewRadiusRaw, viewerNumber } from './interest.js';
import type { ViewerShedding } from './shedding.js';
import { checkVec3, isId, readBoolean, rethrow } from './validate.js';
import { CAMERAS, ENGINE, REQUIRE_OPEN, WorldEntities, type WorldSetup } from './world-entities.js';
import { WorldOverload } from './world-overload.js';
import { readViewerBatch, type ViewerSettingsBatch } from './viewer-batch.js';
import type { EntityId, PositionInput, SpectatorOptions, ViewerOptions, ViewerSettings } from './world-types.js';
import type { WorldConfig } from './config.js';

/** @internal */
export const TICKING = Symbol('ticking');
/** @internal */
export const EVENTS = Symbol('events');
/** @internal */
export const OVERLOAD = Symbol('overload');

const NO_IDS: Uint32Array = new Uint32Array(0);

const VIEWER_OPTIONS = ['payloadBytes', 'sendPeriod', 'acks', 'viewRadius', 'groups', 'self', 'teleportDistance'] as const;
const SPECTATOR_OPTIONS = [...VIEWER_OPTIONS, 'at'] as const;

/**
 * The viewers of a {@link World} on top of its entities; not made on its own (make a World). Its
 * members are the World's.
 */
export class WorldViewers extends WorldEntities {
  #ticking = false;
  readonly #events: EventRouter;
  readonly #overload: WorldOverload;

  /** @internal `setup` from readWorldSetup (world-entities.ts). */
  protected constructor(config: WorldConfig, setup: WorldSetup) {
    super(config, setup);
    const settings = new Float64Array(3); // [payloadBytes, sendPeriod, viewRadius raw], read with nothing allocated
    this.#overload = new WorldOverload(config, setup.congestion, {
      read: (v) => {
        this[ENGINE].servedSettingsInto(v, settings);
        return { sendPeriod: settings[1], payloadBytes: settings[0], viewRadius: toMeters(settings[2]) };
      },
      write: (v, period, payload, radius) => {
        const what = (period === null ? 0 : CHANGE.sendPeriod) | (payload === null ? 0 : CHANGE.payloadBytes) | (radius === null ? 0 : CHANGE.viewRadius);
        if (what !== 0) this.#change(v, what, period ?? 0, payload ?? 0, radius === null ? 0 : viewRadiusRaw(this.config, radius));
      },
      readMany: (ids, out) => this[ENGINE].servedSettingsOf(ids, out),
      writeMany: (ids, what, period, payload, meters) => {
        const radius = new Float64Array(ids.length);
        for (let i = 0; i < ids.length; i++) if (what[i] & CHANGE.viewRadius) radius[i] = viewRadiusRaw(this.config, meters[i]);
        this.#changeMany(ids, what, period, payload, radius);
      },
    });
    this.#events = new EventRouter(() => this[ENGINE], this.positions, config, (v) => this.hasViewer(v));
  }

  // Getters keep the state off the object's own properties (what util.inspect shows).
  /** @internal Whether a tick's pass is running: viewer changes are deferred to its end then. */
  protected get [TICKING](): boolean {
    return this.#ticking;
  }
  /** @internal */
  protected set [TICKING](running: boolean) {
    this.#ticking = running;
  }
  /** @internal The viewers' events, and what a running tick defers. */
  protected get [EVENTS](): EventRouter {
    return this.#events;
  }
  /** @internal The shedding of the viewers' settings and congestion control. */
  protected get [OVERLOAD](): WorldOverload {
    return this.#overload;
  }

  /**
   * Registered viewers. During a tick, viewers added or removed during it count already (as in
   * {@link hasViewer}): each change was checked when asked for and is applied when the tick ends.
   */
  get viewerCount(): number {
    return this[ENGINE].viewerCount();
  }

  /**
   * Makes an entity's client a viewer: from the next tick it gets a packet every `sendPeriod`
   * ticks. Packets name the viewer by this avatar id. During a running tick the change is checked
   * now, queued, and takes effect when that tick ends (if the avatar is despawned meanwhile, the
   * viewer exists all the same and is skipped, as when the despawn follows the add outside a tick).
   * `options` may be omitted, `undefined` or `null`: every option takes its default.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (options not an object, acks not a boolean),
   *   ERR_SIGHTLINE_UNKNOWN_OPTION (a key that is not a {@link ViewerOptions} field),
   *   ERR_SIGHTLINE_INVALID_VIEWER_OPTION (payloadBytes or sendPeriod out of range),
   *   ERR_SIGHTLINE_VIEWER_EXISTS, ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_OUTPUT_FULL (the
   *   viewers' payloadBytes together would pass 4 GiB − 64 KiB, the most one output buffer holds),
   *   ERR_SIGHTLINE_OUT_OF_MEMORY (the viewer's tables could not be allocated; during a tick they
   *   are allocated by this call, so applying the add when the tick ends cannot fail).
   *
   * A spectator, `addViewer({ at: { x, y, z }, ...options })`, is a viewer without an avatar: the
   * world spawns a camera entity at `at` (m) in no visibility group (no viewer ever sees it),
   * makes it a viewer and returns its id, which names the viewer from then on (packets, settings,
   * removeViewer, which also despawns the camera). The game moves it like any entity. Its groups
   * cannot be set. Refused: a position and an avatar together (ERR_SIGHTLINE_INVALID_VIEWER_OPTION),
   * `self: true` (ERR_SIGHTLINE_INVALID_VIEWER_OPTION), a bad position (ERR_SIGHTLINE_INVALID_POSITION);
   * a refused spectator spawns nothing.
   */
  addViewer(avatar: EntityId, options?: ViewerOptions | null): void;
  addViewer(spectator: SpectatorOptions): EntityId;
  addViewer(avatar: EntityId | SpectatorOptions, options?: ViewerOptions | null): EntityId | void {
    this[REQUIRE_OPEN]();
    if (typeof avatar === 'object' && avatar !== null) return this.#addSpectator(avatar, options);
    if (typeof options === 'object' && options !== null && Object.prototype.hasOwnProperty.call(options, 'at')) {
      throw new SightlineError(
        'ERR_SIGHTLINE_INVALID_VIEWER_OPTION',
        `a spectator is given a position (addViewer({ at })) and no avatar, received entity ${describe(avatar)} and a position`,
      );
    }
    this.#addViewer(avatar, options);
  }

  #addSpectator(spectator: object, extra: unknown): EntityId {
    if (extra !== undefined) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_ARGUMENT', `a spectator's options go in its one object, addViewer({ at, ...options }), received a second argument ${describe(extra)}`);
    }
    const { at, ...options } = readOptions('addViewer', spectator, SPECTATOR_OPTIONS);
    if (at === undefined) throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `a spectator needs a position, addViewer({ at: { x, y, z } }), received none`);
    if (options.self !== undefined && options.self !== false) {
      throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `a spectator has no avatar to send: self must be false or left out, received ${describe(options.self)}`);
    }
    checkVec3(at);
    const camera = this.spawn(at as PositionInput);
    try {
      this[ENGINE].setGroups(camera, 0);
      this.#addViewer(camera, options);
    } catch (e) {
      this[ENGINE].despawn(camera);
      throw e;
    }
    this[CAMERAS].add(camera);
    return camera;
  }

  #addViewer(avatar: EntityId, options: unknown): void {
    const o = readOptions('addViewer', options, VIEWER_OPTIONS);
    const payloadBytes = o.payloadBytes === undefined ? this.config.payloadBytes : o.payloadBytes;
    const sendPeriod = o.sendPeriod === undefined ? 1 : o.sendPeriod;
    if (typeof payloadBytes !== 'number') throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `payloadBytes must be a number, received ${describe(payloadBytes)}`);
    if (typeof sendPeriod !== 'number') throw new SightlineError('ERR_SIGHTLINE_INVALID_VIEWER_OPTION', `sendPeriod must be a number, received ${describe(sendPeriod)}`);
    const acks = readBoolean('acks', o.acks, false);
    const radius = o.viewRadius === undefined ? 0 : viewRadiusRaw(this.config, o.viewRadius);
    const groups = o.groups === undefined ? ALL_GROUPS : groupsMask('groups', o.groups);
    const self = readBoolean('self', o.self, false);
    const teleport = o.teleportDistance === undefined ? 0 : teleportDistanceRaw(this.config, o.teleportDistance);
    try {
      this[ENGINE].addViewer(avatar, payloadBytes, sendPeriod, acks, radius, groups, self, teleport);
    } catch (e) {
      rethrow(e);
    }
    this.#overload.added(avatar, acks);
    if (this.#ticking) this.#events.viewerAdded(avatar);
  }

  /**
   * Serves a viewer every `ticks` ticks from now on (1 to 65535): the governor's cheapest lever.
   * Its sequence numbers, ghost table and acknowledgement log carry on; the viewer keeps its place
   * in the spread of phases (phase = its place mod the period). During a tick the change is
   * checked now and applied when the tick ends, in call order with the other viewer changes; it
   * takes effect at the viewer's next pass. Allocates nothing.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
   */
  setSendPeriod(viewer: EntityId, ticks: number): void {
    this.#change(viewer, CHANGE.sendPeriod, viewerNumber('sendPeriod', ticks), 0, 0);
    this.#overload.shedding.rebase(viewer, { sendPeriod: ticks });
  }

  /**
   * Sets a viewer's packet size, header included (28 + eventReserveBytes to 65,507 bytes), from
   * its next pass on. The viewers' payloadBytes together stay within what one output buffer holds
   * (4 GiB − 64 KiB), counting changes queued during a tick. For a viewer with `acks`, a larger
   * packet than it ever had grows its acknowledgement log, allocated by this call (so applying a
   * change queued during a tick cannot fail); sequences and the log's packets carry on. Deferred
   * during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION,
   *   ERR_SIGHTLINE_OUTPUT_FULL, ERR_SIGHTLINE_OUT_OF_MEMORY.
   */
  setPayloadBytes(viewer: EntityId, bytes: number): void {
    this.#change(viewer, CHANGE.payloadBytes, 0, viewerNumber('payloadBytes', bytes), 0);
    this.#overload.shedding.rebase(viewer, { payloadBytes: bytes });
  }

  /**
   * Sets a viewer's view radius in meters (more than 0, at most the config's `viewRadius`), from
   * its next pass on: its subscription box shrinks to the cells that cover it and its candidates
   * are the entities within it. Ghosts left outside a smaller radius depart by the grace rule, as
   * any ghost that stops being eligible: after `graceTicks` + 1 of the viewer's passes (sooner
   * when its table is full). Deferred during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION.
   */
  setViewRadius(viewer: EntityId, meters: number): void {
    const raw = viewRadiusRaw(this.config, meters);
    this.#change(viewer, CHANGE.viewRadius, 0, 0, raw);
    // The base as the engine holds it (raw units), so a shed viewer reads back what an unshed one does.
    this.#overload.shedding.rebase(viewer, { viewRadius: toMeters(raw) });
  }

  /**
   * {@link setSendPeriod}, {@link setPayloadBytes} and {@link setViewRadius} for many viewers in
   * one call into the engine: viewers[i] gets `sendPeriod[i]` (ticks), `payloadBytes[i]` (bytes)
   * and `viewRadius[i]` (m) of each array given, each array exactly as long as `viewers`; the same
   * as those setters called for i = 0, 1, … in turn (the packets after are byte-identical), at
   * one engine call's cost instead of one per viewer and setting. Each change takes effect at the
   * viewer's next pass; sequences, ghost tables and acknowledgement logs carry on; deferred during
   * a tick like {@link setSendPeriod}; for a viewer the governor or congestion control sheds
   * from, the change is its base, as with the setters. Checked as a whole before anything
   * changes: a throw leaves every viewer as it was.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (viewers not a Uint32Array, settings not an object, an
   *   array given not `viewers.length` long), ERR_SIGHTLINE_UNKNOWN_OPTION,
   *   ERR_SIGHTLINE_INVALID_VIEWER_OPTION (a value not a number, NaN, or out of range, as the
   *   setters say), ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_OUTPUT_FULL,
   *   ERR_SIGHTLINE_OUT_OF_MEMORY; each message names the element.
   */
  setViewerSettings(viewers: Uint32Array, settings: ViewerSettingsBatch): void {
    this[REQUIRE_OPEN]();
    const b = readViewerBatch(this.config, viewers, settings);
    this.#changeMany(viewers, b.what, b.sendPeriod, b.payloadBytes, b.viewRadius);
    this.#overload.shedding.rebaseMany(viewers, b.what, b.sendPeriod, b.payloadBytes, b.meters);
  }

  #changeMany(ids: Uint32Array, what: Uint8Array, period: Float64Array, payload: Float64Array, radiusRaw: Float64Array): void {
    try {
      this[ENGINE].changeViewers(ids, what, period, payload, radiusRaw);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Makes the viewer's next pass a teleport, as a move of its avatar further than its
   * `teleportDistance` does: every ghost outside its view radius at the place it is then departs
   * in that packet, ahead of its other despawns (at most the despawn budget, half a packet's state
   * bytes, a packet; the rest in the packets after, still ahead of later ones), instead of after
   * the grace window. The new surroundings then arrive by score: all new, so with the default
   * band weights (falling with distance) nearest first. Sequences and settings carry on. Call it
   * when the game moves the avatar (or a spectator's camera); during a tick it applies to the
   * first pass after.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_ENTITY.
   */
  teleportViewer(viewer: EntityId): void {
    this[REQUIRE_OPEN]();
    try {
      this[ENGINE].teleportViewer(viewer);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Sets the visibility groups a viewer sees (a 32-bit mask; default every group): an entity is
   * its candidate only where their groups meet (entity groups & viewer groups ≠ 0). The ghosts it
   * may no longer see depart at its next pass, their despawns ahead of the others (up to the
   * despawn budget: half a packet's state bytes). Deferred during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_ARGUMENT (not an integer from
   *   -2^31 to 2^32 - 1).
   */
  setViewerGroups(viewer: EntityId, groups: number): void {
    this.#change(viewer, CHANGE.groups, 0, 0, 0, groupsMask('groups', groups));
  }

  /**
   * Boosts, for this viewer only, the priority of up to 64 entities (its party): their scores are
   * multiplied by `factor` (1 to 16; 1, or an empty list, clears the boost), on top of their own
   * weight ({@link setPriority}). Replaces the viewer's previous set. The ids need not be live;
   * a despawned one simply matches nothing. Deferred during a tick like {@link setSendPeriod}.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_INVALID_VIEWER_OPTION (factor not an
   *   integer from 1 to 16, more than 64 entities), ERR_SIGHTLINE_INVALID_ARGUMENT (not a list of
   *   entity ids).
   */
  setBoost(viewer: EntityId, entities: readonly EntityId[], factor: number): void {
    const ids = boostSet(entities, factor);
    this.#change(viewer, CHANGE.boost, 0, 0, 0, ALL_GROUPS, factor, ids);
  }

  /**
   * A viewer's settings as last set: changes asked for during a running tick are included (they
   * apply when it ends). `viewRadius` in meters; `boost.entities` sorted, without repeats. These
   * are the game's settings: while the tick governor or congestion control sheds from a viewer,
   * the engine serves it less often, with smaller packets or radius ({@link servedSettings}); the
   * game's own setters keep changing the settings shedding starts from.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  viewerSettings(viewer: EntityId): ViewerSettings {
    const s = this.servedSettings(viewer);
    const base = this.#overload.shedding.base(viewer);
    return base === undefined ? s : { ...s, ...base };
  }

  /**
   * The settings the engine serves a viewer with: {@link viewerSettings}, less what the tick
   * governor and congestion control shed (a longer send period, smaller packets or radius).
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  servedSettings(viewer: EntityId): ViewerSettings {
    try {
      const s = this[ENGINE].viewerSettings(viewer);
      return {
        payloadBytes: s.payloadBytes,
        sendPeriod: s.sendPeriod,
        viewRadius: toMeters(s.viewRadius),
        acks: s.acks,
        groups: s.groups,
        boost: { entities: Array.from(s.boost), factor: s.boost.length === 0 ? 1 : s.boostFactor },
      };
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Congestion control's view of a viewer added with `{ acks: true }` (see
   * {@link WorldOptions.congestion}): mode, smoothed round-trip time and loss, packets tracked,
   * acknowledged and lost. Null when congestion control is off, the viewer has no acks, or none
   * of its packets has gone out yet.
   * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (an id not a number), ERR_SIGHTLINE_INVALID_ENTITY,
   *   ERR_SIGHTLINE_UNKNOWN_VIEWER (not a viewer), as the other viewer getters.
   */
  congestionStats(viewer: EntityId): CongestionStats | null {
    this[REQUIRE_OPEN]();
    this.servedSettings(viewer); // the id's checks, and that it is a viewer
    return this.#overload.congestionStats(viewer);
  }

  /** The viewers' avatar ids, in the engine's viewer order (a copy). Not during a tick: viewers added or removed during it are applied when it ends. */
  viewerIds(): Uint32Array {
    return this[ENGINE].viewerIds();
  }

  /** @internal The shedding of this world's viewer settings (the tick governor's levers). */
  get shedding(): ViewerShedding {
    return this.#overload.shedding;
  }

  #change(
    viewer: EntityId,
    what: number,
    sendPeriod: number,
    payloadBytes: number,
    viewRadius: number,
    groups = ALL_GROUPS,
    boostFactor = 1,
    boost = NO_IDS,
  ): void {
    this[REQUIRE_OPEN]();
    try {
      this[ENGINE].changeViewer(viewer, what, sendPeriod, payloadBytes, viewRadius, groups, boostFactor, boost);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Stops serving a viewer and forgets its ghost table. Safe during a tick: it takes effect after
   * the pass, and every other viewer is served. @throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
   */
  removeViewer(avatar: EntityId): void {
    try {
      this[ENGINE].removeViewer(avatar);
      if (this[CAMERAS].delete(avatar) && this[ENGINE].isLive(avatar)) this[ENGINE].despawn(avatar);
    } catch (e) {
      rethrow(e);
    }
    this.#overload.removed(avatar);
    if (this.#ticking) this.#events.viewerRemoved(avatar);
  }

  /**
   * Applies a client's acknowledgement to a viewer added with `{ acks: true }`: `ack` is the newest
   * packet sequence the client received (u16), bit i of `ackBits` (u32) says whether sequence
   * ack - 1 - i was received. A packet left out by an acknowledgement 3 or more sequences newer is
   * probably lost: its records regain their priority. Left out by one more than 32 newer, it is lost
   * for certain: the ghosts it introduced are forgotten (announced again when eligible) and its
   * despawns resent; so a client must drop packets more than 32 sequences older than the newest it
   * has. A ghost never acknowledged regains the priority of a new candidate when its packet is
   * probably lost (an entity that never moves is announced again too). The first acknowledgement
   * of a viewer also settles the packets taken as assumed delivered before it (see
   * {@link ackStats}): the ghosts only they announced are handled as lost for certain. During a tick it is checked when called, against the packets sent before that tick (a
   * sequence never sent is refused then, as after it), and applied when the tick ends, in call
   * order with the events emitted during the tick.
   * @throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_ACKS_DISABLED, ERR_SIGHTLINE_INVALID_ACK.
   */
  acknowledge(viewer: EntityId, ack: number, ackBits: number): void {
    let deferred: boolean;
    try {
      // During a tick the engine only checks it: it is applied when the tick ends, in call order
      // with the events emitted during the tick (an acknowledgement may retire a viewer's events,
      // or tell that its client no longer holds an entity).
      deferred = this[ENGINE].acknowledge(viewer, ack, ackBits);
    } catch (e) {
      rethrow(e);
    }
    this.#overload.acknowledged(viewer, ack, ackBits);
    if (deferred) this.#events.deferAcknowledgement(viewer, ack, ackBits);
  }

  /**
   * Packets resolved for a viewer with acks: acknowledged; lost for certain (left out by an
   * acknowledgement more than 32 sequences newer, or expired); expired (64 packets went by without
   * a word, from a client that had acknowledged before: an outage; what they carried is sent again);
   * assumed delivered (64 packets went by from a client that had never acknowledged: their
   * announcements wait for the first acknowledgement, their despawns are sent again then (the
   * newest 2 × ghostCap of them), their events are still resent); probably lost (left out by one 3
   * or more newer: their records regained priority at once); despawnsNotResent (despawns that will
   * not be sent again although they may be lost: found lost while 2 × ghostCap others already
   * waited to be sent again, or pushed out of the 2 × ghostCap newest despawns of assumed packets;
   * the client may keep those entities, so this bounds how many it holds that the server no longer
   * accounts for).
   */
  ackStats(viewer: EntityId): { acked: number; lost: number; assumed: number; probablyLost: number; expired: number; despawnsNotResent: number } | null {
    try {
      return this[ENGINE].ackStats(viewer);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Whether `avatar` is a viewer. During a tick the answer counts the viewers added or removed
   * during it (applied when it ends); {@link ackStats} and {@link eventStats} describe the viewers
   * the running pass serves, so until the tick ends a viewer added during it has none
   * (`ERR_SIGHTLINE_UNKNOWN_VIEWER`) and one removed during it still has its own. False for anything
   * that is not an entity id, as {@link isLive}.
   */
  hasViewer(avatar: EntityId): boolean {
    this[REQUIRE_OPEN]();
    if (!isId(avatar)) return false;
    try {
      return this[ENGINE].hasViewer(avatar);
    } catch (e) {
      rethrow(e);
    }
  }

  /**
   * Queues a reliable event (a death, a chat line: opaque bytes, 1 to eventReserveBytes − 5) for
   * the viewers a target names:
   * - `{ viewer }`: one viewer;
   * - `{ holders: entity }`: every viewer whose client holds that entity;
   * - `{ near: { x, y }, radius }`: every viewer whose avatar is within `radius` meters (2D) of
   *   the point.
   * Events ride in the packets' event reserve (`eventReserveBytes` in the config), in order,
   * exactly once, resent until a packet carrying them is acknowledged; only viewers added with
   * `{ acks: true }` take events (multi-viewer targets skip the others). Each viewer's queue holds
   * 64 unacknowledged events: for a `{ viewer }` target a full queue throws
   * `ERR_SIGHTLINE_EVENT_QUEUE_FULL`; for the others the viewer is skipped and the drop counted
   * ({@link eventsDropped}). During a tick, events are queued and applied when the tick ends, in
   * call order with that tick's addViewer and removeViewer calls (the viewers they reach are those
   * the same calls between ticks would reach: a viewer added after the emit does not get it, and
   * a `{ viewer }` removed after it, even if added again, loses it, counted in {@link eventsDropped};
   * a `{ near }` target is measured when `emit` is called, so avatars moved or despawned after it
   * do not change who gets it; a `{ holders }` target is measured when the tick ends, after the
   * pass: a client whose packet of that tick despawned the entity no longer holds it and does not
   * get the event, uncounted (the pass changes who holds what while it runs, so there is no earlier
   * moment to measure); acknowledgements made during the tick apply in call order with the events);
   * the target is checked in full when `emit` is called, and a `{ viewer }` that takes no events
   * throws then too (a viewer added during that tick is checked when the tick ends: an event it
   * cannot take is counted in {@link eventsDropped}). Applying queued events never makes the
   * tick's promise reject. Returns the number of viewers the event was queued for (0 while deferred).
   * @throws Checked in this order: ERR_SIGHTLINE_INVALID_ARGUMENT (bytes not a Uint8Array; a target
   *   that is not exactly one of the three forms, a viewer or holders that is not an integer entity
   *   id from 0 to 2^32 - 1, a near.x / near.y that is not finite, a radius that is not finite and
   *   ≥ 0), ERR_SIGHTLINE_EVENTS_DISABLED (the config has no event reserve: eventReserveBytes 0),
   *   ERR_SIGHTLINE_INVALID_ARGUMENT (empty bytes), ERR_SIGHTLINE_EVENT_TOO_LARGE,
   *   ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_EVENTS_DISABLED (a `{ viewer }` added without
   *   acks), ERR_SIGHTLINE_EVENT_QUEUE_FULL (not while deferred).
   */
  emit(bytes: Uint8Array, target: EventRecipients): number {
    this[REQUIRE_OPEN]();
    return this.#events.emit(bytes, target, this.#ticking);
  }

  /**
   * Events not queued for a viewer: its queue was full (multi-viewer targets and deferred events),
   * or a deferred event could not be applied when its tick ended (its viewer takes no events, or
   * was removed during that tick).
   */
  get eventsDropped(): number {
    return this.#events.dropped;
  }

  /** A viewer's events: queued so far, dropped (queue full), pending (not yet acknowledged); null if it takes none. */
  eventStats(viewer: EntityId): { queued: number; dropped: number; pending: number } | null {
    try {
      return this[ENGINE].eventStats(viewer);
    } catch (e) {
      rethrow(e);
    }
  }
}
