// Per-client congestion control: the good/bad mode on an injected clock, then a World whose one
// client sits behind a lossy or capped LossyLink: that client's rate falls, what it perceives
// stays close to the truth, and every other client gets the very packets it would have got.
import { describe, expect, it } from 'vitest';
import { CongestionControl, readCongestion } from '../lib/congestion.js';
import { WorldConfig } from '../lib/config.js';
import { ClientWorld, LossyLink } from '../lib/net/index.js';
import { World } from '../lib/world.js';
import { createHerd } from '../tools/herd/scenarios.js';
import { rng, withSeed } from './helpers/model.js';
import type { Shed } from '../lib/shedding.js';

describe('CongestionControl', () => {
  const make = (options: object = {}) => {
    let now = 0;
    const cc = new CongestionControl(readCongestion({ smoothing: 1, minSamples: 4, clock: () => now, ...options })!);
    const changes: [number, Shed][] = [];
    let seq = 0;
    // One packet to viewer 7 every 50 ms, acknowledged `rtt` ms later unless lost.
    const tick = (rtt: number): void => {
      cc.sent(7, seq, now);
      cc.acknowledged(7, seq, 0xffffffff, now + rtt);
      seq = (seq + 1) & 0xffff;
      now += 50;
      cc.update(now, (v, shed) => changes.push([now, shed]));
    };
    return { cc, changes, tick, at: () => now };
  };

  it('measures the round-trip time to the acknowledgement that names a packet newest', () => {
    const { cc, tick } = make({ smoothing: 0.5 });
    tick(20);
    expect(cc.stats(7)!.rttMs).toBe(20);
    tick(40);
    expect(cc.stats(7)!.rttMs).toBe(30);
    expect(cc.stats(7)).toMatchObject({ mode: 'good', sent: 2, acked: 2, lost: 0, loss: 0 });
    expect(cc.stats(8)).toBeNull();
  });

  it('counts a packet left out by an acknowledgement 3 sequences newer as lost, and a late one as delivered', () => {
    const cc = new CongestionControl(readCongestion({ smoothing: 0.5 })!);
    for (let s = 0; s < 6; s++) cc.sent(1, s, 0);
    // 5 received with the bits of 4, 3 and 1 (so 2 and 0 missing): 2 and 0 are 3 and 5 older.
    cc.acknowledged(1, 5, 0b1011, 10);
    expect(cc.stats(1)).toMatchObject({ acked: 4, lost: 2 });
  });

  it("goes bad at once when congested, back to good after the penalty, doubling it when it falls back within settleMs, halving it after settleMs of good", () => {
    const { cc, changes, tick } = make({ penaltyMs: 1000, settleMs: 3000, maxPenaltyMs: 8000, minPenaltyMs: 500 });
    for (let i = 0; i < 10; i++) tick(10);
    expect(changes).toEqual([]);
    tick(400); // RTT above 250 ms
    expect(changes.length).toBe(1);
    expect(changes[0][1]).toEqual({ period: 2, payload: 0.5, radius: 1 });
    expect(cc.stats(7)).toMatchObject({ mode: 'bad', congestions: 1, penaltyMs: 1000 });
    // Good again: 1 s of good conditions (20 ticks) brings it back.
    for (let i = 0; i < 19; i++) tick(10);
    expect(cc.stats(7)!.mode).toBe('bad');
    tick(10);
    tick(10);
    expect(cc.stats(7)!.mode).toBe('good');
    expect(changes[1][1]).toEqual({ period: 1, payload: 1, radius: 1 });
    // Congested again within 3 s: the penalty doubles.
    tick(400);
    expect(cc.stats(7)).toMatchObject({ mode: 'bad', congestions: 2, penaltyMs: 2000 });
    for (let i = 0; i < 41; i++) tick(10);
    expect(cc.stats(7)!.mode).toBe('good');
    // 3 s of good halves it, and again, to the floor.
    for (let i = 0; i < 60; i++) tick(10);
    expect(cc.stats(7)!.penaltyMs).toBe(1000);
    for (let i = 0; i < 200; i++) tick(10);
    expect(cc.stats(7)!.penaltyMs).toBe(500);
  });

  it('loss alone congests, once minSamples packets are resolved', () => {
    const cc = new CongestionControl(readCongestion({ smoothing: 0.5, minSamples: 4 })!);
    const modes: string[] = [];
    for (let s = 0; s < 10; s++) cc.sent(3, s, 0);
    cc.update(0, () => modes.push('changed'));
    expect(cc.stats(3)!.mode).toBe('good');
    // Only the newest arrives: the 7 that are 3 or more older are lost.
    cc.acknowledged(3, 9, 0, 1);
    cc.update(1, () => modes.push('changed'));
    expect(cc.stats(3)).toMatchObject({ mode: 'bad', lost: 7, acked: 1 });
    expect(modes).toEqual(['changed']);
  });

  it('refuses bad options', () => {
    for (const bad of [{ rttThresholdMs: 0 }, { lossThreshold: 2 }, { smoothing: 0 }, { minSamples: 0 }, { badPeriod: 1.5 }, { badPayload: 0 }, { minPenaltyMs: 10, maxPenaltyMs: 5 }, { clock: 3 }]) {
      expect(() => readCongestion(bad), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(() => readCongestion({ rtt: 1 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' }));
    expect(() => new World(WorldConfig.build(), { capacity: 8, congestion: { badPeriod: 0 } })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
  });
});

// Four clients with acks on a LossyLink, 400 ticks; client 0's packets pass through `drop`.
interface LinkRun {
  /** Per client, every packet produced for it, in order. */
  packets: Buffer[][];
  /** Client 0: packets produced per tick. */
  sentPerTick: number[];
  /** Client 0: the largest distance between what its client holds and the truth, m, per tick. */
  worstErrorM: number[];
  world: World;
}

async function linkRun(drop: ((bytes: Uint8Array, tick: number) => boolean) | undefined, congestion: boolean): Promise<LinkRun> {
  const config = WorldConfig.build();
  let tick = 0;
  const world = new World(config, { capacity: 1024, threads: 1, congestion: congestion ? { clock: () => tick * 50 } : false });
  const herd = createHerd(world, { scenario: 'town-square', entities: 400, viewers: 0, seed: 9 });
  const avatars = Array.from(herd.ids.subarray(0, 4));
  let next = 0;
  const link = new LossyLink({
    world,
    seed: 3,
    onConnect: () => {
      const a = avatars[next++];
      world.addViewer(a, { acks: true });
      return a;
    },
    drop: drop === undefined ? undefined : (viewer, bytes) => viewer === avatars[0] && drop(bytes, tick),
  });
  const clients = avatars.map(() => new ClientWorld(config));
  clients.forEach((c, i) => link.connect(`client-${i}`, c));
  const packets: Buffer[][] = avatars.map(() => []);
  const sentPerTick: number[] = [];
  const worstErrorM: number[] = [];
  for (; tick < 400; tick++) {
    herd.step();
    const result = await world.tick();
    let sent = 0;
    for (let i = 0; i < result.count; i++) {
      const k = avatars.indexOf(result.viewerAt(i));
      packets[k].push(Buffer.from(result.bytesAt(i)));
      if (k === 0) sent++;
    }
    sentPerTick.push(sent);
    link.sendTick(result);
    link.step();
    let worst = 0;
    for (const [id, e] of clients[0].entities) {
      if (!world.isLive(id)) continue;
      const s = world.slotOf(id);
      worst = Math.max(worst, Math.hypot(e.rawX - world.positions.x[s], e.rawY - world.positions.y[s]) / 1024);
    }
    worstErrorM.push(worst);
  }
  return { packets, sentPerTick, worstErrorM, world };
}

const sum = (a: number[]): number => a.reduce((x, y) => x + y, 0);

describe('congestion control on a LossyLink', () => {
  it('20% loss on one client: its send rate falls, its error stays bounded, the others get the same packets as without it', async () => {
    await withSeed(21, async () => {
      const r = rng(21);
      const lossy = await linkRun(() => r() < 0.2, true);
      const clean = await linkRun(undefined, true);
      for (let k = 1; k < 4; k++) {
        expect(lossy.packets[k].length).toBe(clean.packets[k].length);
        lossy.packets[k].forEach((p, i) => expect(p.equals(clean.packets[k][i]), `client ${k} packet ${i}`).toBe(true));
      }
      // Served every tick at first; in bad mode (period 2) from the first second on.
      expect(sum(clean.sentPerTick.slice(100))).toBe(300);
      expect(sum(lossy.sentPerTick.slice(100))).toBeLessThanOrEqual(160);
      expect(lossy.world.congestionStats(lossy.world.viewerIds()[0])).toMatchObject({ mode: 'bad' });
      const s = lossy.world.congestionStats(lossy.world.viewerIds()[0])!;
      expect(s.loss).toBeGreaterThan(0.05);
      expect(s.lost).toBeGreaterThan(10);
      expect(lossy.world.servedSettings(lossy.world.viewerIds()[0])).toMatchObject({ sendPeriod: 2, payloadBytes: 600 });
      expect(lossy.world.viewerSettings(lossy.world.viewerIds()[0])).toMatchObject({ sendPeriod: 1, payloadBytes: 1200 });
      // What it holds stays within a few meters of the truth (walking speed, 1.5 m/s), and does not
      // drift away: the worst of the last 100 ticks is no worse than that of ticks 50-200.
      const early = Math.max(...lossy.worstErrorM.slice(50, 200));
      const late = Math.max(...lossy.worstErrorM.slice(300));
      if (process.env.CC_DEBUG) console.log({ early, late, clean: Math.max(...clean.worstErrorM.slice(50)) });
      expect(early).toBeLessThan(12);
      expect(late).toBeLessThan(Math.max(12, 1.5 * early));
      lossy.world.close();
      clean.world.close();
    });
  });

  it('a bandwidth cap on one client: it backs off below the cap and recovers in turns, the others untouched', async () => {
    // A token bucket: 600 bytes a tick (12 kB/s at 20 Hz), a burst of 1,200; a packet over it is dropped.
    let tokens = 1200;
    let lastTick = 0;
    const capped = await linkRun((bytes, tick) => {
      tokens = Math.min(1200, tokens + 600 * (tick - lastTick));
      lastTick = tick;
      if (tokens < bytes.length) return true;
      tokens -= bytes.length;
      return false;
    }, true);
    const clean = await linkRun(undefined, true);
    for (let k = 1; k < 4; k++) lossyEqual(capped.packets[k], clean.packets[k]);
    const bytesPerTick = capped.packets[0].slice(100).reduce((n, p) => n + p.length, 0) / 300;
    expect(bytesPerTick).toBeLessThan(0.8 * 1200);
    const s = capped.world.congestionStats(capped.world.viewerIds()[0])!;
    expect(s.congestions).toBeGreaterThanOrEqual(1);
    expect(Math.max(...capped.worstErrorM.slice(50))).toBeLessThan(6);
    capped.world.close();
    clean.world.close();
  });

  it('off (the default), a lossy client keeps its rate', async () => {
    const r = rng(22);
    const off = await linkRun(() => r() < 0.2, false);
    expect(sum(off.sentPerTick)).toBe(400);
    expect(off.world.congestionStats(off.world.viewerIds()[0])).toBeNull();
    // The id is checked as by the other viewer getters, on or off.
    const notViewer = off.world.spawn({ x: 1, y: 1, z: 0 });
    expect(() => off.world.congestionStats(notViewer)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_VIEWER' }));
    expect(() => off.world.congestionStats('x' as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => off.world.congestionStats(-5)).toThrow(expect.objectContaining({ code: expect.stringMatching(/^ERR_SIGHTLINE_INVALID_(ENTITY|ARGUMENT)$/) }));
    off.world.close();
  });
});

function lossyEqual(a: Buffer[], b: Buffer[]): void {
  expect(a.length).toBe(b.length);
  a.forEach((p, i) => expect(p.equals(b[i]), `packet ${i}`).toBe(true));
}
