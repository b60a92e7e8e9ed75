// Visibility groups, priority weights and boosts: the candidate set against brute force, a hidden
// entity never sent and gone at once, the starvation bounds with weights, bad input, and the same
// bytes for 1, 2 and 8 threads with every control in use. (The exact choice of updates with these
// controls is checked packet by packet in accumulator-oracle.test.ts.)
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, decodePacket, toRaw, type TickResult } from '../lib/index.js';
import { decodePacketRaw, createRawPacket } from '../lib/decode.js';
import { ModelClient, errorCode, randInt, rng, withSeed } from './helpers/model.js';

const config = WorldConfig.build();

function packetOf(r: TickResult, viewer: number): Uint8Array | undefined {
  return r.packets.find((p) => p.viewer === viewer)?.bytes;
}

function idsOf(bytes: Uint8Array | undefined, c: WorldConfig): { despawns: number[]; updates: number[] } {
  if (!bytes) return { despawns: [], updates: [] };
  const raw = decodePacketRaw(bytes, c, createRawPacket(65507));
  return { despawns: Array.from(raw.despawns.subarray(0, raw.despawnCount)), updates: Array.from(raw.ids.subarray(0, raw.updateCount)) };
}

describe('visibility groups: the candidate set', () => {
  it('equals brute force filtered by the radius and the groups, on random worlds (uncapped walks)', async () => {
    for (let seed = 1; seed <= 6; seed++) {
      await withSeed(seed, () => {
        const r = rng(seed);
        const c = WorldConfig.build({ regionSize: 1024, viewRadius: 100, cellSize: 32, walkCap: Infinity, denseCellThreshold: 16 });
        const w = new World(c, { capacity: 2000, threads: 1 });
        const ids: number[] = [];
        const groups = new Map<number, number>();
        for (let i = 0; i < 1500; i++) {
          const crowd = i < 300;
          const id = w.spawn({ x: crowd ? 500 + r() * 30 : r() * 1100 - 30, y: crowd ? 500 + r() * 30 : r() * 1100 - 30 });
          ids.push(id);
          const k = r();
          const g = k < 0.1 ? 0 : k < 0.3 ? 0xffffffff : (1 << randInt(r, 0, 32)) >>> 0 | randInt(r, 0, 16);
          if (k >= 0.2 || g !== 0xffffffff) w.setGroups(id, g);
          groups.set(id, w.groups(id));
        }
        w.rebuildSnapshot();
        for (let q = 0; q < 80; q++) {
          const x = q % 4 === 0 ? 510 : r() * 1200 - 80;
          const y = q % 4 === 0 ? 510 : r() * 1200 - 80;
          const radius = q % 5 === 0 ? 100 : 0.5 + r() * 99.5;
          const vg = q % 7 === 0 ? 0xffffffff : q % 11 === 0 ? 0 : ((1 << randInt(r, 0, 32)) | randInt(r, 0, 16)) >>> 0;
          const got = w.gather({ x, y }, { radius, walkCap: Infinity, groups: vg });
          const want = new Set<number>();
          const R = toRaw(radius);
          for (const id of ids) {
            const s = w.slotOf(id);
            const ex = w.positions.x[s];
            const ey = w.positions.y[s];
            if (ex < 0 || ey < 0 || ex >= c.regionRaw || ey >= c.regionRaw) continue;
            if ((ex - toRaw(x)) ** 2 + (ey - toRaw(y)) ** 2 > R * R) continue;
            if ((groups.get(id)! & vg) === 0) continue;
            want.add(id);
          }
          expect(new Set(got.ids)).toEqual(want);
          expect(got.ids.length).toBe(want.size);
        }
      });
    }
  });
});

