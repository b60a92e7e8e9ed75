// What a World keeps for overload: the shedding of its viewers' settings (governor, congestion
// control) and congestion control itself, fed by the World's acknowledgements and ticks.
import { CongestionControl, type CongestionOptions, type CongestionStats } from './congestion.js';
import type { WorldConfig } from './config.js';
import { toMeters } from './fixed.js';
import { CHANGE } from './interest.js';
import { ViewerShedding, type EngineSettings } from './shedding.js';
import type { TickResult } from './tick-result.js';
import type { EntityId } from './world-types.js';

/** The World calls this engine-side: read and write a viewer's settings (viewRadius in meters). */
export interface SettingsAccess {
  read(viewer: EntityId): EngineSettings;
  write(viewer: EntityId, sendPeriod: number | null, payloadBytes: number | null, viewRadius: number | null): void;
  /** out[3i .. 3i + 2] = payloadBytes, sendPeriod, viewRadius (raw) of viewers[i], in one engine call. */
  readMany(viewers: Uint32Array, out: Float64Array): void;
  /**
   * Viewer ids[i] gets the settings named by what[i] (CHANGE bits of sendPeriod, payloadBytes,
   * viewRadius) in one engine call, checked as a whole (a throw changes nothing); viewRadius in meters.
   */
  writeMany(viewers: Uint32Array, what: Uint8Array, sendPeriod: Float64Array, payloadBytes: Float64Array, viewRadius: Float64Array): void;
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
      readMany: (ids, out) => {
        access.readMany(ids, out);
        // Engine order (payloadBytes, sendPeriod, radius raw) → shedding's (sendPeriod, payloadBytes, m).
        for (let i = 0; i < 3 * ids.length; i += 3) {
          const payload = out[i];
          out[i] = out[i + 1];
          out[i + 1] = payload;
          out[i + 2] = toMeters(out[i + 2]);
        }
      },
      writeMany: (ids, s) => {
        // Only the fields that differ from what the engine has, as write does; viewers with none
        // are left out.
        const n = ids.length;
        const now = new Float64Array(3 * n);
        access.readMany(ids, now);
        const to = new Uint32Array(n);
        const what = new Uint8Array(n);
        const period = new Float64Array(n);
        const payload = new Float64Array(n);
        const radius = new Float64Array(n);
        let k = 0;
        for (let i = 0; i < n; i++) {
          const p = s[3 * i];
          const b = s[3 * i + 1];
          const r = s[3 * i + 2];
          const w = (p === now[3 * i + 1] ? 0 : CHANGE.sendPeriod) | (b === now[3 * i] ? 0 : CHANGE.payloadBytes) | (r === toMeters(now[3 * i + 2]) ? 0 : CHANGE.viewRadius);
          if (w === 0) continue;
          to[k] = ids[i];
          what[k] = w;
          period[k] = p;
          payload[k] = b;
          radius[k] = r;
          k++;
        }
        if (k > 0) access.writeMany(to.subarray(0, k), what.subarray(0, k), period.subarray(0, k), payload.subarray(0, k), radius.subarray(0, k));
      },
      minPayloadBytes: config.minPayloadBytes,
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
