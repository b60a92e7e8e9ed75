// Over 500 lines as one file: one concept (the replication pass's behaviour), case by case against the model of every client.
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, toRaw, type TickResult } from '../lib/index.js';
import { decodePacketRaw, createRawPacket } from '../lib/decode.js';
import { ModelClient, deliver, randInt, rng, serverGhosts, withSeed } from './helpers/model.js';

function updatesOf(result: TickResult, viewer: number, config: WorldConfig): { despawns: number[]; ids: number[] } {
  const p = result.packets.find((q) => q.viewer === viewer);
  if (!p) return { despawns: [], ids: [] };
  const raw = decodePacketRaw(p.bytes, config, createRawPacket(65507));
  return { despawns: Array.from(raw.despawns.subarray(0, raw.despawnCount)), ids: Array.from(raw.ids.subarray(0, raw.updateCount)) };
}

describe('priority accumulator', () => {
  it('when nothing moves, nothing is sent once the first packets have settled; a stopped entity is no longer sent', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 512, threads: 1 });
    const r = rng(3);
    const viewer = w.spawn({ x: 2048, y: 2048, z: 0 });
    const ids: number[] = [];
    for (let i = 0; i < 200; i++) ids.push(w.spawn({ x: 2048 + (r() - 0.5) * 300, y: 2048 + (r() - 0.5) * 300, z: 0 }));
    w.addViewer(viewer);
    let sent = 0;
    for (let t = 0; t < 6; t++) sent += (await w.tick()).stats.records;
    // Every in-range entity (fewer than the ghost cap) has been introduced once (98 per packet), then silence.
    const inRange = ids.filter((id) => {
      const p = w.position(id);
      return (p.x - 2048) ** 2 + (p.y - 2048) ** 2 <= 256 ** 2;
    }).length;
    expect({ sent, inRange }).toEqual({ sent: inRange, inRange });
    for (let t = 0; t < 20; t++) expect((await w.tick()).stats.records).toBe(0);

    // One entity moves for 3 ticks: it is sent each tick; then it stops and is not sent again.
    const mover = ids[0];
    for (let t = 0; t < 3; t++) {
      w.positions.x[w.slotOf(mover)] += toRaw(0.5);
      const res = await w.tick();
      expect(updatesOf(res, viewer, c).ids).toEqual([mover]);
    }
    for (let t = 0; t < 10; t++) expect((await w.tick()).stats.records).toBe(0);
  });

  it('the budget only delays: with one slot per packet, ghosts still in range are never despawned', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 64, threads: 1 });
    const viewer = w.spawn({ x: 1000, y: 1000, z: 0 });
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push(w.spawn({ x: 1000 + i, y: 1010, z: 0 }));
    w.addViewer(viewer, { payloadBytes: 16 + 12 });
    const client = new ModelClient(c, 28);
    for (let t = 0; t < 200; t++) {
      for (const id of ids) w.positions.y[w.slotOf(id)] += t % 2 === 0 ? 50 : -50;
      const res = await w.tick();
      expect(res.packets[0].bytes.length).toBeLessThanOrEqual(28);
      client.apply(res.packets[0].bytes);
    }
    expect(client.despawnsReceived).toBe(0);
    expect(client.held.size).toBe(30);
  });

  it('starvation bound, equal rates: with B slots and N moving candidates each is sent at least every ceil(N/B) + 1 ticks', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 128, threads: 1 });
    const viewer = w.spawn({ x: 2000, y: 2000, z: 0 });
    const N = 40;
    const B = 4;
    const ids: number[] = [];
    // On a circle of 100 m: one distance band; each moves the same amount every tick.
    for (let i = 0; i < N; i++) {
      const a = (2 * Math.PI * i) / N;
      ids.push(w.spawn({ x: 2000 + 100 * Math.cos(a), y: 2000 + 100 * Math.sin(a), z: 0 }));
    }
    w.addViewer(viewer, { payloadBytes: 16 + 12 * B });
    const lastSent = new Map<number, number>();
    let worst = 0;
    for (let t = 0; t < 200; t++) {
      for (const id of ids) w.positions.z[w.slotOf(id)] += t % 2 === 0 ? 30 : -30;
      const res = await w.tick();
      for (const id of updatesOf(res, viewer, c).ids) {
        if (t > 2 * N && lastSent.has(id)) worst = Math.max(worst, t - lastSent.get(id)!);
        lastSent.set(id, t);
      }
      if (t > 2 * N) for (const id of ids) expect(t - (lastSent.get(id) ?? -1e9)).toBeLessThanOrEqual(Math.ceil(N / B) + 1);
    }
    expect(worst).toBeGreaterThan(0);
    expect(worst).toBeLessThanOrEqual(Math.ceil(N / B) + 1);
  });

  it('starvation bound, mixed rates: a candidate whose score grows r times slower than the fastest waits at most 2·ceil(N/B)·ceil(r) + 1 ticks', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 128, threads: 1 });
    const viewer = w.spawn({ x: 2000, y: 2000, z: 0 });
    const N = 30;
    const B = 3;
    const ids: number[] = [];
    const speed: number[] = [];
    for (let i = 0; i < N; i++) {
      const a = (2 * Math.PI * i) / N;
      ids.push(w.spawn({ x: 2000 + 100 * Math.cos(a), y: 2000 + 100 * Math.sin(a), z: 0 }));
      speed.push(i % 3 === 0 ? 4 : i % 3 === 1 ? 20 : 100); // raw per tick; same band, so rate ∝ speed
    }
    w.addViewer(viewer, { payloadBytes: 16 + 12 * B });
    const lastSent = new Map<number, number>();
    for (let t = 0; t < 600; t++) {
      ids.forEach((id, i) => (w.positions.z[w.slotOf(id)] += t % 2 === 0 ? speed[i] : -speed[i]));
      const res = await w.tick();
      for (const id of updatesOf(res, viewer, c).ids) lastSent.set(id, t);
      if (t > 200) {
        ids.forEach((id, i) => {
          const bound = 2 * Math.ceil(N / B) * Math.ceil(100 / speed[i]) + 1;
          expect(t - (lastSent.get(id) ?? -1e9)).toBeLessThanOrEqual(bound);
        });
      }
    }
  });

  it('an entity hovering at the edge of the view radius is not despawned and respawned every tick', async () => {
    const c = WorldConfig.build({ graceTicks: 10 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 2000, y: 2000, z: 0 });
    const hover = w.spawn({ x: 2000 + 256, y: 2000, z: 0 });
    w.addViewer(viewer);
    const client = new ModelClient(c);
    let spawns = 0;
    for (let t = 0; t < 200; t++) {
      // In range on even ticks, 1 raw unit out on odd ticks.
      w.positions.x[w.slotOf(hover)] = toRaw(2000 + 256) + (t % 2);
      const res = await w.tick();
      const had = client.held.has(hover);
      client.apply(res.packets[0].bytes);
      if (!had && client.held.has(hover)) spawns++;
    }
    expect(spawns).toBe(1);
    expect(client.despawnsReceived).toBe(0);
    // Longer absences than the grace window do despawn it, once.
    w.positions.x[w.slotOf(hover)] = toRaw(2000 + 300);
    for (let t = 0; t < 15; t++) client.apply((await w.tick()).packets[0].bytes);
    expect(client.despawnsReceived).toBe(1);
    expect(client.held.has(hover)).toBe(false);
  });
});

