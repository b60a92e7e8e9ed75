// Client-side extrapolation: the formula at its edges, ClientWorld.predict on a moving world's
// packets, and the quality harness's beliefs predicting what ClientWorld predicts.
import { describe, expect, it } from 'vitest';
import { World, WorldConfig, toRaw } from '../lib/index.js';
import { ClientWorld, extrapolateAxis, isJump, readExtrapolation } from '../lib/net/index.js';
import { ViewerBeliefs } from '../tools/quality/beliefs.js';
import { encodePacket } from '../tools/quality/encode.js';
import { randInt, rng, withSeed } from './helpers/model.js';

describe('extrapolateAxis', () => {
  it('moves on by the velocity of the two newest updates, up to maxTicks ahead', () => {
    // 10 at tick 4, 16 at tick 6: 3 per tick.
    expect(extrapolateAxis(10, 4, 16, 6, 9, 20, false)).toBe(25);
    expect(extrapolateAxis(10, 4, 16, 6, 6.5, 20, false)).toBe(17.5);
    // Capped: 2 ticks ahead at most.
    expect(extrapolateAxis(10, 4, 16, 6, 30, 2, false)).toBe(22);
    expect(extrapolateAxis(10, 4, 16, 6, 30, 0, false)).toBe(16);
  });

  it('holds the newest position without an earlier update, for a tick not after it, or across a jump', () => {
    expect(extrapolateAxis(0, -1, 16, 6, 9, 20, false)).toBe(16);
    expect(extrapolateAxis(10, 4, 16, 6, 6, 20, false)).toBe(16);
    expect(extrapolateAxis(10, 4, 16, 6, 5, 20, false)).toBe(16);
    expect(extrapolateAxis(10, 6, 16, 6, 9, 20, false)).toBe(16);
    expect(extrapolateAxis(10, 4, 16, 6, 9, 20, true)).toBe(16);
  });

  it('a move over maxStep per tick on some axis is a jump', () => {
    expect(isJump(0, 0, 0, 1, Infinity)).toBe(false);
    expect(isJump(1e9, 0, 0, 1, Infinity)).toBe(false);
    expect(isJump(200, -150, 0, 2, 100)).toBe(false);
    expect(isJump(0, -201, 0, 2, 100)).toBe(true);
    expect(isJump(0, 0, 101, 1, 100)).toBe(true);
  });

  it('reads its options, refusing what is out of range', () => {
    expect(readExtrapolation(undefined)).toBeNull();
    expect(readExtrapolation(false)).toBeNull();
    expect(readExtrapolation(true)).toEqual({ maxTicks: 20, maxStepRaw: Infinity });
    expect(readExtrapolation({ maxTicks: 5, maxStep: 2 })).toEqual({ maxTicks: 5, maxStepRaw: 2048 });
    for (const bad of [1, 'yes', null, { maxTicks: -1 }, { maxTicks: 10_001 }, { maxTicks: NaN }, { maxStep: 0 }, { maxStep: '1' }, { maxTick: 3 }]) {
      expect(() => readExtrapolation(bad)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
  });
});

describe('ClientWorld.predict', () => {
  it('puts a body moving in a straight line where it is, between packets and after a gap', async () => {
    const c = WorldConfig.build();
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 1000, y: 1000, z: 0 });
    const mover = w.spawn({ x: 1010, y: 1000, z: 0 });
    w.addViewer(viewer);
    const view = new ClientWorld(c, { extrapolate: true });
    const plain = new ClientWorld(c);
    const step = toRaw(0.075); // 1.5 m/s at 20 Hz
    const s = w.slotOf(mover);
    for (let t = 0; t < 5; t++) {
      w.positions.x[s] += step;
      w.positions.y[s] -= 2 * step;
      const res = await w.tick();
      view.receive(res.packets[0].bytes);
      plain.receive(res.packets[0].bytes);
    }
    const e = view.get(mover)!;
    // Three ticks on, and half a tick: where the body will be.
    const at = view.predict(mover, e.tick + 3.5)!;
    expect(at.rawX).toBeCloseTo(e.rawX + 3.5 * step, 9);
    expect(at.rawY).toBeCloseTo(e.rawY - 7 * step, 9);
    expect(at.x).toBeCloseTo(at.rawX / 1024, 12);
    // Without the option: the newest position.
    expect(plain.predict(mover, e.tick + 3.5)).toMatchObject({ rawX: e.rawX, rawY: e.rawY, rawZ: e.rawZ });
    // Past maxTicks (20): where the horizon left it.
    expect(view.predict(mover, e.tick + 100)!.rawX).toBeCloseTo(e.rawX + 20 * step, 9);
    expect(view.predict(12345, 1)).toBeUndefined();
    const out = { x: 0, y: 0, z: 0, rawX: 0, rawY: 0, rawZ: 0 };
    expect(view.predict(mover, e.tick + 1, out)).toBe(out);
    w.close();
  });

  it('an entity seen again after a despawn, or after a teleport, is not extrapolated from before it', async () => {
    const c = WorldConfig.build({ graceTicks: 0 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 1000, y: 1000, z: 0 });
    const mover = w.spawn({ x: 1010, y: 1000, z: 0 });
    w.addViewer(viewer);
    const view = new ClientWorld(c, { extrapolate: { maxStep: 2 } });
    const s = w.slotOf(mover);
    const tick = async (): Promise<void> => {
      const res = await w.tick();
      view.receive(res.packets[0].bytes);
    };
    await tick();
    w.positions.x[s] += toRaw(1);
    await tick();
    expect(view.predict(mover, view.get(mover)!.tick + 1)!.x).toBeCloseTo(1012, 9);
    // A teleport: 100 m in a tick, more than maxStep.
    w.positions.x[s] += toRaw(100);
    await tick();
    expect(view.predict(mover, view.get(mover)!.tick + 1)!.x).toBe(1111);
    // Out of range and back: despawned (grace 0), then announced anew.
    w.positions.x[s] += toRaw(500);
    await tick();
    await tick();
    expect(view.get(mover)).toBeUndefined();
    w.positions.x[s] = toRaw(1020);
    await tick();
    expect(view.predict(mover, view.get(mover)!.tick + 5)!.x).toBe(1020);
    w.close();
  });

  it('refuses an invalid extrapolate option', () => {
    const c = WorldConfig.build();
    expect(() => new ClientWorld(c, { extrapolate: { maxTicks: -2 } })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => new ClientWorld(c, { extrapolate: 'on' as never })).toThrow(/extrapolate must be true, false or/);
  });
});

