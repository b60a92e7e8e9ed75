import { describe, it, expect } from 'vitest';
import { World, WorldConfig, SightlineError, decodePacket, toRaw } from '../lib/index.js';
import { native } from '../lib/binding.js';

const config = WorldConfig.build();

describe('entities', () => {
  it('spawn returns ids whose slots hold the position in raw units', () => {
    const w = new World(config, { capacity: 16 });
    const id = w.spawn({ x: 2048, y: 1024.5, z: -3 });
    const s = w.slotOf(id);
    expect(w.positions.x[s]).toBe(toRaw(2048));
    expect(w.positions.y[s]).toBe(toRaw(1024.5));
    expect(w.positions.z[s]).toBe(toRaw(-3));
    expect(w.position(id)).toEqual({ x: 2048, y: 1024.5, z: -3 });
    expect(w.liveCount).toBe(1);
  });

  it('despawn then spawn reuses the slot with a new generation; the old id is refused', () => {
    const w = new World(config, { capacity: 1 });
    const a = w.spawn({ x: 1, y: 1, z: 0 });
    w.despawn(a);
    const b = w.spawn({ x: 2, y: 2, z: 0 });
    expect(b).not.toBe(a);
    expect(w.slotOf(b)).toBe(w.slotOf(b) & 0xfffff);
    expect((b & 0xfffff) === (a & 0xfffff)).toBe(true);
    for (const call of [() => w.slotOf(a), () => w.despawn(a), () => w.addViewer(a), () => w.odometer(a)]) {
      expect(call).toThrow(SightlineError);
      try {
        call();
      } catch (e) {
        expect((e as SightlineError).code).toBe('ERR_SIGHTLINE_STALE_ENTITY');
      }
    }
    // The refused calls touched nothing.
    expect(w.isLive(b)).toBe(true);
    expect(w.position(b)).toEqual({ x: 2, y: 2, z: 0 });
    expect(w.liveCount).toBe(1);
  });

  it('an id of a generation its slot never issued is "never spawned", not stale', () => {
    const w = new World(config, { capacity: 1 });
    const a = w.spawn({ x: 1, y: 1, z: 0 });  // slot 0, generation 0
    const never = (id: number) => expect(() => w.slotOf(id)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ENTITY', message: expect.stringContaining('never spawned') }));
    never(a + 2 ** 20);  // generation 1
    never(2 ** 31);
    w.despawn(a);
    never(a + 2 ** 20);  // not issued until the slot is reused
    const b = w.spawn({ x: 2, y: 2, z: 0 });
    expect(b).toBe(a + 2 ** 20);
    expect(() => w.slotOf(a)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_STALE_ENTITY' }));
    never(a + 2 * 2 ** 20);
    // After 4,096 reuses the 12-bit generation wraps: every generation was issued, so stale.
    let id = b;
    for (let k = 0; k < 4096; k++) {
      w.despawn(id);
      id = w.spawn({ x: 1, y: 1, z: 0 });
    }
    expect(id).toBe(b);  // generation 1 again
    expect(() => w.slotOf(a + 5 * 2 ** 20)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_STALE_ENTITY' }));
  });

  it('churn: freed slots wait until 4,096 are free and come back oldest first, so a stale id is refused, not aliased', () => {
    const w = new World(config, { capacity: 65_536 });
    const live: number[] = [];
    for (let i = 0; i < 100; i++) live.push(w.spawn({ x: 1 + i, y: 1, z: 0 }));
    const dead: number[] = [];
    let maxSlot = 0;
    const seen = new Set<number>(live);
    for (let k = 0; k < 20_000; k++) {
      // First the newest goes each time (a projectile): the slot a despawn just freed is the one an
      // immediate reuse would hand out again, and its generation would wrap after 4,096. Then any.
      const gone = live.splice(k < 10_000 ? live.length - 1 : (k * 7) % live.length, 1)[0];
      w.despawn(gone);
      dead.push(gone);
      const id = w.spawn({ x: 5, y: 5, z: 0 });
      expect(seen.has(id)).toBe(false);  // no id is issued twice
      seen.add(id);
      live.push(id);
      maxSlot = Math.max(maxSlot, id % 2 ** 20);
    }
    // Never-used slots are taken while fewer than 4,096 freed ones wait: live + 4,096 slots at most.
    expect(maxSlot).toBeLessThan(100 + 4096);
    for (const id of dead.slice(-300)) {
      expect(() => w.despawn(id)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_STALE_ENTITY' }));
    }
    expect(w.liveCount).toBe(100);
    for (const id of live) expect(w.isLive(id)).toBe(true);
  });

  it('a full world refuses a spawn with a coded error and keeps its entities', () => {
    const w = new World(config, { capacity: 2 });
    w.spawn({ x: 1, y: 1, z: 0 });
    w.spawn({ x: 2, y: 1, z: 0 });
    expect(() => w.spawn({ x: 3, y: 1, z: 0 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_WORLD_FULL' }));
    expect(w.liveCount).toBe(2);
  });

  it('ids never spawned are refused', () => {
    const w = new World(config, { capacity: 8 });
    expect(() => w.slotOf(5)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ENTITY' }));
    expect(() => w.despawn(-1)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ENTITY' }));
    expect(() => w.despawn(1.5)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ENTITY' }));
  });

  it('an id that is not a number is an invalid argument, and the message names its kind', () => {
    const w = new World(config, { capacity: 8 });
    const kinds: [unknown, string][] = [['5', 'a string'], [true, 'a boolean'], [{}, 'an object'], [5n, 'a bigint'], [Symbol('id'), 'a symbol']];
    for (const [bad, kind] of kinds) {
      for (const call of [() => w.despawn(bad as never), () => w.slotOf(bad as never), () => w.removeViewer(bad as never), () => w.position(bad as never)])
        expect(call).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT', message: `entity id must be a number, received ${kind}` }));
    }
  });

  it('isLive and hasViewer answer false for anything that is not an entity id', () => {
    const w = new World(config, { capacity: 2 });
    const a = w.spawn({ x: 1, y: 1, z: 0 });
    w.addViewer(a);
    for (const bad of [-1, 1.5, NaN, 2 ** 32, 'a' as never, undefined as never]) {
      expect(w.isLive(bad)).toBe(false);
      expect(w.hasViewer(bad)).toBe(false);
    }
    expect(w.hasViewer(a)).toBe(true);
  });

  it('non-finite or out-of-range positions are refused and nothing is spawned', () => {
    const w = new World(config, { capacity: 8 });
    for (const p of [{ x: NaN, y: 0, z: 0 }, { x: 0, y: Infinity, z: 0 }, { x: 3e6, y: 0, z: 0 }, { x: '1', y: 0, z: 0 }]) {
      expect(() => w.spawn(p as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_POSITION' }));
    }
    expect(w.liveCount).toBe(0);
  });

  it('bad world options are coded errors', () => {
    expect(() => new World(config, { capacity: 0 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_CAPACITY' }));
    expect(() => new World(config, { capacity: 2 ** 21 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_CAPACITY' }));
    expect(() => new World(config, { threads: -1 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_THREADS' }));
    expect(() => new World({} as WorldConfig)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    // The prototype alone does not make a configuration: nothing was validated or derived.
    const forged = Object.create(WorldConfig.prototype) as WorldConfig;
    expect(() => new World(forged)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => WorldConfig.build(forged)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    // Nor does the constructor, called from JavaScript (TypeScript keeps it private): only build() makes one.
    const Ctor = WorldConfig as unknown as new (...args: unknown[]) => WorldConfig;
    for (const args of [[], [{}], [Symbol('WorldConfig.build'), {}]]) {
      expect(() => new Ctor(...args)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT', message: expect.stringContaining('WorldConfig.build') }));
    }
    // Options are plain objects: a Map or a Date holds no options and is refused, not read as empty.
    for (const options of [new Map([['capacity', 8]]), new Date()]) {
      expect(() => new World(config, options as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
  });
});

describe('positions are zero-copy views', () => {
  for (const externalBuffers of [true, false]) {
    it(`writes through ${externalBuffers ? 'external' : 'V8-allocated (fallback)'} buffers reach the engine`, async () => {
      const w = new World(config, { capacity: 64, externalBuffers, threads: 1 });
      if (!externalBuffers) expect(w.externalBuffers).toBe(false);
      const a = w.spawn({ x: 100, y: 100, z: 0 });
      const b = w.spawn({ x: 110, y: 100, z: 0 });
      w.addViewer(a);
      await w.tick();
      // Move b through the typed array; the gather (engine memory) and the odometer see it.
      w.positions.x[w.slotOf(b)] += toRaw(20);
      w.rebuildSnapshot();
      const g = w.gather({ x: 100, y: 100 }, { exclude: a });
      expect(Array.from(g.ids)).toEqual([b]);
      expect(g.distancesSq[0]).toBe(toRaw(30) ** 2);
      await w.tick();
      expect(w.odometer(b)).toBe(toRaw(20));
    });
  }

  for (const externalBuffers of [false, true]) it(`moving a buffer away (postMessage, structuredClone) copies it: the world goes on (externalBuffers ${externalBuffers})`, async () => {
    const w = new World(config, { capacity: 16, externalBuffers, threads: 1 });
    const a = w.spawn({ x: 100, y: 100, z: 0 });
    const b = w.spawn({ x: 101, y: 100, z: 0 });
    w.addViewer(a);
    const packet = (await w.tick()).bytesAt(0).buffer;
    structuredClone(packet, { transfer: [packet] });
    const xs = w.positions.x.buffer;
    const { port1, port2 } = new MessageChannel();
    port1.postMessage(xs, [xs]);
    port1.close();
    port2.close();
    expect(packet.byteLength).toBeGreaterThan(0);
    expect(xs.byteLength).toBe(16 * 4);
    for (let t = 0; t < 3; t++) {
      w.setPosition(b, { x: 102 + t, y: 100, z: 0 });
      expect(decodePacket((await w.tick()).bytesAt(0), config).updates).toEqual([{ id: b, x: 102 + t, y: 100, z: 0 }]);
    }
    const c = w.spawn({ x: 2000, y: 2000, z: 0 });
    expect(w.position(c).x).toBe(2000);
  });

  it('in the fallback, a detached position buffer is refused, not written through', async () => {
    // The native world under World, whose buffers are not marked untransferable: the engine's own check.
    const nw = new native.NativeWorld(config.input, 16, 1, false, false);
    const id = nw.spawn(toRaw(100), toRaw(100), 0);
    nw.addViewer(id, 1200, 1, false, 0, 0xffffffff);
    await nw.tick();
    const which = (await nw.tick())[0] & 1; // the tick's parity: its output slot
    const out = nw.outputViews(which)!.buffer;
    structuredClone(out, { transfer: [out] }); // the packets' buffer: a new one is made
    await nw.tick();
    const again = await nw.tick();
    expect(again[0] & 1).toBe(which);
    expect(again[2]).toBeGreaterThan(0); // the views' generation moved on
    expect(nw.outputViews(which)!.buffer.byteLength).toBeGreaterThan(0);
    const xs = nw.positions().x.buffer;
    structuredClone(xs, { transfer: [xs] });
    for (const call of [() => nw.spawn(0, 0, 0), () => nw.tick(), () => nw.rebuildSnapshot()]) {
      expect(call).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_POSITIONS_DETACHED' }));
    }
  });

  it('Int32Array semantics: NaN writes 0, floats truncate toward zero', () => {
    const w = new World(config, { capacity: 4 });
    const id = w.spawn({ x: 5, y: 5, z: 5 });
    const s = w.slotOf(id);
    w.positions.x[s] = NaN;
    w.positions.y[s] = 1000.9;
    w.positions.z[s] = -1000.9;
    expect(w.positions.x[s]).toBe(0);
    expect(w.positions.y[s]).toBe(1000);
    expect(w.positions.z[s]).toBe(-1000);
  });
});

describe('odometer', () => {
  it('adds |dx|+|dy|+|dz| per tick; a new slot adds 0 on its first tick', async () => {
    const w = new World(config, { capacity: 8, threads: 1 });
    const id = w.spawn({ x: 10, y: 10, z: 0 });
    const s = w.slotOf(id);
    w.positions.x[s] += 7; // moved before its first tick: still adds 0
    await w.tick();
    expect(w.odometer(id)).toBe(0);
    w.positions.x[s] += 3;
    w.positions.y[s] -= 4;
    w.positions.z[s] += 5;
    await w.tick();
    expect(w.odometer(id)).toBe(12);
    await w.tick();
    expect(w.odometer(id)).toBe(12);
  });

  it('wraps at 2^32', async () => {
    const w = new World(config, { capacity: 8, threads: 1 });
    const id = w.spawn({ x: 0, y: 0, z: 0 });
    const s = w.slotOf(id);
    await w.tick();
    let expected = 0;
    for (let i = 0; i < 600; i++) {
      // Teleport across the Int32 range: |dx| + |dy| = 2 × 2^31 - 2 per tick.
      const to = i % 2 === 0 ? 2 ** 31 - 1 : -(2 ** 31);
      const from = w.positions.x[s];
      w.positions.x[s] = to;
      w.positions.y[s] = to;
      expected = (expected + 2 * Math.abs(to - from)) % 2 ** 32;
      await w.tick();
    }
    expect(w.odometer(id)).toBe(expected);
  });
});

/** Runs f, expects a SightlineError with `code`, and returns its message. */
function codeOf(f: () => unknown, code: string): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(SightlineError);
    expect((e as SightlineError).code).toBe(code);
    return (e as SightlineError).message;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

describe('options objects', () => {
  it('World: null or undefined options take every default; anything else but an object is refused', () => {
    for (const options of [null, undefined]) {
      const w = new World(config, options);
      expect(w.capacity).toBe(65_536);
      expect(w.externalBuffers).toBe(true);
    }
    for (const options of [5, 'x', true, [1]]) {
      expect(codeOf(() => new World(config, options as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toContain('received');
    }
  });

  it('World: an unknown key names itself and the valid ones; booleans must be booleans', () => {
    const message = codeOf(() => new World(config, { capacity: 8, threds: 1 } as never), 'ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(message).toContain('"threds"');
    expect(message).toContain('capacity, threads, externalBuffers, recordGhostPositions');
    for (const options of [{ externalBuffers: 'no' }, { externalBuffers: 0 }, { recordGhostPositions: 1 }, { recordGhostPositions: null }]) {
      expect(codeOf(() => new World(config, { capacity: 8, ...options } as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toMatch(/must be true or false/);
    }
    expect(new World(config, { capacity: 8, externalBuffers: false }).externalBuffers).toBe(false);
  });

  it('addViewer: null means defaults; a non-object, an unknown key or a non-boolean acks is refused and adds nothing', () => {
    const c = WorldConfig.build({ eventReserveBytes: 64 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const a = w.spawn({ x: 1, y: 1, z: 0 });
    const b = w.spawn({ x: 2, y: 1, z: 0 });
    expect(codeOf(() => w.addViewer(a, 'x' as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toContain('"x"');
    expect(codeOf(() => w.addViewer(a, 7 as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toContain('7');
    const message = codeOf(() => w.addViewer(a, { ack: true } as never), 'ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(message).toContain('"ack"');
    expect(message).toContain('payloadBytes, sendPeriod, acks');
    for (const acks of [1, 'true', null]) {
      expect(codeOf(() => w.addViewer(a, { acks } as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toContain('acks must be true or false');
    }
    expect(codeOf(() => w.addViewer(a, { payloadBytes: null } as never), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION')).toContain('null');
    // Inherited options are refused, as config fields are.
    expect(codeOf(() => w.addViewer(a, Object.create({ sendPeriod: 5 })), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toContain('inherited');
    // Numbers in messages read as JavaScript prints them.
    for (const [payloadBytes, shown] of [
      [60, 'received 60'],
      [5_000_000, 'received 5000000'],
      [600.5, 'received 600.5'],
      [0.1, 'received 0.1'],
    ] as const) {
      expect(codeOf(() => w.addViewer(a, { payloadBytes }), 'ERR_SIGHTLINE_INVALID_VIEWER_OPTION')).toContain(shown);
    }
    expect(w.viewerCount).toBe(0);
    expect(w.hasViewer(a)).toBe(false);
    w.addViewer(a, null);
    w.addViewer(b, { acks: true });
    expect(w.eventStats(a)).toBeNull();
    expect(w.eventStats(b)).toEqual({ queued: 0, dropped: 0, pending: 0 });
  });

  it('gather: null means defaults; a non-object, an unknown key or an exclude that is not an entity id is refused', () => {
    const w = new World(config, { capacity: 8, threads: 1 });
    const a = w.spawn({ x: 10, y: 10, z: 0 });
    const b = w.spawn({ x: 12, y: 10, z: 0 });
    w.rebuildSnapshot();
    const before = w.snapshotInfo();
    expect(Array.from(w.gather({ x: 10, y: 10 }, null).ids)).toEqual([a, b]);
    expect(Array.from(w.gather({ x: 10, y: 10 }, { exclude: a }).ids)).toEqual([b]);
    for (const exclude of [1.5, -5, 2 ** 32, NaN, '1', null]) {
      expect(codeOf(() => w.gather({ x: 10, y: 10 }, { exclude } as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT')).toMatch(/^exclude must be an integer entity id/);
    }
    const message = codeOf(() => w.gather({ x: 10, y: 10 }, { walkcap: 1 } as never), 'ERR_SIGHTLINE_UNKNOWN_OPTION');
    expect(message).toContain('"walkcap"');
    expect(message).toContain('walkCap, exclude');
    codeOf(() => w.gather({ x: 10, y: 10 }, 'x' as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT');
    codeOf(() => w.gather({ x: 10, y: 10 }, { walkCap: null } as never), 'ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(w.snapshotInfo()).toEqual(before);
  });

  it('spawn and setPosition: z null is refused like x null; only an undefined z means 0', () => {
    const w = new World(config, { capacity: 8 });
    expect(codeOf(() => w.spawn({ x: 1, y: 1, z: null } as never), 'ERR_SIGHTLINE_INVALID_POSITION')).toBe(
      'z must be a finite number of meters, received null',
    );
    codeOf(() => w.spawn({ x: null, y: 1, z: 0 } as never), 'ERR_SIGHTLINE_INVALID_POSITION');
    expect(w.liveCount).toBe(0);
    const id = w.spawn({ x: 1, y: 1 } as never);
    expect(w.position(id)).toEqual({ x: 1, y: 1, z: 0 });
    codeOf(() => w.setPosition(id, { x: 5, y: 5, z: null } as never), 'ERR_SIGHTLINE_INVALID_POSITION');
    expect(w.position(id)).toEqual({ x: 1, y: 1, z: 0 });
  });
});

describe('the output buffer limit', () => {
  it('refuses a viewer whose payload would take the viewers past 4 GiB - 64 KiB together: ERR_SIGHTLINE_OUTPUT_FULL, nothing added', () => {
    // ghostCap 1 keeps 65,000 viewers small; no tick runs (it would lay out 4 GiB).
    const w = new World(WorldConfig.build({ ghostCap: 1 }), { capacity: 65_570, threads: 1 });
    const ids = Array.from({ length: 65_567 }, (_, i) => w.spawn({ x: 1 + (i % 4000), y: 1 + Math.floor(i / 4000), z: 0 }));
    const limit = 2 ** 32 - 2 ** 16;
    const big = Math.floor(limit / 65_507); // 65,564 viewers of 65,507 bytes leave 812 bytes
    for (let i = 0; i < big; i++) w.addViewer(ids[i], { payloadBytes: 65_507 });
    expect(() => w.addViewer(ids[big], { payloadBytes: 65_507 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_OUTPUT_FULL' }));
    expect(w.hasViewer(ids[big])).toBe(false);
    expect(w.viewerCount).toBe(big);
    w.addViewer(ids[big], { payloadBytes: limit - big * 65_507 }); // exactly full
    expect(() => w.addViewer(ids[big + 1], { payloadBytes: 28 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_OUTPUT_FULL' }));
    w.removeViewer(ids[0]);
    w.addViewer(ids[big + 1], { payloadBytes: 65_507 }); // the room a removal frees
    expect(w.viewerCount).toBe(big + 1);
  });
});

describe('close', () => {
  it('refuses every call afterwards with ERR_SIGHTLINE_WORLD_CLOSED; results and positions already handed out stay readable', async () => {
    const w = new World(config, { capacity: 16, threads: 1 });
    const a = w.spawn({ x: 100, y: 100, z: 0 });
    const b = w.spawn({ x: 105, y: 100, z: 0 });
    w.addViewer(a);
    const r = await w.tick();
    const bytes = r.bytesAt(0).slice();
    const xs = w.positions.x;
    // Not while a tick runs; the tick then ends as usual.
    const running = w.tick();
    expect(() => w.close()).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_TICK_IN_PROGRESS' }));
    await running;
    expect(w.closed).toBe(false);
    w.close();
    w.close(); // idempotent
    expect(w.closed).toBe(true);
    const closed = expect.objectContaining({ code: 'ERR_SIGHTLINE_WORLD_CLOSED' });
    for (const call of [
      () => w.spawn({ x: 1, y: 1, z: 0 }),
      () => w.despawn(b),
      () => w.isLive(b),
      () => w.addViewer(b),
      () => w.tick(),
      () => w.capacity,
      () => w.viewerCount,
      () => w.gather({ x: 100, y: 100 }),
      () => w.emit(new Uint8Array([1]), { viewer: a }),
      () => w.run({ ticks: 1 }),
      // Before the arguments are checked, too.
      () => w.setPosition(a, { x: NaN, y: 1, z: 0 }),
      () => w.gather({ x: NaN, y: 1 }),
      () => w.addViewer(b, { foo: 1 } as never),
      () => w.spawn({ x: NaN, y: 1, z: 0 }),
    ]) {
      expect(call).toThrow(closed);
    }
    expect(xs[w.positions.x.length - 16]).toBeTypeOf('number');
    expect(r.bytesAt(0)).toEqual(bytes);
  });

  it('releases the engine: worlds made and closed one after another do not add up', async () => {
    const cycle = async () => {
      const w = new World(config, { capacity: 4096, threads: 1 });
      for (let i = 0; i < 4096; i++) w.addViewer(w.spawn({ x: 100 + (i % 64), y: 100 + Math.floor(i / 64), z: 0 }));
      await w.tick();
      w.close();
    };
    // Each world holds ~75 MB (its memoryBytes) of ghost tables and packets until closed. The resident
    // size wanders by a few worlds' worth as the allocator keeps and reuses freed pages (and, under
    // the AddressSanitizer addon, as its quarantine of freed memory fills: 256 MB), so it is read
    // after 8 worlds have come and gone, and again after 20 more: leaked, those 20 would add 1.5 GB.
    for (let k = 0; k < 8; k++) await cycle();
    const before = process.memoryUsage().rss;
    for (let k = 0; k < 20; k++) await cycle();
    expect(process.memoryUsage().rss - before).toBeLessThan(200e6);
  }, 120_000);

  it('the native world refuses calls after close too', () => {
    const nw = new native.NativeWorld(config.input, 8, 1, true, false);
    nw.spawn(0, 0, 0);
    nw.close();
    expect(() => nw.spawn(0, 0, 0)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_WORLD_CLOSED' }));
    expect(() => nw.info()).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_WORLD_CLOSED' }));
  });
});
