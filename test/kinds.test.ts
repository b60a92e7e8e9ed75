// Kinds: a u16 per entity, sent with its first update to a viewer (unless 0) and with the first
// update after a change, never in every record. Checked against a model client built from the
// decoded packets.
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, toRaw } from '../lib/index.js';
import { ModelClient, ackOf, codeOf, randInt, rng, withSeed } from './helpers/model.js';

describe('kinds', () => {
  it('ride with the first sighting (none for kind 0), then never again until they change', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 64, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { kind: 7 });
    const b = w.spawn({ x: 102, y: 100 });
    const z = w.spawn({ x: 103, y: 100 }, { kind: 65535 });
    expect([w.kind(a), w.kind(b), w.kind(z)]).toEqual([7, 0, 65535]);
    w.addViewer(viewer);
    const client = new ModelClient(c);
    const first = client.apply((await w.tick()).packets[0].bytes);
    expect(first.kindCount).toBe(2);
    expect(client.kinds).toEqual(new Map([[a, 7], [b, 0], [z, 65535]]));
    // Moving, the entities are sent every tick, without kind records.
    for (let t = 0; t < 5; t++) {
      for (const id of [a, b, z]) w.positions.x[w.slotOf(id)] += toRaw(0.5);
      const p = client.apply((await w.tick()).packets[0].bytes);
      expect(p.updateCount).toBe(3);
      expect(p.kindCount).toBe(0);
    }
    const quiet = await w.tick();
    expect(quiet.stats.records).toBe(0);
    client.apply(quiet.packets[0].bytes);
    // A still entity whose kind changes is sent, once, with its new kind; 0 is sent too.
    w.setKind(a, 3);
    w.setKind(z, 0);
    w.setKind(b, 0);  // no change: nothing to send
    const res = await w.tick();
    expect(res.stats.kinds).toBe(2);
    const p = client.apply(res.packets[0].bytes);
    expect(Array.from(p.ids.subarray(0, p.updateCount)).sort()).toEqual([a, z].sort());
    expect(client.kinds).toEqual(new Map([[a, 3], [b, 0], [z, 0]]));
    for (let t = 0; t < 3; t++) expect((await w.tick()).stats.records).toBe(0);
  });

  it('a kind changed back and forth between two packets: the last one is sent, once', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { kind: 1 });
    w.addViewer(viewer, { sendPeriod: 3 });
    const client = new ModelClient(c);
    for (let t = 0; t < 4; t++) for (const q of (await w.tick()).packets) client.apply(q.bytes);
    expect(client.kinds.get(a)).toBe(1);
    let kinds = 0;
    for (const k of [2, 5, 9]) {
      w.setKind(a, k);
      const r = await w.tick();
      kinds += r.stats.kinds;
      for (const q of r.packets) client.apply(q.bytes);
    }
    for (let t = 0; t < 6; t++) {
      const r = await w.tick();
      kinds += r.stats.kinds;
      for (const q of r.packets) client.apply(q.bytes);
    }
    expect(client.kinds.get(a)).toBe(9);
    expect(kinds).toBeLessThanOrEqual(2);  // at most one pass saw an intermediate kind
  });

  it('bad input is a coded error and changes nothing', () => {
    const w = new World(WorldConfig.build(), { capacity: 4, threads: 1 });
    const a = w.spawn({ x: 1, y: 1 }, { kind: 2 });
    for (const bad of [-1, 65536, 1.5, NaN, '3' as never, null as never]) {
      expect(codeOf(() => w.setKind(a, bad))).toBe('ERR_SIGHTLINE_INVALID_KIND');
      expect(codeOf(() => w.spawn({ x: 1, y: 1 }, { kind: bad }))).toBe('ERR_SIGHTLINE_INVALID_KIND');
    }
    expect(w.kind(a)).toBe(2);
    expect(w.liveCount).toBe(1);
    expect(codeOf(() => w.spawn({ x: 1, y: 1 }, { kin: 2 } as never))).toBe('ERR_SIGHTLINE_UNKNOWN_OPTION');
    w.despawn(a);
    expect(codeOf(() => w.setKind(a, 1))).toBe('ERR_SIGHTLINE_STALE_ENTITY');
    expect(codeOf(() => w.kind(a))).toBe('ERR_SIGHTLINE_STALE_ENTITY');
    expect(codeOf(() => w.setKind(12345, 1))).toBe('ERR_SIGHTLINE_INVALID_ENTITY');
    expect(w.liveCount).toBe(0);
  });

  it('with acks, a kind whose packet is lost is sent again, also when a later record of the entity got through', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { kind: 1 });
    w.addViewer(viewer, { acks: true });
    const client = new ModelClient(c);
    const received = new Set<number>();
    const deliver = (bytes: Uint8Array) => {
      // The model client insists on consecutive sequences: give it the packet as if it were.
      client.lastSequence = -1;
      const p = client.apply(bytes);
      received.add(p.sequence);
      const [ack, bits] = ackOf(received, p.sequence);
      w.acknowledge(viewer, ack, bits);
    };
    deliver((await w.tick()).packets[0].bytes);
    expect(client.kinds.get(a)).toBe(1);
    w.setKind(a, 4);
    const lost = await w.tick();  // carries the kind: lost
    expect(lost.stats.kinds).toBe(1);
    for (let t = 0; t < 4; t++) {
      w.positions.x[w.slotOf(a)] += toRaw(0.5);  // later records, without the kind
      deliver((await w.tick()).packets[0].bytes);
    }
    for (let t = 0; t < 6; t++) {
      const r = await w.tick();
      if (r.packets.length) deliver(r.packets[0].bytes);
    }
    expect(client.kinds.get(a)).toBe(4);
  });

  it('randomized, crowded packets: every first sighting carries its kind, and clients end with every kind', async () => {
    await withSeed(31, async (seed) => {
      const r = rng(seed);
      const c = WorldConfig.build({ regionSize: 1024, viewRadius: 100, payloadBytes: 300, ghostCap: 80 });
      const w = new World(c, { capacity: 700, threads: 2 });
      const ids = Array.from({ length: 600 }, () => w.spawn({ x: 450 + r() * 100, y: 450 + r() * 100 }, { kind: randInt(r, 0, 5) }));
      const viewers = ids.slice(0, 30);
      for (const v of viewers) w.addViewer(v);
      const clients = new Map(viewers.map((v) => [v, new ModelClient(c, 300)]));
      for (let t = 0; t < 150; t++) {
        if (t < 100) {
          for (const id of ids) {
            const s = w.slotOf(id);
            if (r() < 0.5) w.positions.x[s] += randInt(r, -400, 400);
            if (r() < 0.01) w.setKind(id, randInt(r, 0, 5));
          }
        }
        const res = await w.tick();
        for (const p of res.packets) {
          expect(p.bytes.length).toBeLessThanOrEqual(300);
          clients.get(p.viewer)!.apply(p.bytes);
        }
      }
      for (const [v, client] of clients) {
        expect(client.held.size).toBeGreaterThan(30);
        for (const id of client.held.keys()) expect({ v, id, kind: client.kinds.get(id) }).toEqual({ v, id, kind: w.kind(id) });
      }
    });
  });
});
