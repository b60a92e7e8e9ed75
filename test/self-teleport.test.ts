// Self records, teleports and spectators, each against a brute-force twin: the self record leads a
// packet exactly when the avatar moved since it was last sent and carries where it is now; after a
// teleport every ghost outside the new radius departs in id order, ahead of the rest, no later than
// the despawn budget allows, and the new place arrives nearest first; a spectator sees what an
// avatar there would and is seen by no one. Bad input, and the same bytes for 1, 2 and 8 threads.
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, decodePacket, toRaw, type TickResult } from '../lib/index.js';
import { ModelClient, bruteRadius, errorCode, randInt, rng, withSeed } from './helpers/model.js';

const config = WorldConfig.build();

function packetOf(r: TickResult, viewer: number): Uint8Array | undefined {
  return r.packets.find((p) => p.viewer === viewer)?.bytes;
}

/** The most despawn records a packet of `payloadBytes` carries (no events): half its state bytes. */
function despawnBudget(payloadBytes: number): number {
  return Math.floor((payloadBytes - 16) / 2 / 4);
}

describe('self records', () => {
  it('lead a packet exactly when the avatar moved since the last one (a server-side move within one packet), with its position now; never without self', async () => {
    for (const seed of [5, 6, 7]) {
      await withSeed(seed, async () => {
        const r = rng(seed);
        const w = new World(config, { capacity: 400, threads: 2 });
        const ids: number[] = [];
        for (let i = 0; i < 300; i++) ids.push(w.spawn({ x: 1000 + r() * 200, y: 1000 + r() * 200 }));
        const mine = ids[0];
        const other = ids[1];
        w.addViewer(mine, { self: true, payloadBytes: 300 });
        w.addViewer(other, { payloadBytes: 300 });
        let pending = true; // never sent: the first packet carries it
        let selfSeen = 0;
        for (let t = 0; t < 150; t++) {
          for (const id of ids.slice(2)) if (r() < 0.3) w.setPosition(id, { x: 1000 + r() * 200, y: 1000 + r() * 200 });
          const moved = r() < 0.4;
          if (moved) w.setPosition(mine, { x: 1000 + r() * 200, y: 1000 + r() * 200, z: randInt(r, -5, 5) });
          pending ||= moved;
          const res = await w.tick();
          const p = decodePacket(packetOf(res, mine)!, config);
          const at = p.updates.findIndex((u) => u.id === mine);
          if (pending) {
            expect(at, `tick ${t}`).toBe(0);
            expect(p.updates[0]).toEqual({ id: mine, ...w.position(mine) });
            selfSeen++;
          } else {
            expect(at, `tick ${t}`).toBe(-1);
          }
          pending = false;
          expect(res.stats.selfRecords).toBe(at === 0 ? 1 : 0);
          expect(decodePacket(packetOf(res, other)!, config).updates.some((u) => u.id === other)).toBe(false);
        }
        expect(selfSeen).toBeGreaterThan(40);
        w.close();
      });
    }
  });

  it('take one update slot of the budget, and go again when the packet that carried one is lost', async () => {
    const w = new World(config, { capacity: 64, threads: 1 });
    const mine = w.spawn({ x: 100, y: 100 });
    for (let i = 0; i < 20; i++) w.spawn({ x: 110 + i, y: 100 });
    // Room for one update record: the self record when the avatar moved, else a ghost's.
    w.addViewer(mine, { self: true, acks: true, payloadBytes: config.minPayloadBytes });
    const step = async () => decodePacket((await w.tick()).packets[0].bytes, config);
    let p = await step();
    expect(p.updates.map((u) => u.id)).toEqual([mine]);
    const seq = p.sequence;
    p = await step();
    expect(p.updates).toHaveLength(1);
    expect(p.updates[0].id).not.toBe(mine);
    w.setPosition(mine, { x: 101, y: 100, z: 0 });
    p = await step();
    expect(p.updates).toEqual([{ id: mine, x: 101, y: 100, z: 0 }]);
    const moveSeq = p.sequence;
    for (let k = 0; k < 3; k++) expect((await step()).updates.map((u) => u.id)).not.toContain(mine);
    // Acknowledged: every packet but the one with the move, three sequences back (probably lost).
    const newest = (moveSeq + 3) & 0xffff;
    let bits = 0;
    for (let i = 0; i < 32; i++) {
      const s = (newest - 1 - i) & 0xffff;
      if (s !== moveSeq && ((s - seq) & 0xffff) < 0x8000) bits |= 1 << i;
    }
    w.acknowledge(mine, newest, bits >>> 0);
    p = await step();
    expect(p.updates).toEqual([{ id: mine, x: 101, y: 100, z: 0 }]);
    expect((await step()).updates.map((u) => u.id)).not.toContain(mine);
    w.close();
  });
});

