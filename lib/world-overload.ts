// What a World keeps for overload: the shedding of its viewers' settings (governor, congestion
// control) and congestion control itself, fed by the World's acknowledgements and ticks.
import { CongestionControl, type CongestionOptions, type CongestionStats } from './congestion.js';
import type { WorldConfig } from './config.js';
import { ViewerShedding, type EngineSettings } from './shedding.js';
import type { TickResult } from './tick-result.js';
import type { EntityId } from './world-types.js';

/** The World calls this engine-side: read and write a viewer's settings (viewRadius in meters). */
export interface SettingsAccess {
  read(viewer: EntityId): EngineSettings;
  write(viewer: EntityId, sendPeriod: number | null, payloadBytes: number | null, viewRadius: number | null): void;
}

/** A World's overload state: one per World. */
export class WorldOverload {
  readonly shedding: ViewerShedding;
  readonly congestion: CongestionControl | null;
  // Viewers with acknowledgements: congestion control tracks their packets.
  readonly #acking = new Set<EntityId>();

  /** `congestion`: the World's option as readCongestion returns it (null: off). */
  constructor(config: WorldConfig, congestion: Required<CongestionOptions> | null, access: SettingsAccess) {
    this.congestion = congestion === null ? null : new CongestionControl(congestion);
    this.shedding = new ViewerShedding({
      read: (v) => access.read(v),
      write: (v, s) => {
        const now = access.read(v);
        access.write(
          v,
          s.sendPeriod === now.sendPeriod ? null : s.sendPeriod,
          s.payloadBytes === now.payloadBytes ? null : s.payloadBytes,
          s.viewRadius === now.viewRadius ? null : s.viewRadius,
        );
      },
      minPayloadBytes: 28 + config.eventReserveBytes,
    });
  }

  /** A viewer was added (with or without acknowledgements). */
  added(viewer: EntityId, acks: boolean): void {
    if (acks) this.#acking.add(viewer);
  }

  /** A viewer was removed. */
  removed(viewer: EntityId): void {
    this.#acking.delete(viewer);
    this.congestion?.forget(viewer);
    this.shedding.forget(viewer);
  }

  /** An acknowledgement the engine accepted. */
  acknowledged(viewer: EntityId, ack: number, ackBits: number): void {
    const c = this.congestion;
    if (c !== null) c.acknowledged(viewer, ack, ackBits, c.options.clock());
  }

  /** A tick resolved: its packets are handed off now; modes move on. */
  ticked(result: TickResult): void {
    const c = this.congestion;
    if (c === null || this.#acking.size === 0) return;
    const now = c.options.clock();
    for (let i = 0; i < result.count; i++) {
      const v = result.viewerAt(i);
      if (!this.#acking.has(v)) continue;
      const b = result.bytesAt(i);
      c.sent(v, b[2] | (b[3] << 8), now);
    }
    c.update(now, (v, shed) => {
      if (this.#acking.has(v)) this.shedding.set('congestion', v, shed);
    });
  }

  /** Congestion control's figures for a viewer (null: off, no acks, or nothing sent yet). */
  congestionStats(viewer: EntityId): CongestionStats | null {
    return this.congestion?.stats(viewer) ?? null;
  }
}