describe('visibility groups: a hidden entity', () => {
  it('departs in the very next packet from a viewer that may no longer see it, is never sent while hidden, and comes back when visible', async () => {
    const w = new World(config, { capacity: 64, threads: 2 });
    const red = w.spawn({ x: 100, y: 100 });
    const blue = w.spawn({ x: 102, y: 100 });
    const stealth = w.spawn({ x: 110, y: 100 });
    const others: number[] = [];
    for (let i = 0; i < 10; i++) others.push(w.spawn({ x: 120 + i, y: 100 }));
    w.addViewer(red, { groups: 0b01 });
    w.addViewer(blue, { groups: 0b10 });
    w.setGroups(stealth, 0b11);
    const cr = new ModelClient(config);
    const cb = new ModelClient(config);
    const step = async () => {
      w.positions.x[w.slotOf(stealth)] += 30; // it moves every tick: it would be sent every tick
      const res = await w.tick();
      cr.apply(packetOf(res, red)!);
      cb.apply(packetOf(res, blue)!);
      return res;
    };
    for (let t = 0; t < 3; t++) await step();
    expect(cr.held.has(stealth) && cb.held.has(stealth)).toBe(true);
    w.setGroups(stealth, 0b01); // red only
    const res = await step();
    expect(idsOf(packetOf(res, blue), config).despawns).toEqual([stealth]);
    expect(res.stats.hiddenDepartures).toBe(1);
    expect(cb.held.has(stealth)).toBe(false);
    for (let t = 0; t < 15; t++) {
      const r2 = await step();
      expect(idsOf(packetOf(r2, blue), config).updates).not.toContain(stealth);
      expect(idsOf(packetOf(r2, red), config).updates).toContain(stealth);
    }
    w.setGroups(stealth, 0b10);
    const back = await step();
    expect(idsOf(packetOf(back, blue), config).updates).toContain(stealth);
    expect(idsOf(packetOf(back, red), config).despawns).toEqual([stealth]);
    // The viewer's own groups: blue now sees nothing of group 2's entities' neighbours but its team.
    w.setViewerGroups(blue, 0b01);
    expect(w.viewerSettings(blue).groups).toBe(0b01);
    const swap = await step();
    expect(idsOf(packetOf(swap, blue), config).despawns).toEqual([stealth]);
    expect(cb.held.has(stealth)).toBe(false);
    expect(cb.held.size).toBe(others.length + 1); // the others (every group) and red
  });

  it('is never carried to a viewer outside its groups, through random changes of both and lossy acknowledgements', async () => {
    for (let seed = 1; seed <= 4; seed++) {
      await withSeed(seed, async () => {
        const r = rng(seed);
        const c = WorldConfig.build({ graceTicks: randInt(r, 0, 6) });
        const w = new World(c, { capacity: 800, threads: 2 });
        const ids: number[] = [];
        const groupsOf = new Map<number, number>();
        for (let i = 0; i < 700; i++) {
          const id = w.spawn({ x: 1000 + r() * 200, y: 1000 + r() * 200 });
          ids.push(id);
          groupsOf.set(id, 0xffffffff);
        }
        const viewers = ids.slice(0, 20);
        const vg = new Map<number, number>();
        viewers.forEach((v, i) => {
          const g = randInt(r, 1, 8);
          w.addViewer(v, { groups: g, acks: i % 2 === 0, payloadBytes: randInt(r, 200, 1200), viewRadius: 20 + r() * 236 });
          vg.set(v, g);
        });
        for (let t = 0; t < 80; t++) {
          for (const id of ids) if (r() < 0.3) w.positions.x[w.slotOf(id)] += randInt(r, -300, 300);
          for (const id of ids) {
            if (r() < 0.04) {
              const g = r() < 0.1 ? 0 : randInt(r, 0, 8);
              w.setGroups(id, g);
              groupsOf.set(id, g);
            }
          }
          for (const v of viewers) {
            if (r() < 0.05) {
              const g = randInt(r, 0, 8);
              w.setViewerGroups(v, g);
              vg.set(v, g);
            }
          }
          const res = await w.tick();
          for (const p of res.packets) {
            const d = decodePacket(p.bytes, c);
            for (const u of d.updates) {
              if ((groupsOf.get(u.id)! & vg.get(p.viewer)!) === 0) {
                throw new Error(`tick ${t}: viewer ${p.viewer} (groups ${vg.get(p.viewer)}) was sent ${u.id} (groups ${groupsOf.get(u.id)})`);
              }
            }
            if (viewers.indexOf(p.viewer) % 2 === 0 && r() < 0.7) w.acknowledge(p.viewer, d.sequence, 0);
          }
        }
      });
    }
  });
});

