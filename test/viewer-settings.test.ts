// Runtime viewer settings (setSendPeriod, setPayloadBytes, setViewRadius) and the per-viewer view
// radius, against brute force and the grace rule; run() refused while a tick() is pending.
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, decodePacket, toRaw, type TickResult } from '../lib/index.js';
import { ModelClient, errorCode, randInt, rng, withSeed } from './helpers/model.js';

const config = WorldConfig.build();

const code = errorCode;

function packetOf(r: TickResult, viewer: number): Uint8Array | undefined {
  return r.packets.find((p) => p.viewer === viewer)?.bytes;
}

/** Brute force: live entities inside the region within `radiusRaw` (2D, inclusive) of (x, y) raw. */
function brute(w: World, ids: number[], x: number, y: number, radiusRaw: number, exclude = -1): Set<number> {
  const out = new Set<number>();
  const region = w.config.regionRaw;
  for (const id of ids) {
    if (id === exclude || !w.isLive(id)) continue;
    const s = w.slotOf(id);
    const ex = w.positions.x[s];
    const ey = w.positions.y[s];
    if (ex < 0 || ey < 0 || ex >= region || ey >= region) continue;
    if ((ex - x) ** 2 + (ey - y) ** 2 <= radiusRaw ** 2) out.add(id);
  }
  return out;
}

describe('setSendPeriod', () => {
  it('serves the viewer every N ticks from its next pass on; sequences carry on without a restart', async () => {
    const w = new World(config, { capacity: 64, threads: 1 });
    const v = w.spawn({ x: 100, y: 100 });
    for (let i = 0; i < 10; i++) w.spawn({ x: 110 + i, y: 100 });
    w.addViewer(v);
    const seqs: number[] = [];
    const served: number[] = [];
    for (let t = 0; t < 4; t++) {
      const r = await w.tick();
      const b = packetOf(r, v);
      if (b) seqs.push(decodePacket(b, config).sequence), served.push(r.tick);
    }
    w.setSendPeriod(v, 3);
    expect(w.viewerSettings(v).sendPeriod).toBe(3);
    for (let t = 0; t < 12; t++) {
      const r = await w.tick();
      const b = packetOf(r, v);
      if (b) seqs.push(decodePacket(b, config).sequence), served.push(r.tick);
    }
    // Every packet's sequence is the one before + 1, across the change.
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe((seqs[i - 1] + 1) & 0xffff);
    // Four ticks at period 1, then one tick in three.
    expect(served.slice(0, 4)).toEqual([1, 2, 3, 4]);
    const after = served.slice(4);
    expect(after.length).toBe(4);
    for (let i = 1; i < after.length; i++) expect(after[i] - after[i - 1]).toBe(3);
    expect(after[0]).toBeGreaterThan(4);
    expect(after[0]).toBeLessThanOrEqual(7);
  });
});