describe('ghosts inside the grace window', () => {
  // A ghost held past the cap moves 1 m a tick: it stays held for the grace window and is updated
  // while it lasts (not frozen), then departs.
  async function pastCap(setup: (w: World) => { viewer: number; held: number; pushOut: () => void }, config: Parameters<typeof WorldConfig.build>[0]) {
    const c = WorldConfig.build(config);
    const w = new World(c, { capacity: 64, threads: 1 });
    const { viewer, held, pushOut } = setup(w);
    w.addViewer(viewer);
    const client = new ModelClient(c);
    client.apply((await w.tick()).packets[0].bytes);
    expect(client.held.has(held)).toBe(true);
    pushOut();
    const sentAt: number[] = [];
    let departedAt = -1;
    for (let t = 1; t <= c.graceTicks + 3; t++) {
      w.positions.x[w.slotOf(held)] += toRaw(1);
      const res = await w.tick();
      const u = updatesOf(res, viewer, c);
      if (u.ids.includes(held)) sentAt.push(t);
      if (u.despawns.includes(held)) departedAt = t;
      client.apply(res.packets[0].bytes);
      if (client.held.has(held)) expect(client.held.get(held)!.x).toBe(w.positions.x[w.slotOf(held)]);
    }
    return { sentAt, departedAt, grace: c.graceTicks };
  }

  it('a ghost pushed past the ghost cap is updated every tick of its grace window, then despawned', async () => {
    const r = await pastCap(
      (w) => {
        const viewer = w.spawn({ x: 1000, y: 1000, z: 0 });
        for (let i = 0; i < 3; i++) w.spawn({ x: 1000 + 5 + i, y: 1000, z: 0 });
        const held = w.spawn({ x: 1000, y: 1040, z: 0 });
        return { viewer, held, pushOut: () => void w.spawn({ x: 1000, y: 1002, z: 0 }) };
      },
      { ghostCap: 4, graceTicks: 6 },
    );
    // Not eligible from tick 1 on: updated on ticks 1..grace + 1, despawned on the pass after.
    expect(r.sentAt).toEqual(Array.from({ length: r.grace + 1 }, (_, i) => i + 1));
    expect(r.departedAt).toBe(r.grace + 2);
  });

  it('a ghost the capped walk no longer reaches is updated while it is held', async () => {
    // Cells of 32 m; the walk stops after the viewer's own cell once it holds a candidate.
    const r = await pastCap(
      (w) => {
        const viewer = w.spawn({ x: 1000, y: 1000, z: 0 });
        const held = w.spawn({ x: 1040, y: 1000, z: 0 });
        return { viewer, held, pushOut: () => void w.spawn({ x: 1001, y: 1001, z: 0 }) };
      },
      { cellSize: 32, viewRadius: 64, walkCap: 1, graceTicks: 4 },
    );
    expect(r.sentAt).toEqual(Array.from({ length: r.grace + 1 }, (_, i) => i + 1));
    expect(r.departedAt).toBe(r.grace + 2);
  });
});

