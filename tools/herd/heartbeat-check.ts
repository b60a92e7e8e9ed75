// What both kinds of bots share (bots.ts, native-bots.ts): what they connect with, their checks
// of the heartbeat events they receive, what their worlds believe, the bot process's CPU time.
import { WorldConfig, type WorldConfigInput } from 'sightline';
import type { ClientWorld } from 'sightline/net';
import { decodeHeartbeat, type BotBelief, type BotEventCounts, type BotStartMessage } from './bot-messages.js';

/** Checks each heartbeat a client receives against the ones before it. */
export class HeartbeatCheck {
  received = 0;
  inOrder = 0;
  duplicates = 0;
  gaps = 0;
  outOfOrder = 0;
  foreign = 0;
  readonly #seen = new Set<number>();
  #last = -1;

  /** Distinct heartbeats received. */
  get distinct(): number {
    return this.#seen.size;
  }

  /** Takes one delivered event. */
  take(bytes: Uint8Array): void {
    this.received++;
    const n = decodeHeartbeat(bytes);
    if (n < 0) {
      this.foreign++;
      return;
    }
    if (this.#seen.has(n)) {
      this.duplicates++;
      return;
    }
    this.#seen.add(n);
    if (this.#last < 0 || n === this.#last + 1) this.inOrder++;
    else if (n > this.#last) this.gaps += n - this.#last - 1;
    else this.outOfOrder++;
    if (n > this.#last) this.#last = n;
  }

  /** The report's event counts: these checks, and what the client's world ignored or skipped. */
  counts(copiesIgnored: number, skipped: number): BotEventCounts {
    const { received, distinct, inOrder, duplicates, gaps, outOfOrder, foreign } = this;
    return { received, distinct, inOrder, duplicates, gaps, outOfOrder, foreign, copiesIgnored, skipped };
  }
}

/** CPU time this process has used (its native threads included), ms. */
export function cpuMs(): { user: number; system: number } {
  const cpu = process.cpuUsage();
  return { user: cpu.user / 1000, system: cpu.system / 1000 };
}

/** A client's held entities and their raw positions as of its newest packet; undefined before its first. */
export function beliefOf(avatar: number, world: ClientWorld): BotBelief | undefined {
  if (world.newestSequence < 0) return undefined;
  const n = world.size;
  const ids = new Uint32Array(n);
  const x = new Int32Array(n);
  const y = new Int32Array(n);
  let i = 0;
  for (const e of world.entities.values()) {
    ids[i] = e.id;
    x[i] = e.rawX;
    y[i] = e.rawY;
    i++;
  }
  return { avatar, tick: world.newestTick, ids, x, y };
}

/**
 * What a bot connects with: the server's WorldConfig when the start message carries its authored
 * configuration (its packets have fields or attributes), else its protocol hash alone.
 */
export function protocolOf(start: BotStartMessage): WorldConfig | number {
  return start.config === undefined ? start.protocolHash : WorldConfig.build(start.config as WorldConfigInput);
}
