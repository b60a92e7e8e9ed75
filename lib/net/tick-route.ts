// The shared half of an adapter's sendTick: route each packet of a tick to its viewer's session,
// copy the routed packets into one buffer (the engine reuses its own two ticks later; a queued
// send may outlive that), stamp each copy for its session and hand it to the adapter's send.
import { nowMs } from './options.js';
import type { Endpoint, Session, SessionHost } from './session-host.js';
import type { EntityId } from '../world.js';
import type { TickPackets } from './transport.js';

/** Reused lists of one adapter (no allocation per tick beyond the copy). */
export interface RouteScratch<P extends Endpoint> {
  readonly sessions: Session<P>[];
  readonly views: Uint8Array[];
}

/** What the adapter decides and does. */
export interface RouteHooks<P extends Endpoint> {
  /** False: this session's packet is skipped (the hook counts why). Default: every session is ready. */
  ready?(s: Session<P>): boolean;
  /** False: this packet and the rest of the tick are dropped (`packetsDropped`). */
  canSend(): boolean;
  /** Sends one stamped copy. */
  issue(copy: Uint8Array, s: Session<P>): void;
}

/**
 * Sends a tick's packets through an adapter: viewers without a session are skipped
 * (`packetsUnrouted`), sessions `ready` refuses are skipped, and sends stop at the first
 * `canSend` refusal (the rest counted in `packetsDropped`). Returns the packets issued. The
 * result's own errors (an expired result) propagate before anything is sent.
 */
export function sendTickVia<P extends Endpoint>(host: SessionHost<P>, result: TickPackets, scratch: RouteScratch<P>, hooks: RouteHooks<P>): number {
  const c = host.counters;
  const n = result.count;
  const byViewer = host.byViewer;
  const { sessions, views } = scratch;
  let total = 0;
  let unrouted = 0;
  try {
    for (let i = 0; i < n; i++) {
      const s = byViewer.get(result.viewerAt(i));
      if (s === undefined) {
        unrouted++;
        continue;
      }
      if (hooks.ready !== undefined && !hooks.ready(s)) continue;
      const b = result.bytesAt(i);
      sessions.push(s);
      views.push(b);
      total += b.length;
    }
    c.packetsUnrouted += unrouted;
    const m = sessions.length;
    let issued = 0;
    if (m > 0) {
      const arena = Buffer.allocUnsafeSlow(total);
      const now = nowMs();
      let off = 0;
      for (let j = 0; j < m; j++) {
        if (!hooks.canSend()) {
          c.packetsDropped += m - j;
          break;
        }
        const s = sessions[j];
        const len = views[j].length;
        arena.set(views[j], off);
        const copy = arena.subarray(off, off + len);
        off += len;
        host.stamp(s, copy, now);
        hooks.issue(copy, s);
        c.packetsSent++;
        c.bytesSent += len;
        issued++;
      }
    }
    return issued;
  } finally {
    sessions.length = 0;
    views.length = 0;
  }
}

/**
 * Sends one packet (copied and stamped) to a viewer's session through an adapter: false when
 * there is none (`packetsUnrouted`), when `ready` refuses it, or when `canSend` does
 * (`packetsDropped`).
 */
export function sendOneVia<P extends Endpoint>(host: SessionHost<P>, viewer: EntityId, bytes: Uint8Array, open: boolean, hooks: RouteHooks<P>): boolean {
  const c = host.counters;
  const s = open ? host.byViewer.get(viewer) : undefined;
  if (s === undefined) {
    c.packetsUnrouted++;
    return false;
  }
  if (hooks.ready !== undefined && !hooks.ready(s)) return false;
  if (!hooks.canSend()) {
    c.packetsDropped++;
    return false;
  }
  const copy = Buffer.from(bytes);
  host.stamp(s, copy, nowMs());
  hooks.issue(copy, s);
  c.packetsSent++;
  c.bytesSent += copy.length;
  return true;
}