describe('a full ghost table', () => {
  it('a viewer that moved through two crowds gets its new neighbours at once: idle ghosts are evicted early, least recently eligible first', async () => {
    for (const [ghostCap, graceTicks] of [
      [8, 1000],
      [32, 10],
    ]) {
      const c = WorldConfig.build({ ghostCap, graceTicks });
      const w = new World(c, { capacity: 512, threads: 1 });
      const viewer = w.spawn({ x: 100, y: 100, z: 0 });
      // Three crowds of ghostCap + 4, each packed in a few meters, far apart.
      const crowd = (at: number) => Array.from({ length: ghostCap + 4 }, (_, i) => w.spawn({ x: at + (i % 8) * 0.5, y: at + Math.floor(i / 8) * 0.5, z: 0 }));
      const first = crowd(1000);
      const second = crowd(2000);
      const third = crowd(3000);
      w.addViewer(viewer);
      const client = new ModelClient(c);
      const clients = new Map([[viewer, client]]);
      const tick = async () => {
        for (const id of third) w.setPosition(id, { ...w.position(id), z: w.position(id).z === 0 ? 1 : 0 });
        const res = await w.tick();
        deliver(res, clients, c);
        return res;
      };
      w.setPosition(viewer, { x: 1001, y: 1001, z: 0 });
      for (let t = 0; t < 4; t++) await tick();
      w.setPosition(viewer, { x: 2001, y: 2001, z: 0 });
      for (let t = 0; t < 4; t++) await tick();
      // The table holds both crowds' nearest ghostCap: full (graceTicks has not run out).
      expect(client.held.size).toBe(c.ghostTableCapacity);
      w.setPosition(viewer, { x: 3001, y: 3001, z: 0 });
      const arrival = await tick();
      expect(arrival.stats.ghostTableFull).toBe(ghostCap);
      expect(arrival.stats.pressureEvictions).toBe(ghostCap);
      // The first crowd's ghosts, eligible longest ago, go first.
      expect(first.filter((id) => client.held.has(id)).length).toBe(0);
      expect(second.filter((id) => client.held.has(id)).length).toBe(ghostCap);
      await tick();
      expect(third.filter((id) => client.held.has(id)).length).toBe(ghostCap);
      expect(Array.from(w.ghosts(viewer).ids).sort((a, b) => a - b)).toEqual([...client.held.keys()].sort((a, b) => a - b));
    }
  });
});

