// Fast fields: declared in the config, written by slot like positions, carried in every update
// record after the position, and a change adds the field's weight to its entity's drift. Checked
// against a model client built from the decoded packets.
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, toRaw, type TickResult } from '../lib/index.js';
import { ModelClient, randInt, rng, withSeed } from './helpers/model.js';

const SCHEMA = [
  { name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI },
  { name: 'anim', bits: 6 },
  { name: 'health', bits: 8, max: 100, weight: 0.5 },
];

function sentIds(result: TickResult, client: ModelClient, viewer: number): number[] {
  const p = result.packets.find((q) => q.viewer === viewer);
  if (!p) return [];
  const raw = client.apply(p.bytes);
  return Array.from(raw.ids.subarray(0, raw.updateCount));
}

describe('fast fields', () => {
  it('are Int32Arrays by slot over the engine memory, one per declared field, zeroed at spawn', () => {
    const c = WorldConfig.build({ fields: SCHEMA });
    const w = new World(c, { capacity: 16, threads: 1 });
    expect(Object.keys(w.fields)).toEqual(['yaw', 'anim', 'health']);
    expect(Object.getPrototypeOf(w.fields)).toBe(null);
    expect(Object.isFrozen(w.fields)).toBe(true);
    for (const name of ['yaw', 'anim', 'health']) {
      expect(w.fields[name]).toBeInstanceOf(Int32Array);
      expect(w.fields[name].length).toBe(16);
    }
    const a = w.spawn({ x: 1, y: 1 });
    expect(w.slotOf(a)).toBe(0);
    w.fields.anim[0] = 9;
    w.despawn(a);
    // A freed slot is reused once no fresh one is left: after 15 more spawns, slot 0 again, its fields 0.
    for (let i = 0; i < 15; i++) w.spawn({ x: 2, y: 2 });
    const b = w.spawn({ x: 3, y: 3 });
    expect(w.slotOf(b)).toBe(0);
    expect(w.fields.anim[0]).toBe(0);
    expect(Object.keys(new World(WorldConfig.build(), { capacity: 4 }).fields)).toEqual([]);
  });

  it('ride in every update record after the position, as written, in declared units on the client', async () => {
    const c = WorldConfig.build({ fields: SCHEMA });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const e = w.spawn({ x: 110, y: 100 });
    const s = w.slotOf(e);
    w.fields.yaw[s] = c.fieldToRaw('yaw', Math.PI / 2);
    w.fields.anim[s] = 7;
    w.fields.health[s] = c.fieldToRaw('health', 75);
    w.addViewer(viewer);
    const client = new ModelClient(c);
    const r = await w.tick();
    expect(r.packets[0].bytes.length).toBe(16 + 15);  // e alone (a viewer is not sent its avatar), a 15-byte record
    client.apply(r.packets[0].bytes);
    expect(client.fields.get(e)).toEqual([256, 7, 191]);
    expect(c.fieldFromRaw('health', 191)).toBeCloseTo(74.9, 1);
  });

  it('a still entity whose field changes is delivered within sendPeriod + 1 passes; one with no change in position or fields is not sent', async () => {
    for (const sendPeriod of [1, 2, 3, 5]) {
      const c = WorldConfig.build({ fields: SCHEMA });
      const w = new World(c, { capacity: 64, threads: 1 });
      const viewer = w.spawn({ x: 500, y: 500 });
      const still = Array.from({ length: 20 }, (_, i) => w.spawn({ x: 500 + i, y: 510 }));
      w.addViewer(viewer, { sendPeriod });
      const client = new ModelClient(c);
      for (let t = 0; t < 2 * sendPeriod + 2; t++) sentIds(await w.tick(), client, viewer);
      expect(client.held.size).toBe(20);
      // Nothing changes: nothing is sent.
      for (let t = 0; t < 3 * sendPeriod; t++) expect(sentIds(await w.tick(), client, viewer)).toEqual([]);
      // One field of one still entity changes (each field in turn): it is sent, alone, within sendPeriod + 1 passes.
      for (const [k, name] of ['yaw', 'anim', 'health'].entries()) {
        const e = still[k * 3];
        w.fields[name][w.slotOf(e)] = 5 + k;
        let got: number[] = [];
        let passes = 0;
        for (let t = 0; t < (sendPeriod + 1) * sendPeriod && got.length === 0; t++) {
          const res = await w.tick();
          if (res.packets.some((p) => p.viewer === viewer)) passes++;
          got = sentIds(res, client, viewer);
        }
        expect({ name, sendPeriod, got }).toEqual({ name, sendPeriod, got: [e] });
        expect(passes).toBeLessThanOrEqual(sendPeriod + 1);
        expect(client.fields.get(e)![k]).toBe(5 + k);
        for (let t = 0; t < 2 * sendPeriod; t++) expect(sentIds(await w.tick(), client, viewer)).toEqual([]);
      }
    }
  });

  it("a change adds the field's weight to the drift: weight 0 rides along only, the odometer counts the weights", async () => {
    const c = WorldConfig.build({ fields: [{ name: 'quiet', bits: 4, weight: 0 }, { name: 'loud', bits: 4, weight: 2.5 }] });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const e = w.spawn({ x: 101, y: 100 });
    w.addViewer(viewer);
    const client = new ModelClient(c);
    for (let t = 0; t < 3; t++) sentIds(await w.tick(), client, viewer);
    const before = w.odometer(e);
    w.fields.quiet[w.slotOf(e)] = 3;
    expect(sentIds(await w.tick(), client, viewer)).toEqual([]);
    expect(w.odometer(e)).toBe(before);
    w.fields.loud[w.slotOf(e)] = 1;
    expect(sentIds(await w.tick(), client, viewer)).toEqual([e]);
    expect(w.odometer(e)).toBe(before + toRaw(2.5));
    expect(client.fields.get(e)).toEqual([3, 1]);  // the quiet field rode along
  });

  it('values outside 0 .. 2^bits - 1 are clamped when a tick reads them (a documented clamp), the memory left as written', async () => {
    const c = WorldConfig.build({ fields: SCHEMA });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const e = w.spawn({ x: 101, y: 100 });
    const s = w.slotOf(e);
    w.fields.yaw[s] = 5000;
    w.fields.anim[s] = -7;
    w.fields.health[s] = 256;
    w.addViewer(viewer);
    const client = new ModelClient(c);
    sentIds(await w.tick(), client, viewer);
    expect(client.fields.get(e)).toEqual([1023, 0, 255]);
    expect([w.fields.yaw[s], w.fields.anim[s], w.fields.health[s]]).toEqual([5000, -7, 256]);
    // A write that clamps to the same value is no change.
    w.fields.yaw[s] = 1024;
    expect(sentIds(await w.tick(), client, viewer)).toEqual([]);
  });

  it('randomized: every held ghost ends with the fields the game wrote (clamped), against a model client', async () => {
    await withSeed(77, async (seed) => {
      const r = rng(seed);
      const c = WorldConfig.build({ regionSize: 1024, viewRadius: 100, fields: SCHEMA, payloadBytes: 400, ghostCap: 64 });
      const w = new World(c, { capacity: 400, threads: 2 });
      const ids = Array.from({ length: 300 }, () => w.spawn({ x: 400 + r() * 200, y: 400 + r() * 200 }));
      const viewers = ids.slice(0, 20);
      for (const v of viewers) w.addViewer(v);
      const clients = new Map(viewers.map((v) => [v, new ModelClient(c)]));
      const clamp = (v: number, bits: number) => Math.min(Math.max(v, 0), 2 ** bits - 1);
      for (let t = 0; t < 120; t++) {
        if (t < 80) {
          for (const id of ids) {
            const s = w.slotOf(id);
            if (r() < 0.3) w.positions.x[s] += randInt(r, -300, 300);
            for (const f of SCHEMA) if (r() < 0.2) w.fields[f.name][s] = randInt(r, -5, 2 ** f.bits + 5);
          }
        }
        const res = await w.tick();
        for (const p of res.packets) clients.get(p.viewer)!.apply(p.bytes);
      }
      // Quiet for 40 ticks: every ghost has been sent since its last change.
      for (const [v, client] of clients) {
        for (const [id, got] of client.fields) {
          const s = w.slotOf(id);
          expect({ v, id, got }).toEqual({ v, id, got: SCHEMA.map((f) => clamp(w.fields[f.name][s], f.bits)) });
        }
        expect(client.held.size).toBeGreaterThan(10);
      }
    });
  });
});