describe("the quality harness's beliefs", () => {
  for (const seed of [5, 6]) {
    it(`predict what ClientWorld predicts from the same packets (seed ${seed})`, () => {
      withSeed(seed, () => {
        const r = rng(seed);
        const c = WorldConfig.build();
        const options = { maxTicks: randInt(r, 0, 30), maxStep: r() < 0.5 ? Infinity : 1 + r() * 5 };
        const view = new ClientWorld(c, { extrapolate: options, maxLateness: 32767 });
        const e = readExtrapolation(options)!;
        const beliefs = new ViewerBeliefs(4);
        const pkt = new Uint8Array(c.payloadBytes);
        const dv = new DataView(pkt.buffer);
        const pos = new Map<number, [number, number, number]>();
        const predicted = new Float64Array(3);
        let tick = 1;
        for (let k = 0; k < 400; k++) {
          tick += randInt(r, 1, 4);
          // A few updates (moves, some far: jumps), sometimes a despawn.
          const despawns: number[] = [];
          const ids: number[] = [];
          const xs: number[] = [];
          const ys: number[] = [];
          const zs: number[] = [];
          for (let i = 0; i < 6; i++) {
            const id = randInt(r, 0, 20);
            if (ids.includes(id) || despawns.includes(id)) continue;
            if (pos.has(id) && r() < 0.05) {
              despawns.push(id);
              pos.delete(id);
              beliefs.delete(id);
              continue;
            }
            const [x, y, z] = pos.get(id) ?? [toRaw(1000 + r() * 100), toRaw(1000 + r() * 100), toRaw(r() * 10)];
            const far = r() < 0.05 ? toRaw(50) : 0;
            const p: [number, number, number] = [x + randInt(r, -3000, 3000) + far, y + randInt(r, -3000, 3000), z + randInt(r, -200, 200)];
            pos.set(id, p);
            ids.push(id);
            xs.push(p[0]);
            ys.push(p[1]);
            zs.push(p[2]);
            beliefs.set(id, p[0], p[1], p[2], tick);
          }
          const len = encodePacket(pkt, dv, c, k, tick, despawns, despawns.length, ids, xs, ys, zs, ids.length);
          expect(view.receive(pkt.subarray(0, len))).toBe('applied');
          for (const id of pos.keys()) {
            const at = tick + r() * 25;
            const h = beliefs.find(id);
            beliefs.predict(h, at, e, predicted);
            const want = view.predict(id, at)!;
            expect([predicted[0], predicted[1], predicted[2]]).toEqual([want.rawX, want.rawY, want.rawZ]);
          }
        }
      });
    });
  }
});