/** A world of two static crowds, A around (600, 600) and B around (3000, 3000), and one viewer at A. */
function twoPlaces(seed: number, viewer: { teleportDistance?: number }, payloadBytes = 600) {
  const r = rng(seed);
  const w = new World(config, { capacity: 400, threads: 1 });
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < 150; i++) a.push(w.spawn({ x: 600 + r() * 150 - 75, y: 600 + r() * 150 - 75 }));
  for (let i = 0; i < 150; i++) b.push(w.spawn({ x: 3000 + r() * 150 - 75, y: 3000 + r() * 150 - 75 }));
  const avatar = w.spawn({ x: 600, y: 600 });
  w.addViewer(avatar, { payloadBytes, ...viewer });
  return { w, a, b, avatar, client: new ModelClient(config, payloadBytes) };
}

describe('teleports', () => {
  it('make every ghost of the old place depart at once, in id order and within the despawn budget, and the new place arrive nearest first; without one they stay for the grace window', async () => {
    const payload = 600;
    const D = despawnBudget(payload);
    const byDistance = twoPlaces(1, { teleportDistance: 100 }, payload);
    const byCall = twoPlaces(1, {}, payload);
    const plain = twoPlaces(1, {}, payload);
    const worlds = [byDistance, byCall, plain];
    let teleports: number[] = [];
    const tickAll = async () => {
      const out: Uint8Array[] = [];
      teleports = [];
      for (const s of worlds) {
        const res = await s.w.tick();
        const bytes = packetOf(res, s.avatar)!;
        s.client.apply(bytes);
        out.push(new Uint8Array(bytes));
        teleports.push(res.stats.teleports);
      }
      return out;
    };
    for (let t = 0; t < 12; t++) await tickAll();
    for (const s of worlds) expect(new Set(s.client.held.keys())).toEqual(new Set(s.a));
    // A walk shorter than the distance is no teleport.
    for (const s of worlds) s.w.setPosition(s.avatar, { x: 640, y: 600, z: 0 });
    await tickAll();
    expect(teleports).toEqual([0, 0, 0]);
    for (const s of worlds) s.w.setPosition(s.avatar, { x: 3000, y: 3000, z: 0 });
    byCall.w.teleportViewer(byCall.avatar);
    // Brute force: what the client holds outside the radius of the new place, in id order, goes
    // D a packet; the first packet's updates are the nearest of the new place.
    const far = [...byDistance.client.held.keys()].filter((id) => !bruteRadius(byDistance.w, [id], toRaw(3000), toRaw(3000)).has(id)).sort((x, y) => x - y);
    expect(far).toHaveLength(150);
    const slots = Math.floor((payload - 16 - D * 4) / 12);
    const nearest = byDistance.b
      .map((id) => ({ id, d2: (byDistance.w.position(id).x - 3000) ** 2 + (byDistance.w.position(id).y - 3000) ** 2 }))
      .sort((x, y) => x.d2 - y.d2)
      .slice(0, slots)
      .map((k) => k.id);
    const packets = Math.ceil(far.length / D);
    for (let k = 0; k < packets; k++) {
      const [bd, bc] = await tickAll();
      expect(bc).toEqual(bd); // teleportViewer does what the distance does
      expect(teleports).toEqual(k === 0 ? [1, 1, 0] : [0, 0, 0]);
      const p = decodePacket(bd, config);
      expect(Array.from(p.despawns)).toEqual(far.slice(k * D, (k + 1) * D));
      if (k === 0) expect(new Set(p.updates.map((u) => u.id))).toEqual(new Set(nearest));
    }
    for (const id of far) expect(byDistance.client.held.has(id)).toBe(false);
    // Without a teleport the old place is still held (the grace window, 10 passes by default).
    expect([...plain.client.held.keys()].filter((id) => plain.a.includes(id)).length).toBe(150);
    for (const s of worlds) s.w.close();
  });

  it('on random worlds: no ghost from the old place is held one packet after the despawn budget allows', async () => {
    for (const seed of [21, 22, 23, 24]) {
      await withSeed(seed, async () => {
        const r = rng(seed);
        const c = WorldConfig.build({ regionSize: 1024, viewRadius: 128, graceTicks: 30 });
        const payload = randInt(r, 120, 600);
        const D = despawnBudget(payload);
        const w = new World(c, { capacity: 3000, threads: 1 });
        const ids: number[] = [];
        for (let i = 0; i < 2500; i++) ids.push(w.spawn({ x: r() * 1024, y: r() * 1024 }));
        const avatar = ids[0];
        w.addViewer(avatar, { payloadBytes: payload, teleportDistance: randInt(r, 20, 200), viewRadius: 60 + r() * 68 });
        const client = new ModelClient(c, payload);
        let watch: { ids: Set<number>; deadline: number } | undefined;
        let teleports = 0;
        let watched = 0;
        let multiPacket = 0;
        for (let t = 0; t < 240; t++) {
          const s = w.slotOf(avatar);
          if (t % 20 === 10) {
            const x = r() * 1024;
            const y = r() * 1024;
            w.setPosition(avatar, { x, y, z: 0 });
            if (r() < 0.5) w.teleportViewer(avatar); // a move that the distance catches anyway
            teleports++;
            const radius = toRaw(w.viewerSettings(avatar).viewRadius);
            const vx = w.positions.x[s];
            const vy = w.positions.y[s];
            const old = new Set<number>();
            for (const id of client.held.keys()) {
              const e = w.slotOf(id);
              if ((w.positions.x[e] - vx) ** 2 + (w.positions.y[e] - vy) ** 2 > radius ** 2) old.add(id);
            }
            watch = { ids: old, deadline: t + Math.ceil(old.size / D) - 1 };
            watched += old.size;
            multiPacket += old.size > D ? 1 : 0;
          } else {
            // A slow walk (less than any teleport distance), kept inside the region.
            w.positions.x[s] = Math.min(c.regionRaw - 1, Math.max(0, w.positions.x[s] + randInt(r, -2000, 2001)));
            w.positions.y[s] = Math.min(c.regionRaw - 1, Math.max(0, w.positions.y[s] + randInt(r, -2000, 2001)));
          }
          // The old place's ghosts the client still holds, outside the radius now.
          const radius = toRaw(w.viewerSettings(avatar).viewRadius);
          const outside = (id: number) => {
            const e = w.slotOf(id);
            return (w.positions.x[e] - w.positions.x[s]) ** 2 + (w.positions.y[e] - w.positions.y[s]) ** 2 > radius ** 2;
          };
          // One back within the radius belongs to the new place from then on (the grace rule is its).
          if (watch) for (const id of watch.ids) if (!outside(id)) watch.ids.delete(id);
          const due = watch ? [...watch.ids].filter((id) => client.held.has(id)) : [];
          const res = await w.tick();
          const p = client.apply(packetOf(res, avatar)!);
          if (watch && t <= watch.deadline) {
            // The packet's despawns are the old place's first, as many as the budget allows.
            const despawns = Array.from(p.despawns.subarray(0, p.despawnCount));
            const head = despawns.slice(0, Math.min(D, due.length));
            expect(head.length, `seed ${seed} tick ${t}`).toBe(Math.min(D, due.length));
            for (const id of head) expect(watch.ids.has(id), `seed ${seed} tick ${t}: ${id}`).toBe(true);
          }
          if (watch && t === watch.deadline) {
            for (const id of watch.ids) expect(client.held.has(id), `seed ${seed} tick ${t}: ${id} still held`).toBe(false);
            watch = undefined;
          }
        }
        expect(teleports).toBe(12);
        // The old places held many ghosts, some more than one packet's despawns.
        expect(watched).toBeGreaterThan(12 * 10);
        expect(multiPacket).toBeGreaterThan(0);
        w.close();
      });
    }
  });
});