describe('setPayloadBytes', () => {
  it('packets fit the new size from the next pass; an acks viewer keeps its log across a larger size', async () => {
    const w = new World(config, { capacity: 512, threads: 1 });
    const v = w.spawn({ x: 500, y: 500 });
    const ids: number[] = [];
    for (let i = 0; i < 300; i++) ids.push(w.spawn({ x: 450 + (i % 20) * 5, y: 450 + Math.floor(i / 20) * 5 }));
    w.addViewer(v, { acks: true, payloadBytes: 100 });
    const client = new ModelClient(config, 65507);
    const r1 = await w.tick();
    const b1 = packetOf(r1, v)!;
    expect(b1.length).toBeLessThanOrEqual(100);
    const seq1 = client.apply(b1).sequence;
    w.setPayloadBytes(v, 4000);
    const r2 = await w.tick();
    const b2 = packetOf(r2, v)!;
    expect(b2.length).toBeGreaterThan(1200);
    expect(b2.length).toBeLessThanOrEqual(4000);
    const p2 = client.apply(b2);
    expect(p2.sequence).toBe((seq1 + 1) & 0xffff);
    // Both packets, logged before and after the log grew, are acknowledged.
    w.acknowledge(v, p2.sequence, 1);
    expect(w.ackStats(v)!.acked).toBe(2);
    w.setPayloadBytes(v, 200);
    for (let t = 0; t < 5; t++) {
      for (const id of ids) w.positions.x[w.slotOf(id)] += 10;
      const b = packetOf(await w.tick(), v)!;
      expect(b.length).toBeLessThanOrEqual(200);
      const p = client.apply(b);
      w.acknowledge(v, p.sequence, 0xffffffff);
    }
    expect(w.ackStats(v)!.lost).toBe(0);
    expect(w.viewerSettings(v)).toMatchObject({ payloadBytes: 200, sendPeriod: 1, viewRadius: 256, acks: true });
  });

  it('respects the output room: ERR_SIGHTLINE_OUTPUT_FULL past 4 GiB - 64 KiB together, nothing changed', () => {
    const w = new World(WorldConfig.build({ ghostCap: 1 }), { capacity: 65_570, threads: 1 });
    const ids = Array.from({ length: 65_566 }, (_, i) => w.spawn({ x: 1 + (i % 4000), y: 1 + Math.floor(i / 4000), z: 0 }));
    const limit = 2 ** 32 - 2 ** 16;
    const big = Math.floor(limit / 65_507);
    for (let i = 0; i < big; i++) w.addViewer(ids[i], { payloadBytes: 65_507 });
    w.addViewer(ids[big], { payloadBytes: 28 });
    const room = limit - big * 65_507 - 28;
    expect(code(() => w.setPayloadBytes(ids[big], 28 + room + 1))).toBe('ERR_SIGHTLINE_OUTPUT_FULL');
    expect(w.viewerSettings(ids[big]).payloadBytes).toBe(28);
    w.setPayloadBytes(ids[big], 28 + room); // exactly full
    expect(code(() => w.addViewer(ids[big + 1], { payloadBytes: 28 }))).toBe('ERR_SIGHTLINE_OUTPUT_FULL');
    w.setPayloadBytes(ids[0], 65_507 - 28); // a smaller packet frees room
    w.addViewer(ids[big + 1], { payloadBytes: 28 });
    expect(w.viewerCount).toBe(big + 2);
  });
});