describe('reused slots', () => {
  it('a ghost and the later occupants of its slot are told apart while the client holds them all', async () => {
    // Capacity 3: every despawn frees the only free slot and the next spawn reuses it, so the
    // viewer's table holds several generations of one slot at once (inside the grace window).
    const c = WorldConfig.build({ graceTicks: 6 });
    const w = new World(c, { capacity: 3, threads: 1, recordGhostPositions: true });
    const viewer = w.spawn({ x: 2000, y: 2000, z: 0 });
    const other = w.spawn({ x: 2010, y: 2000, z: 0 });
    let churn = w.spawn({ x: 2005, y: 2000, z: 0 });
    w.addViewer(viewer);
    const client = new ModelClient(c);
    const generations: number[] = [churn];
    let mostAtOnce = 0;
    for (let t = 0; t < 60; t++) {
      // Every third tick the churning entity is replaced; the others keep moving.
      if (t % 3 === 2) {
        const slot = w.slotOf(churn);
        w.despawn(churn);
        churn = w.spawn({ x: 2005 + (t % 7), y: 2000, z: 0 });
        expect(w.slotOf(churn)).toBe(slot);
        generations.push(churn);
      }
      w.positions.x[w.slotOf(other)] += 100;
      w.positions.x[w.slotOf(churn)] += 50;
      const res = await w.tick();
      client.apply(res.packets[0].bytes);
      const server = serverGhosts(w, viewer);
      expect([...client.held.keys()].sort()).toEqual([...server.keys()].sort());
      for (const [id, pos] of server) expect(client.held.get(id)).toEqual(pos);
      // The live occupant is held with its latest position; older generations only within the grace window.
      expect(client.held.get(churn)?.x).toBe(w.positions.x[w.slotOf(churn)]);
      const sameSlot = [...client.held.keys()].filter((id) => (id & 0xfffff) === w.slotOf(churn)).length;
      mostAtOnce = Math.max(mostAtOnce, sameSlot);
    }
    // Several generations were held at once, and each departed one got exactly one despawn.
    expect(generations.length).toBe(21);
    expect(mostAtOnce).toBeGreaterThanOrEqual(3);
    const departed = generations.filter((id) => id !== churn && !client.held.has(id));
    expect(departed.length).toBeGreaterThan(10);
    expect(client.despawnsReceived).toBe(departed.length);
  });
});