describe('spectators', () => {
  it('see what is around the position the game gives them, follow it, are seen by no viewer, and take their camera with them when removed', async () => {
    const r = rng(3);
    const w = new World(config, { capacity: 600, threads: 2 });
    const ids: number[] = [];
    for (let i = 0; i < 500; i++) ids.push(w.spawn({ x: 500 + r() * 3000, y: 500 + r() * 3000 }));
    const watcher = ids[0];
    w.addViewer(watcher, { self: true });
    const cam = w.addViewer({ at: { x: 1000, y: 1000, z: 0 }, acks: false });
    expect(w.isLive(cam)).toBe(true);
    expect(w.hasViewer(cam)).toBe(true);
    w.setPosition(watcher, { x: 1001, y: 1000, z: 0 }); // the camera is well within its radius
    const spectator = new ModelClient(config);
    const seenBy = new Set<number>();
    const step = async () => {
      const res = await w.tick();
      for (const p of res.packets) for (const u of decodePacket(p.bytes, config).updates) if (u.id === cam) seenBy.add(p.viewer);
      spectator.apply(packetOf(res, cam)!);
    };
    for (let t = 0; t < 15; t++) await step();
    const s = w.slotOf(cam);
    expect(new Set(spectator.held.keys())).toEqual(bruteRadius(w, [...ids], w.positions.x[s], w.positions.y[s]));
    // The game moves the camera; a teleport clears the old view at once.
    w.setPosition(cam, { x: 3000, y: 3000, z: 0 });
    w.teleportViewer(cam);
    for (let t = 0; t < 15; t++) await step();
    expect(new Set(spectator.held.keys())).toEqual(bruteRadius(w, [...ids], w.positions.x[s], w.positions.y[s]));
    expect(seenBy.size).toBe(0);
    const live = w.liveCount;
    w.removeViewer(cam);
    expect(w.isLive(cam)).toBe(false);
    expect(w.liveCount).toBe(live - 1);
    w.close();
  });
});