describe('priority weights and boosts: starvation bounds', () => {
  it("a weight multiplies the odometer's growth from the next tick on, not the drift already accumulated", async () => {
    const w = new World(config, { capacity: 8, threads: 1 });
    const v = w.spawn({ x: 10, y: 10 });
    const e = w.spawn({ x: 20, y: 10 });
    w.addViewer(v);
    await w.tick();
    const at = (x: number) => w.setPosition(e, { x, y: 10 });
    const before = w.odometer(e);
    at(23);
    w.setPriority(e, 4);
    await w.tick();
    expect(w.odometer(e) - before).toBe(4 * 3 * 1024);
    at(25);
    w.setPriority(e, 1);
    await w.tick();
    expect(w.odometer(e) - before).toBe(4 * 3 * 1024 + 2 * 1024);
    w.setPriority(e, 16);
    await w.tick(); // unmoved: nothing grows, whatever the weight
    expect(w.odometer(e) - before).toBe(4 * 3 * 1024 + 2 * 1024);
    w.close();
  });

  it('with B slots, N candidates on one band moving alike and weights 1, 4 and 16, each is sent at least every 2·ceil(N/B)·(16 / weight) + 1 ticks, and weight 16 about 16 times as often as weight 1', async () => {
    const w = new World(config, { capacity: 128, threads: 1 });
    const viewer = w.spawn({ x: 2000, y: 2000 });
    const N = 30;
    const B = 3;
    const ids: number[] = [];
    const weight: number[] = [];
    for (let i = 0; i < N; i++) {
      const a = (2 * Math.PI * i) / N;
      const id = w.spawn({ x: 2000 + 100 * Math.cos(a), y: 2000 + 100 * Math.sin(a) });
      ids.push(id);
      weight.push([1, 4, 16][i % 3]);
      w.setPriority(id, weight[i]);
      expect(w.priority(id)).toBe(weight[i]);
    }
    w.addViewer(viewer, { payloadBytes: 16 + 12 * B });
    const lastSent = new Map<number, number>();
    const sends = new Map<number, number>();
    let worstLow = 0;
    for (let t = 0; t < 1200; t++) {
      for (const id of ids) w.positions.z[w.slotOf(id)] += t % 2 === 0 ? 30 : -30;
      const res = await w.tick();
      for (const id of idsOf(packetOf(res, viewer), config).updates) {
        if (t > 400) {
          sends.set(id, (sends.get(id) ?? 0) + 1);
          if (weight[ids.indexOf(id)] === 1) worstLow = Math.max(worstLow, t - lastSent.get(id)!);
        }
        lastSent.set(id, t);
      }
      if (t > 400) {
        ids.forEach((id, i) => {
          const bound = 2 * Math.ceil(N / B) * Math.ceil(16 / weight[i]) + 1;
          expect(t - (lastSent.get(id) ?? -1e9)).toBeLessThanOrEqual(bound);
        });
      }
    }
    const rate = (wt: number) => ids.filter((_, i) => weight[i] === wt).reduce((s, id) => s + (sends.get(id) ?? 0), 0);
    // Sent in proportion to the weights (a steady state of the accumulator: rate ∝ weight).
    expect(rate(16) / rate(1)).toBeGreaterThan(12);
    expect(rate(16) / rate(1)).toBeLessThan(20);
    expect(rate(4) / rate(1)).toBeGreaterThan(3);
    expect(rate(4) / rate(1)).toBeLessThan(5);
    expect(worstLow).toBeGreaterThan(0);
  });

  it("a viewer's boost multiplies the scores of its set for that viewer alone, within the same bound", async () => {
    const w = new World(config, { capacity: 128, threads: 2 });
    const a = w.spawn({ x: 2000, y: 2000 });
    const b = w.spawn({ x: 2001, y: 2000 });
    const N = 24;
    const B = 2;
    const ids: number[] = [];
    for (let i = 0; i < N; i++) {
      const t = (2 * Math.PI * i) / N;
      ids.push(w.spawn({ x: 2000 + 80 * Math.cos(t), y: 2000 + 80 * Math.sin(t) }));
    }
    const party = ids.slice(0, 4);
    w.addViewer(a, { payloadBytes: 16 + 12 * B });
    w.addViewer(b, { payloadBytes: 16 + 12 * B });
    w.setBoost(a, party, 8);
    expect(w.viewerSettings(a).boost).toEqual({ entities: [...party].sort((x, y) => x - y), factor: 8 });
    expect(w.viewerSettings(b).boost).toEqual({ entities: [], factor: 1 });
    const sends = new Map<number, Map<number, number>>([
      [a, new Map()],
      [b, new Map()],
    ]);
    const last = new Map<string, number>();
    for (let t = 0; t < 900; t++) {
      for (const id of ids) w.positions.z[w.slotOf(id)] += t % 2 === 0 ? 40 : -40;
      const res = await w.tick();
      for (const v of [a, b]) {
        for (const id of idsOf(packetOf(res, v), config).updates) {
          if (t > 300) sends.get(v)!.set(id, (sends.get(v)!.get(id) ?? 0) + 1);
          last.set(`${v}:${id}`, t);
        }
        if (t > 300) {
          for (const id of ids) {
            const r = v === a && !party.includes(id) ? 8 : 1; // how much slower than the fastest it grows
            expect(t - (last.get(`${v}:${id}`) ?? -1e9)).toBeLessThanOrEqual(2 * Math.ceil(N / B) * r + 1);
          }
        }
      }
    }
    const share = (v: number, set: number[]) => set.reduce((s, id) => s + (sends.get(v)!.get(id) ?? 0), 0);
    const rest = ids.filter((id) => !party.includes(id));
    // For a, a party member is sent about 8 times as often as another; for b, alike.
    const perA = share(a, party) / party.length / (share(a, rest) / rest.length);
    const perB = share(b, party) / party.length / (share(b, rest) / rest.length);
    expect(perA).toBeGreaterThan(6);
    expect(perA).toBeLessThan(10);
    expect(perB).toBeGreaterThan(0.7);
    expect(perB).toBeLessThan(1.4);
    w.setBoost(a, [], 1);
    expect(w.viewerSettings(a).boost).toEqual({ entities: [], factor: 1 });
  });
});