describe('randomized worlds against a model of every client', () => {
  async function run(seed: number, threads: number, ticks: number, check: boolean): Promise<Uint8Array[]> {
    const r = rng(seed);
    const c = WorldConfig.build({ regionSize: 1024, viewRadius: 100, graceTicks: randInt(r, 0, 6), ghostCap: randInt(r, 8, 80) });
    const w = new World(c, { capacity: 700, threads, recordGhostPositions: check });
    const live: number[] = [];
    const spawn = () => live.push(w.spawn({ x: r() * 1024, y: r() * 1024, z: (r() - 0.5) * 1200 }));
    for (let i = 0; i < 500; i++) spawn();
    const viewers = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const v = live[i];
      w.addViewer(v, { payloadBytes: 16 + 12 * randInt(r, 1, 30) + 4 * randInt(r, 0, 4), sendPeriod: randInt(r, 1, 4) });
      viewers.add(v);
    }
    const clients = new Map<number, ModelClient>();
    const out: Uint8Array[] = [];
    for (let t = 0; t < ticks; t++) {
      // Moves: most wander, some teleport, a few leave the region.
      for (const id of live) {
        const s = w.slotOf(id);
        const k = r();
        if (k < 0.5) {
          w.positions.x[s] += randInt(r, -800, 800);
          w.positions.y[s] += randInt(r, -800, 800);
        } else if (k < 0.52) {
          w.positions.x[s] = randInt(r, -2000, 1024 * 1024 + 2000);
          w.positions.y[s] = randInt(r, 0, 1024 * 1024);
        }
      }
      // Spawns and despawns (avatars included).
      for (let k = 0; k < 3; k++) {
        if (live.length > 50 && r() < 0.5) {
          const i = randInt(r, 0, live.length);
          const id = live[i];
          live.splice(i, 1);
          w.despawn(id);
        }
        if (live.length < 690 && r() < 0.5) spawn();
      }
      // Viewers come and go.
      if (r() < 0.1 && viewers.size > 0) {
        const v = [...viewers][randInt(r, 0, viewers.size)];
        w.removeViewer(v);
        viewers.delete(v);
        clients.delete(v);
      }
      if (r() < 0.1) {
        const v = live[randInt(r, 0, live.length)];
        if (!viewers.has(v)) {
          w.addViewer(v, { payloadBytes: 16 + 12 * randInt(r, 1, 98) });
          viewers.add(v);
        }
      }
      const res = await w.tick();
      for (const p of res.packets) out.push(p.bytes.slice());
      if (!check) continue;
      for (const p of res.packets) {
        expect(viewers.has(p.viewer)).toBe(true);
        const payload = w.config.payloadBytes;
        expect(p.bytes.length).toBeLessThanOrEqual(Math.max(payload, 16 + 12 * 98 + 16));
      }
      deliver(res, clients, c);
      // Every client's model equals the server's ghost table: ids and last-sent positions.
      for (const [v, client] of clients) {
        const server = serverGhosts(w, v);
        expect(client.held.size).toBe(server.size);
        for (const [id, pos] of server) {
          const held = client.held.get(id);
          expect(held, `viewer ${v} entity ${id}`).toBeDefined();
          expect(held).toEqual(pos);
        }
      }
      expect(res.stats.served + res.stats.skippedNotDue + res.stats.skippedAvatarGone + res.stats.skippedOutsideRegion).toBe(w.viewerCount);
    }
    return out;
  }

  for (const seed of [101, 202, 303]) {
    it(`clients rebuilt from packets equal the server's ghost tables (seed ${seed})`, async () => {
      await withSeed(seed, async () => {
        await run(seed, 2, 150, true);
      });
    });
  }

  it('packets are byte-identical for 1, 2 and 8 threads over hundreds of ticks', async () => {
    await withSeed(77, async () => {
      const a = await run(77, 1, 300, false);
      const b = await run(77, 2, 300, false);
      const d = await run(77, 8, 300, false);
      expect(a.length).toBeGreaterThan(1000);
      expect(b.length).toBe(a.length);
      expect(d.length).toBe(a.length);
      for (let i = 0; i < a.length; i++) {
        expect(Buffer.compare(Buffer.from(a[i]), Buffer.from(b[i]))).toBe(0);
        expect(Buffer.compare(Buffer.from(a[i]), Buffer.from(d[i]))).toBe(0);
      }
    });
  });
});

describe('worlds sharing a thread pool', () => {
  it('four worlds of 2 threads ticking at once (one pool, passes in turn) write what each writes alone on 1 thread', async () => {
    const c = WorldConfig.build();
    const make = (seed: number, threads: number) => {
      const w = new World(c, { capacity: 4096, threads });
      const r = rng(seed);
      const ids: number[] = [];
      for (let i = 0; i < 1500; i++) ids.push(w.spawn({ x: 2048 + (r() - 0.5) * 300, y: 2048 + (r() - 0.5) * 300, z: 0 }));
      for (let i = 0; i < 300; i++) w.addViewer(ids[i]);
      const step = () => {
        for (const id of ids) w.positions.x[w.slotOf(id)] += randInt(r, -60, 60);
      };
      return { w, step, out: [] as Buffer[] };
    };
    const alone: Buffer[][] = [];
    for (const seed of [1, 2, 3, 4]) {
      const a = make(seed, 1);
      for (let t = 0; t < 40; t++) {
        a.step();
        const res = await a.w.tick();
        for (let i = 0; i < res.count; i++) a.out.push(Buffer.from(res.bytesAt(i)));
      }
      a.w.close();
      alone.push(a.out);
    }
    const together = [1, 2, 3, 4].map((seed) => make(seed, 2));
    for (let t = 0; t < 40; t++) {
      for (const x of together) x.step();
      const results = await Promise.all(together.map((x) => x.w.tick()));
      results.forEach((res, k) => {
        for (let i = 0; i < res.count; i++) together[k].out.push(Buffer.from(res.bytesAt(i)));
      });
    }
    for (let k = 0; k < 4; k++) {
      expect(together[k].out.length).toBe(alone[k].length);
      expect(together[k].out.every((b, i) => b.equals(alone[k][i]))).toBe(true);
      together[k].w.close();
    }
  });
});