describe('bad input', () => {
  it('self, teleportDistance, teleportViewer and spectators refuse what they cannot take with coded errors and change nothing', () => {
    const w = new World(config, { capacity: 64, threads: 1 });
    const a = w.spawn({ x: 100, y: 100 });
    const live = w.liveCount;
    const same = () => {
      expect(w.liveCount).toBe(live);
      expect(w.viewerCount).toBe(0);
    };
    for (const d of [0, -1, NaN, Infinity, 'far', config.input.regionSize + 1]) {
      expect(errorCode(() => w.addViewer(a, { teleportDistance: d as number }))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
      same();
    }
    expect(errorCode(() => w.addViewer(a, { self: 'yes' as unknown as boolean }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    // A spectator given an entity id, a bad position, an avatar's option or a bad setting: nothing spawned.
    expect(errorCode(() => w.addViewer(a, { at: { x: 1, y: 1, z: 0 } } as never))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    expect(errorCode(() => w.addViewer({ at: { x: NaN, y: 1, z: 0 } }))).toBe('ERR_SIGHTLINE_INVALID_POSITION');
    expect(errorCode(() => w.addViewer({ at: { x: 1, y: 1, z: 0 }, self: true as false }))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    expect(errorCode(() => w.addViewer({ at: { x: 1, y: 1, z: 0 }, payloadBytes: 5 }))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    expect(errorCode(() => w.addViewer({ at: { x: 1, y: 1, z: 0 }, radius: 5 } as never))).toBe('ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(errorCode(() => w.addViewer({} as never))).toBe('ERR_SIGHTLINE_INVALID_VIEWER_OPTION');
    same();
    expect(errorCode(() => w.teleportViewer(a))).toBe('ERR_SIGHTLINE_UNKNOWN_VIEWER');
    const cam = w.addViewer({ at: { x: 1, y: 1, z: 0 } });
    expect(errorCode(() => w.setGroups(cam, 1))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(w.groups(cam)).toBe(0);
    w.close();
  });
});

describe('thread counts', () => {
  it('1, 2 and 8 threads send the same bytes with self records, teleports and spectators in use beside the other controls', async () => {
    const run = async (threads: number): Promise<string[]> => {
      const r = rng(77);
      const w = new World(WorldConfig.build({ graceTicks: 4 }), { capacity: 3000, threads });
      const ids: number[] = [];
      for (let i = 0; i < 2400; i++) ids.push(w.spawn({ x: i < 1200 ? 2000 + r() * 120 : r() * 4096, y: i < 1200 ? 2000 + r() * 120 : r() * 4096 }));
      const viewers = ids.slice(0, 300);
      viewers.forEach((v, i) =>
        w.addViewer(v, { self: i % 2 === 0, acks: i % 3 === 0, teleportDistance: i % 4 === 0 ? 30 : undefined, groups: randInt(r, 1, 16), viewRadius: 40 + r() * 216 }),
      );
      const cams = Array.from({ length: 20 }, () => w.addViewer({ at: { x: r() * 4096, y: r() * 4096, z: 0 }, payloadBytes: randInt(r, 200, 1500) }));
      const out: string[] = [];
      for (let t = 0; t < 30; t++) {
        for (const id of ids) w.positions.x[w.slotOf(id)] += randInt(r, -100, 101);
        for (const v of [...viewers, ...cams]) {
          const k = r();
          if (k < 0.03) w.setPosition(v, { x: r() * 4096, y: r() * 4096, z: 0 });
          else if (k < 0.05) w.teleportViewer(v);
        }
        for (const id of ids) if (r() < 0.02) w.setPriority(id, randInt(r, 1, 17));
        const p = w.tick();
        for (const v of viewers) if (r() < 0.02) w.teleportViewer(v); // during the tick: the pass after
        const res = await p;
        for (const pk of res.packets) out.push(`${pk.viewer}:${Buffer.from(pk.bytes).toString('base64')}`);
        for (const pk of res.packets) if (viewers.indexOf(pk.viewer) % 3 === 0) w.acknowledge(pk.viewer, decodePacket(pk.bytes, w.config).sequence, 0);
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