describe('bad input', () => {
  it('groups, priorities and boosts refuse what they cannot take with coded errors and change nothing', () => {
    const w = new World(config, { capacity: 16, threads: 1 });
    const v = w.spawn({ x: 10, y: 10 });
    const e = w.spawn({ x: 12, y: 10 });
    w.addViewer(v, { groups: 5 });
    w.setGroups(e, 3);
    w.setPriority(e, 7);
    w.setBoost(v, [e], 3);
    const gone = w.spawn({ x: 1, y: 1 });
    w.despawn(gone);
    const cases: [() => unknown, string][] = [
      [() => w.setGroups(e, 1.5), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setGroups(e, NaN), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setGroups(e, 2 ** 32), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setGroups(e, -(2 ** 31) - 1), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setGroups(e, '3' as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setGroups(gone, 1), 'ERR_SIGHTLINE_STALE_ENTITY'],
      [() => w.setPriority(e, 0), 'ERR_SIGHTLINE_INVALID_PRIORITY'],
      [() => w.setPriority(e, 300), 'ERR_SIGHTLINE_INVALID_PRIORITY'],
      [() => w.setPriority(e, 17), 'ERR_SIGHTLINE_INVALID_PRIORITY'],
      [() => w.setPriority(e, 2.5), 'ERR_SIGHTLINE_INVALID_PRIORITY'],
      [() => w.setPriority(gone, 2), 'ERR_SIGHTLINE_STALE_ENTITY'],
      [() => w.setViewerGroups(v, 0.5), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setViewerGroups(e, 1), 'ERR_SIGHTLINE_UNKNOWN_VIEWER'],
      [() => w.addViewer(e, { groups: 1.5 }), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setBoost(v, [e], 0), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setBoost(v, [e], 17), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setBoost(v, Array.from({ length: 65 }, (_, i) => i), 2), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setBoost(v, [1.5], 2), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setBoost(v, 7 as never, 2), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
      [() => w.setBoost(e, [v], 2), 'ERR_SIGHTLINE_UNKNOWN_VIEWER'],
      [() => w.gather({ x: 1, y: 1 }, { groups: -0.5 }), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
    ];
    for (const [fn, want] of cases) expect(errorCode(fn)).toBe(want);
    expect(w.groups(e)).toBe(3);
    expect(w.priority(e)).toBe(7);
    expect(w.viewerSettings(v)).toMatchObject({ groups: 5, boost: { entities: [e], factor: 3 } });
    expect(w.hasViewer(e)).toBe(false);
    // Repeats count once, towards the 64 as well.
    w.setBoost(v, Array(100).fill(e), 3);
    expect(w.viewerSettings(v)).toMatchObject({ boost: { entities: [e], factor: 3 } });
    // A mask built by bit operators is read as its unsigned value.
    w.setGroups(e, ~0);
    expect(w.groups(e)).toBe(0xffffffff);
    w.setGroups(e, 1 << 31);
    expect(w.groups(e)).toBe(2 ** 31);
  });
});

describe('thread counts', () => {
  it('1, 2 and 8 threads send the same bytes with every control in use (groups, priorities, boosts, radii, settings)', async () => {
    const run = async (threads: number): Promise<string[]> => {
      const r = rng(99);
      const c = WorldConfig.build({ graceTicks: 3 });
      const w = new World(c, { capacity: 3000, threads });
      const ids: number[] = [];
      for (let i = 0; i < 2500; i++) ids.push(w.spawn({ x: i < 1500 ? 2000 + r() * 100 : r() * 4096, y: i < 1500 ? 2000 + r() * 100 : r() * 4096 }));
      const viewers = ids.slice(0, 400);
      viewers.forEach((v, i) => w.addViewer(v, { acks: i % 3 === 0, groups: randInt(r, 1, 16), viewRadius: 30 + r() * 226 }));
      const out: string[] = [];
      for (let t = 0; t < 30; t++) {
        for (const id of ids) w.positions.x[w.slotOf(id)] += randInt(r, -100, 101);
        for (const id of ids) {
          const k = r();
          if (k < 0.02) w.setGroups(id, randInt(r, 0, 16));
          else if (k < 0.04) w.setPriority(id, randInt(r, 1, 17));
        }
        const p = w.tick();
        for (const v of viewers) {
          const k = r();
          if (k < 0.02) w.setViewerGroups(v, randInt(r, 0, 16));
          else if (k < 0.04) w.setBoost(v, Array.from({ length: 5 }, () => ids[randInt(r, 0, ids.length)]), randInt(r, 1, 17));
          else if (k < 0.06) w.setViewRadius(v, 10 + r() * 246);
          else if (k < 0.07) w.setPayloadBytes(v, randInt(r, 100, 2000));
          else if (k < 0.08) w.setSendPeriod(v, randInt(r, 1, 4));
        }
        const res = await p;
        for (const pk of res.packets) out.push(`${pk.viewer}:${Buffer.from(pk.bytes).toString('base64')}`);
        for (const pk of res.packets) if (viewers.indexOf(pk.viewer) % 3 === 0) w.acknowledge(pk.viewer, decodePacket(pk.bytes, c).sequence, 0);
      }
      w.close();
      return out;
    };
    const one = await run(1);
    expect(one.length).toBeGreaterThan(8000);
    expect(await run(2)).toEqual(one);
    expect(await run(8)).toEqual(one);
  });
});