describe('changes during a tick', () => {
  it('are checked when called, read back at once, and applied when the tick ends, in call order with adds and removes', async () => {
    const w = new World(config, { capacity: 64, threads: 2 });
    const a = w.spawn({ x: 100, y: 100 });
    const b = w.spawn({ x: 120, y: 100 });
    const movers: number[] = [];
    for (let i = 0; i < 20; i++) movers.push(w.spawn({ x: 100 + i, y: 110 }));
    const move = () => movers.forEach((id) => (w.positions.z[w.slotOf(id)] += 100));
    w.addViewer(a);
    await w.tick();
    move();
    const pending = w.tick();
    w.setPayloadBytes(a, 100);
    w.setViewRadius(a, 50);
    w.addViewer(b, { payloadBytes: 300 });
    w.setSendPeriod(b, 2);
    w.setPayloadBytes(b, 400);
    expect(w.viewerSettings(a)).toMatchObject({ payloadBytes: 100, sendPeriod: 1, viewRadius: 50, acks: false });
    expect(w.viewerSettings(b)).toMatchObject({ payloadBytes: 400, sendPeriod: 2, viewRadius: 256, acks: false });
    // Checked now: refused, and nothing queued.
    expect(code(() => w.setViewRadius(a, 300))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    expect(code(() => w.setSendPeriod(a, 0))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    w.removeViewer(b);
    expect(code(() => w.setSendPeriod(b, 3))).toBe('ERR_SIGHTLINE_UNKNOWN_VIEWER');
    w.addViewer(b);
    expect(w.viewerSettings(b).payloadBytes).toBe(1200);
    const r = await pending;
    expect(packetOf(r, a)!.length).toBeGreaterThan(100); // this tick's pass had the old size
    expect(w.viewerSettings(a)).toMatchObject({ payloadBytes: 100, sendPeriod: 1, viewRadius: 50, acks: false });
    move();
    const next = await w.tick();
    expect(packetOf(next, a)!.length).toBeLessThanOrEqual(100);
    expect(w.viewerSettings(b)).toMatchObject({ payloadBytes: 1200, sendPeriod: 1, viewRadius: 256, acks: false });
    expect(w.viewerCount).toBe(2);
  });
});

describe('per-viewer view radius', () => {
  // The gather's candidate set against brute force, radius and groups together: interest.test.ts.
  it('the pass honours it: the client holds exactly the entities within the radius, through random changes of it', async () => {
    for (let seed = 1; seed <= 4; seed++) {
      await withSeed(seed, async () => {
        const r = rng(seed);
        const c = WorldConfig.build({ regionSize: 1024, viewRadius: 120, graceTicks: 0, ghostCap: 4096, walkCap: Infinity });
        const w = new World(c, { capacity: 1200, threads: 2 });
        const ids: number[] = [];
        for (let i = 0; i < 1000; i++) ids.push(w.spawn({ x: 300 + r() * 400, y: 300 + r() * 400 }));
        const viewers = ids.slice(0, 6);
        const clients = new Map(viewers.map((v) => [v, new ModelClient(c, 65507)]));
        viewers.forEach((v) => w.addViewer(v, { payloadBytes: 65_507, viewRadius: 20 + r() * 100 }));
        for (let t = 0; t < 40; t++) {
          if (t % 5 === 0) for (const v of viewers) w.setViewRadius(v, 5 + r() * 115);
          const res = await w.tick();
          for (const v of viewers) clients.get(v)!.apply(packetOf(res, v)!);
          // graceTicks 0: a ghost not eligible on a pass is despawned in the next packet. So the
          // client holds what was in range at the previous pass, and at least what is in range now.
          if (t % 5 === 4) {
            for (const v of viewers) {
              const s = w.slotOf(v);
              const want = brute(w, ids, w.positions.x[s], w.positions.y[s], toRaw(w.viewerSettings(v).viewRadius), v);
              expect(new Set(clients.get(v)!.held.keys())).toEqual(want);
            }
          }
        }
      });
    }
  });

  it('when it shrinks before pass p, ghosts left outside depart by the grace rule, in pass p + graceTicks + 1; none inside departs', async () => {
    const grace = 4;
    const c = WorldConfig.build({ graceTicks: grace });
    const w = new World(c, { capacity: 256, threads: 1 });
    const v = w.spawn({ x: 1000, y: 1000 });
    const near: number[] = [];
    const far: number[] = [];
    for (let i = 0; i < 40; i++) near.push(w.spawn({ x: 1000 + 20 * Math.cos(i), y: 1000 + 20 * Math.sin(i) }));
    for (let i = 0; i < 40; i++) far.push(w.spawn({ x: 1000 + 150 * Math.cos(i), y: 1000 + 150 * Math.sin(i) }));
    w.addViewer(v);
    const client = new ModelClient(c);
    for (let t = 0; t < 3; t++) client.apply(packetOf(await w.tick(), v)!);
    expect(client.held.size).toBe(80);
    w.setViewRadius(v, 100);
    const departedAt = new Map<number, number>();
    for (let pass = 1; pass <= grace + 4; pass++) {
      const p = client.apply(packetOf(await w.tick(), v)!);
      for (let i = 0; i < p.despawnCount; i++) departedAt.set(p.despawns[i], pass);
    }
    for (const id of far) expect(departedAt.get(id)).toBe(1 + grace + 1);
    for (const id of near) expect(departedAt.has(id)).toBe(false);
    expect(new Set(client.held.keys())).toEqual(new Set(near));
  });
});

describe('bad input', () => {
  it('each setting refuses what it cannot take with a coded error and changes nothing', async () => {
    const w = new World(config, { capacity: 16, threads: 1 });
    const v = w.spawn({ x: 10, y: 10 });
    const other = w.spawn({ x: 12, y: 10 });
    w.addViewer(v, { viewRadius: 100, sendPeriod: 2, payloadBytes: 600 });
    const before = w.viewerSettings(v);
    const cases: [() => unknown, string][] = [
      [() => w.setViewRadius(v, 256.001), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setViewRadius(v, 0), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setViewRadius(v, -3), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setViewRadius(v, NaN), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setViewRadius(v, '50' as never), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setSendPeriod(v, 0), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setSendPeriod(v, 1.5), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setSendPeriod(v, 65_536), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setSendPeriod(v, null as never), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setPayloadBytes(v, 27), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setPayloadBytes(v, 65_508), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setPayloadBytes(v, 100.5), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.setSendPeriod(other, 2), 'ERR_SIGHTLINE_UNKNOWN_VIEWER'],
      [() => w.setViewRadius(other, 10), 'ERR_SIGHTLINE_UNKNOWN_VIEWER'],
      [() => w.setPayloadBytes(-1, 100), 'ERR_SIGHTLINE_INVALID_ENTITY'],
      [() => w.viewerSettings(other), 'ERR_SIGHTLINE_UNKNOWN_VIEWER'],
      [() => w.addViewer(other, { viewRadius: 300 }), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.addViewer(other, { viewRadius: 0 }), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION'],
      [() => w.gather({ x: 1, y: 1 }, { radius: 257 }), 'ERR_SIGHTLINE_INVALID_ARGUMENT'],
    ];
    for (const [fn, want] of cases) expect(code(fn)).toBe(want);
    expect(w.viewerSettings(v)).toMatchObject(before);
    expect(w.hasViewer(other)).toBe(false);
    expect(before).toMatchObject({ payloadBytes: 600, sendPeriod: 2, viewRadius: 100, acks: false });
  });
});

describe('run() and a pending tick()', () => {
  it('run() while a tick() of the caller is pending is refused at the call with ERR_SIGHTLINE_TICK_IN_PROGRESS', async () => {
    const w = new World(config, { capacity: 16, threads: 1 });
    w.addViewer(w.spawn({ x: 10, y: 10 }));
    const pending = w.tick();
    expect(code(() => w.run({ ticks: 2 }))).toBe('ERR_SIGHTLINE_TICK_IN_PROGRESS');
    await pending;
    // Nothing was started: a loop runs now, and a second one is refused as running.
    const loop = w.run({ ticks: 2 });
    expect(code(() => w.run({ ticks: 1 }))).toBe('ERR_SIGHTLINE_LOOP_RUNNING');
    expect((await loop.done).ticks).toBe(2);
  });
});

describe('random settings churn', () => {
  it('every packet fits its viewer size as set before that tick, sequences never restart', async () => {
    for (let seed = 1; seed <= 3; seed++) {
      await withSeed(seed, async () => {
        const r = rng(seed);
        const w = new World(config, { capacity: 600, threads: 2 });
        const ids: number[] = [];
        for (let i = 0; i < 500; i++) ids.push(w.spawn({ x: 1000 + r() * 300, y: 1000 + r() * 300 }));
        const viewers = ids.slice(0, 30);
        viewers.forEach((v, i) => w.addViewer(v, { acks: i % 2 === 0 }));
        const lastSeq = new Map<number, number>();
        let size = new Map(viewers.map((v) => [v, 1200]));
        for (let t = 0; t < 60; t++) {
          for (const id of ids) w.positions.x[w.slotOf(id)] += randInt(r, -200, 200);
          const p = w.tick();
          const asked = new Map(size);
          for (const v of viewers) {
            const k = r();
            if (k < 0.1) w.setPayloadBytes(v, randInt(r, 28, 3000)), asked.set(v, w.viewerSettings(v).payloadBytes);
            else if (k < 0.2) w.setSendPeriod(v, randInt(r, 1, 4));
            else if (k < 0.3) w.setViewRadius(v, 1 + r() * 255);
          }
          const res = await p;
          for (const pk of res.packets) {
            expect(pk.bytes.length).toBeLessThanOrEqual(size.get(pk.viewer)!);
            const s = decodePacket(pk.bytes, config).sequence;
            if (lastSeq.has(pk.viewer)) expect(s).toBe((lastSeq.get(pk.viewer)! + 1) & 0xffff);
            lastSeq.set(pk.viewer, s);
          }
          size = asked;
        }
      });
    }
  });
});