describe('packets', () => {
  it('never exceed the payload; header counts match the body; no entity twice', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 4096, threads: 2 });
    const r = rng(8);
    const ids: number[] = [];
    for (let i = 0; i < 3000; i++) ids.push(w.spawn({ x: 2048 + (r() - 0.5) * 200, y: 2048 + (r() - 0.5) * 200, z: 0 }));
    const payloads = [28, 100, 600, 1200, 1400];
    for (let i = 0; i < 50; i++) w.addViewer(ids[i], { payloadBytes: payloads[i % payloads.length] });
    for (let t = 0; t < 30; t++) {
      for (const id of ids) if (w.isLive(id)) w.positions.x[w.slotOf(id)] += randInt(r, -100, 100);
      if (t === 10) for (let i = 100; i < 1500; i++) w.despawn(ids[i]); // a burst of despawns
      const res = await w.tick();
      for (let i = 0; i < res.count; i++) {
        const bytes = res.bytesAt(i);
        const payload = payloads[ids.indexOf(res.viewerAt(i)) % payloads.length];
        expect(bytes.length).toBeLessThanOrEqual(payload);
        // decodePacketRaw checks counts against the length and rejects duplicate ids.
        const p = decodePacketRaw(bytes, c, createRawPacket(payload));
        expect(16 + 4 * p.despawnCount + 12 * p.updateCount).toBe(bytes.length);
        expect(4 * p.despawnCount).toBeLessThanOrEqual((payload - 16) / 2);
      }
    }
  });
});

describe('recorded ghost positions', () => {
  it('are the positions the client decodes: quantized, z clamped to the vertical extent', async () => {
    // A 65,536 m region drops 3 bits of each coordinate (quantShift 3).
    const c = WorldConfig.build({ regionSize: 65536 });
    expect(c.quantShift).toBeGreaterThan(0);
    const w = new World(c, { capacity: 64, threads: 1, recordGhostPositions: true });
    const viewer = w.spawn({ x: 1000, y: 1000, z: 0 });
    w.addViewer(viewer);
    const raw = (m: number) => m / 1024;
    const ids = [
      w.spawn({ x: raw(1_024_001), y: raw(1_024_003), z: raw(5) }),
      w.spawn({ x: raw(1_024_007), y: raw(1_023_999), z: raw(-3) }),
      w.spawn({ x: 1010, y: 1010, z: 1e6 }), // above the vertical extent
      w.spawn({ x: 1020, y: 1020, z: -1e6 }), // below it
    ];
    const client = new ModelClient(c);
    for (let t = 0; t < 2; t++) client.apply((await w.tick()).packets[0].bytes);
    const server = serverGhosts(w, viewer);
    expect([...server.keys()].sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
    for (const id of ids) expect(server.get(id), `entity ${id}`).toEqual(client.held.get(id));
    // And they differ from the entities' own positions where the wire rounds or clamps.
    expect(server.get(ids[0])?.x).not.toBe(w.positions.x[w.slotOf(ids[0])]);
    expect(server.get(ids[2])?.z).not.toBe(w.positions.z[w.slotOf(ids[2])]);
  });
});

describe('wrap-around', () => {
  it('past 2^32 odometer units and 2^16 sequence numbers nothing changes', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100, z: 0 });
    const mover = w.spawn({ x: 150, y: 100, z: 0 });
    w.addViewer(viewer);
    const client = new ModelClient(c);
    const s = w.slotOf(mover);
    let wraps = 0;
    let prevOdo = 0;
    for (let t = 0; t < 70_000; t++) {
      // Moves 120,000 raw per tick (2 × 60,000), except every 7th window of 5 ticks it rests.
      const resting = Math.floor(t / 5) % 7 === 0;
      if (!resting) {
        w.positions.x[s] += t % 2 === 0 ? 60_000 : -60_000;
        w.positions.y[s] += t % 2 === 0 ? 60_000 : -60_000;
      }
      const res = await w.tick();
      const p = client.apply(res.packets[0].bytes);
      const odo = w.odometer(mover);
      if (odo < prevOdo) wraps++;
      prevOdo = odo;
      if (t > 10) {
        // Moving: sent every tick; resting: never.
        expect(p.updateCount).toBe(resting ? 0 : 1);
      }
    }
    expect(wraps).toBeGreaterThanOrEqual(1);
    expect(client.lastSequence).toBe((70_000 - 1) & 0xffff);
    expect(client.held.get(mover)).toEqual({ x: w.positions.x[s], y: w.positions.y[s], z: 0 });
  }, 120_000);
});
