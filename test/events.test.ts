import { describe, it, expect } from 'vitest';
import { World, WorldConfig, decodePacket, decodePacketRaw, createRawPacket } from '../lib/index.js';
import { rng, withSeed } from './helpers/model.js';
import { ackOf } from './helpers/model.js';

/** A client that delivers events in order, exactly once, and acknowledges what it received. */
class EventClient {
  next = 0;
  delivered: string[] = [];
  newest = -1;
  received = new Set<number>();
  readonly #raw = createRawPacket(1200);
  constructor(readonly config: WorldConfig) {}
  apply(bytes: Uint8Array): void {
    const p = decodePacketRaw(bytes, this.config, this.#raw);
    for (const e of p.events) {
      if (((e.sequence - this.next) & 0xffff) >= 0x8000) continue; // already delivered
      expect(e.sequence).toBe(this.next); // never a gap: the oldest unacknowledged come first
      this.delivered.push(new TextDecoder().decode(e.bytes));
      this.next = (this.next + 1) & 0xffff;
    }
    this.received.add(p.sequence);
    if (this.newest < 0 || ((p.sequence - this.newest) & 0xffff) < 0x8000) this.newest = p.sequence;
  }
  ack(): [number, number] {
    return ackOf(this.received, this.newest);
  }
}

const text = (s: string) => new TextEncoder().encode(s);

describe('reliable events', () => {
  for (const loss of [0, 0.05, 0.2]) {
    it(`are delivered in order, exactly once, with ${loss * 100}% loss and reordering`, async () => {
      await withSeed(900 + loss * 100, async (seed) => {
        const r = rng(seed);
        const c = WorldConfig.build({ eventReserveBytes: 120 });
        const w = new World(c, { capacity: 64, threads: 1 });
        const viewer = w.spawn({ x: 100, y: 100, z: 0 });
        for (let i = 0; i < 30; i++) w.spawn({ x: 100 + i, y: 110, z: 0 });
        w.addViewer(viewer, { acks: true });
        const client = new EventClient(c);
        const sent: string[] = [];
        const inFlight: { at: number; bytes: Uint8Array }[] = [];
        for (let t = 0; t < 300; t++) {
          if (t < 200 && r() < 0.5) {
            const s = `event ${sent.length} at tick ${t}`;
            sent.push(s);
            w.emit(text(s), { viewer });
          }
          const res = await w.tick();
          expect(res.packets[0].bytes.length).toBeLessThanOrEqual(c.payloadBytes);
          const lossy = t < 220;
          if (!(lossy && r() < loss)) inFlight.push({ at: t + (lossy ? Math.floor(r() * 3) : 0), bytes: res.packets[0].bytes.slice() });
          for (let i = inFlight.length - 1; i >= 0; i--) {
            if (inFlight[i].at > t) continue;
            client.apply(inFlight[i].bytes);
            inFlight.splice(i, 1);
          }
          if (client.newest >= 0) w.acknowledge(viewer, ...client.ack());
        }
        expect(client.delivered).toEqual(sent);
        expect(w.eventStats(viewer)).toEqual({ queued: sent.length, dropped: 0, pending: 0 });
      });
    }, 30_000);
  }

  it('a full queue is a coded error that changes nothing for one viewer, a counted drop for a group', async () => {
    const c = WorldConfig.build({ eventReserveBytes: 64 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const v = w.spawn({ x: 1, y: 1, z: 0 });
    w.addViewer(v, { acks: true });
    for (let i = 0; i < 64; i++) w.emit(text(`e${i}`), { viewer: v });
    expect(() => w.emit(text('one too many'), { viewer: v })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_EVENT_QUEUE_FULL' }));
    expect(w.eventStats(v)).toEqual({ queued: 64, dropped: 0, pending: 64 });
    expect(w.eventsDropped).toBe(0);
    // A group target skips the full viewer and counts the drop, per viewer and in the world.
    expect(w.emit(text('near'), { near: { x: 1, y: 1 }, radius: 5 })).toBe(0);
    expect(w.eventStats(v)).toEqual({ queued: 64, dropped: 1, pending: 64 });
    expect(w.eventsDropped).toBe(1);
    const client = new EventClient(c);
    for (let t = 0; t < 40; t++) {
      client.apply((await w.tick()).packets[0].bytes);
      w.acknowledge(v, ...client.ack());
    }
    expect(client.delivered).toEqual(Array.from({ length: 64 }, (_, i) => `e${i}`));
  });

  it('decodePacket copies event bytes, from a Node Buffer too', async () => {
    const c = WorldConfig.build({ eventReserveBytes: 40 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const v = w.spawn({ x: 1, y: 1, z: 0 });
    w.addViewer(v, { acks: true });
    w.emit(new Uint8Array([7, 7, 7]), { viewer: v });
    const r = await w.tick();
    for (const input of [r.packets[0].bytes.slice(), Buffer.from(r.packets[0].bytes)]) {
      const d = decodePacket(input, c);
      expect(d.events).toHaveLength(1);
      input.fill(0);
      expect([...d.events[0].bytes]).toEqual([7, 7, 7]);
    }
  });

  it('targets: one viewer, the holders of an entity, the viewers near a point', async () => {
    const c = WorldConfig.build({ eventReserveBytes: 100 });
    const w = new World(c, { capacity: 16, threads: 1 });
    const a = w.spawn({ x: 100, y: 100, z: 0 });
    const b = w.spawn({ x: 120, y: 100, z: 0 });
    const far = w.spawn({ x: 3000, y: 3000, z: 0 });
    const plain = w.spawn({ x: 101, y: 100, z: 0 });
    for (const v of [a, b, far]) w.addViewer(v, { acks: true });
    w.addViewer(plain); // no acks: takes no events
    await w.tick();
    // a and b hold each other; far holds neither.
    expect(w.emit(text('x'), { holders: b })).toBe(1);
    expect(w.emit(text('x'), { holders: a })).toBe(1);
    expect(w.emit(text('x'), { near: { x: 110, y: 100 }, radius: 50 })).toBe(2);
    expect(w.emit(text('x'), { near: { x: 3000, y: 3000 }, radius: 1 })).toBe(1);
    // A point so far off, and a radius so large, that squared distances overflow: still nobody.
    expect(w.emit(text('x'), { near: { x: 1e200, y: 0 }, radius: 1e160 })).toBe(0);
    expect(w.emit(text('x'), { near: { x: 9e159, y: 9e159 }, radius: 1e160 })).toBe(0);
    expect(w.eventStats(a)!.queued).toBe(2);
    expect(w.eventStats(b)!.queued).toBe(2);
    expect(w.eventStats(far)!.queued).toBe(1);
    expect(w.eventStats(plain)).toBeNull();
    expect(() => w.emit(text('x'), { viewer: plain })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_EVENTS_DISABLED' }));
  });

  // A world with one viewer added with acks, and a 100-byte event reserve.
  function oneAckViewer(): { c: WorldConfig; w: World; v: number } {
    const c = WorldConfig.build({ eventReserveBytes: 100 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const v = w.spawn({ x: 1, y: 1, z: 0 });
    w.addViewer(v, { acks: true });
    return { c, w, v };
  }

  it('events emitted during a tick are applied when it ends', async () => {
    const { c, w, v } = oneAckViewer();
    const pending = w.tick();
    expect(w.emit(text('late'), { viewer: v })).toBe(0);
    await pending;
    expect(w.eventStats(v)!.pending).toBe(1);
    const p = decodePacketRaw((await w.tick()).packets[0].bytes, c);
    expect(p.events.map((e) => new TextDecoder().decode(e.bytes))).toEqual(['late']);
  });

  it('an event deferred to a viewer removed before its tick ends is counted as dropped', async () => {
    const { c, w, v } = oneAckViewer();
    const pending = w.tick();
    expect(w.emit(text('gone'), { viewer: v })).toBe(0);
    w.removeViewer(v);
    expect(w.hasViewer(v)).toBe(false);
    expect(w.viewerCount).toBe(0);
    expect(w.eventStats(v)).toEqual({ queued: 0, dropped: 0, pending: 0 });  // served until the tick ends
    await pending;
    expect(w.eventsDropped).toBe(1);
    expect(() => w.eventStats(v)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_VIEWER' }));
  });

  it('bad events and targets are refused and nothing is queued', () => {
    const c = WorldConfig.build({ eventReserveBytes: 20 });
    const w = new World(c, { capacity: 8 });
    const v = w.spawn({ x: 1, y: 1, z: 0 });
    w.addViewer(v, { acks: true });
    expect(() => w.emit(new Uint8Array(16), { viewer: v })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_EVENT_TOO_LARGE' }));
    expect(() => w.emit(new Uint8Array(0), { viewer: v })).toThrow(
      expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT', message: expect.stringContaining('empty') }),
    );
    expect(() => w.emit('hi' as never, { viewer: v })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => w.emit(text('hi'), { nobody: 1 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    // A misspelt key is named.
    expect(() => w.emit(text('hi'), { viewr: v } as never)).toThrow(/received an object with none of them and unknown field "viewr" \(fields: "viewr"\)$/);
    expect(() => w.emit(text('hi'), {} as never)).toThrow(/received an object with no fields$/);
    expect(() => w.emit(text('hi'), { viewer: v, holders: v } as never)).toThrow(/received an object with 2 of them \(fields: "viewer", "holders"\)$/);
    // Two forms at once: refused by the types (tsc checks this file) and at run time.
    // @ts-expect-error EventRecipients is exactly one form
    expect(() => w.emit(text('hi'), { viewer: v, holders: v })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => w.emit(text('hi'), { viewer: 12345 })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_UNKNOWN_VIEWER' }));
    const none = new World(WorldConfig.build(), { capacity: 8 });
    const n = none.spawn({ x: 1, y: 1, z: 0 });
    none.addViewer(n, { acks: true });
    // No event reserve: events are disabled for every target; a bad target is still a bad argument.
    expect(() => none.emit(text('hi'), { viewer: n })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_EVENTS_DISABLED' }));
    expect(() => none.emit(text('hi'), { near: { x: 1, y: 1 }, radius: 5 })).toThrow(
      expect.objectContaining({ code: 'ERR_SIGHTLINE_EVENTS_DISABLED' }),
    );
    expect(() => none.emit(text('hi'), { bogus: 1 } as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(w.eventStats(v)).toEqual({ queued: 0, dropped: 0, pending: 0 });
  });
});

describe('events emitted during a tick', () => {
  const BAD_TARGETS: unknown[] = [
    { holders: NaN },
    { holders: -1 },
    { holders: 2 ** 32 },
    { holders: '3' },
    { viewer: 1.5 },
    { viewer: -5 },
    { viewer: Infinity },
    { near: { x: NaN, y: 0 }, radius: 1 },
    { near: { x: 0, y: Infinity }, radius: 1 },
    { near: { x: 0, y: 0 }, radius: -1 },
    { near: { x: 0, y: 0 }, radius: NaN },
    { near: { x: 0, y: 0 }, radius: Infinity },
    { near: { x: 0, y: 0 } },
    { near: null, radius: 1 },
    { viewer: 0, holders: 0 },
    { viewer: undefined },
    // Keys beyond the form.
    { viewer: 0, typo: 1 },
    { viewer: 0, radius: 5 },
    { holders: 0, radius: 5 },
    { near: { x: 0, y: 0 }, radius: 1, extra: true },
    // Inherited keys are not read.
    Object.create({ viewer: 0 }),
    {},
    null,
    7,
  ];

  function setup(): { c: WorldConfig; w: World; v: number; plain: number } {
    const c = WorldConfig.build({ eventReserveBytes: 100 });
    const w = new World(c, { capacity: 16, threads: 1 });
    const v = w.spawn({ x: 100, y: 100, z: 0 });
    const plain = w.spawn({ x: 110, y: 100, z: 0 });
    w.addViewer(v, { acks: true });
    w.addViewer(plain);
    return { c, w, v, plain };
  }

  it('every target is checked in full when emitted, idle or during a tick: a bad one is refused and nothing is deferred', async () => {
    const { c, w, v } = setup();
    await w.tick();
    for (const target of BAD_TARGETS) {
      expect(() => w.emit(text('bad'), target as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    const pending = w.tick();
    for (const target of BAD_TARGETS) {
      expect(() => w.emit(text('bad'), target as never)).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    }
    expect(() => w.emit(text('bad'), { holders: NaN })).toThrow('target holders must be an integer entity id from 0 to 4294967295, received NaN');
    expect(w.emit(text('good'), { viewer: v })).toBe(0);
    // A field set to undefined is absent, as the type's optional fields allow.
    expect(w.emit(text('also'), { viewer: v, holders: undefined, near: undefined })).toBe(0);
    const result = await pending;
    expect(result.count).toBe(2);
    expect(w.eventsDropped).toBe(0);
    expect(w.eventStats(v)).toEqual({ queued: 2, dropped: 0, pending: 2 });
    const p = decodePacketRaw((await w.tick()).bytesAt(0), c);
    expect(p.events.map((e) => new TextDecoder().decode(e.bytes))).toEqual(['good', 'also']);
  });

  // The same calls made while a tick runs and between ticks reach the same viewers: a deferred
  // event is applied in call order with the viewer changes of its tick.
  async function sameCalls(calls: (w: World, ids: { a: number; b: number; c: number }) => void, during: boolean) {
    const cfg = WorldConfig.build({ regionSize: 1024, viewRadius: 200, eventReserveBytes: 40 });
    const w = new World(cfg, { capacity: 16, threads: 1 });
    const ids = { a: w.spawn({ x: 500, y: 500, z: 0 }), b: w.spawn({ x: 510, y: 500, z: 0 }), c: w.spawn({ x: 520, y: 500, z: 0 }) };
    w.addViewer(ids.a, { acks: true });
    w.addViewer(ids.b, { acks: true });
    await w.tick();
    if (during) {
      const pending = w.tick();
      calls(w, ids);
      await pending;
    } else {
      await w.tick();
      calls(w, ids);
    }
    const r = await w.tick();
    const got: Record<number, number> = {};
    for (let i = 0; i < r.count; i++) got[r.viewerAt(i)] = decodePacket(r.bytesAt(i), cfg).events.length;
    const out = { events: got, dropped: w.eventsDropped, ids };
    w.close();
    return out;
  }

  // [name, calls, viewers that get the event, drops counted when deferred]. Between ticks the
  // event is queued at once and no drop is counted; deferred, an event whose { viewer } is gone
  // when the tick ends is counted (as documented).
  type Ids = { a: number; b: number; c: number };
  const ORDERED: Array<[string, (w: World, ids: Ids) => void, (ids: Ids) => number[], number]> = [
    ['{ viewer }, then removed and added again: the new viewer does not get it', (w, { b }) => {
      w.emit(text('e'), { viewer: b });
      w.removeViewer(b);
      w.addViewer(b, { acks: true });
    }, () => [], 1],
    ['removed and added again, then { viewer }: the new viewer gets it', (w, { b }) => {
      w.removeViewer(b);
      w.addViewer(b, { acks: true });
      w.emit(text('e'), { viewer: b });
    }, ({ b }) => [b], 0],
    ['{ near }, then a viewer added: it does not get it', (w, { c }) => {
      w.emit(text('e'), { near: { x: 510, y: 500 }, radius: 50 });
      w.addViewer(c, { acks: true });
    }, ({ a, b }) => [a, b], 0],
    ['a viewer added, then { near }: it gets it', (w, { c }) => {
      w.addViewer(c, { acks: true });
      w.emit(text('e'), { near: { x: 510, y: 500 }, radius: 50 });
    }, ({ a, b, c }) => [a, b, c], 0],
    ['{ holders }, then the holder removed and added again: the new viewer does not get it', (w, { a, b }) => {
      w.emit(text('e'), { holders: b });
      w.removeViewer(a);
      w.addViewer(a, { acks: true });
    }, () => [], 0],
    ['{ holders }, with the holder kept: it gets it', (w, { b }) => {
      w.emit(text('e'), { holders: b });
    }, ({ a }) => [a], 0],
  ];
  for (const [name, calls, receivers, deferredDrops] of ORDERED) {
    it(`apply in call order with the tick's viewer changes: ${name}`, async () => {
      const idle = await sameCalls(calls, false);
      const deferred = await sameCalls(calls, true);
      expect(deferred.events).toEqual(idle.events);
      const got = Object.entries(idle.events).filter(([, n]) => n > 0).map(([v]) => Number(v)).sort((x, y) => x - y);
      expect(got).toEqual(receivers(idle.ids).sort((x, y) => x - y));
      expect(idle.dropped).toBe(0);
      expect(deferred.dropped).toBe(deferredDrops);
    });
  }

  it('a deferred target is a copy: changing the caller\'s object after emit changes nothing', async () => {
    const { w, v } = setup();
    const target = { viewer: v };
    const pending = w.tick();
    w.emit(text('x'), target);
    target.viewer = NaN;
    await pending;
    expect(w.eventsDropped).toBe(0);
    expect(w.eventStats(v)!.queued).toBe(1);
  });

  it('{ viewer } to a viewer that takes no events is ERR_SIGHTLINE_EVENTS_DISABLED during a tick too, and nothing is deferred', async () => {
    const { w, v, plain } = setup();
    const pending = w.tick();
    expect(() => w.emit(text('x'), { viewer: plain })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_EVENTS_DISABLED' }));
    await pending;
    expect(w.eventsDropped).toBe(0);
    expect(w.eventStats(plain)).toBeNull();
    expect(w.eventStats(v)!.queued).toBe(0);
  });

  it('a deferred event that fails when the tick ends is counted in eventsDropped; the tick resolves and later events still apply', async () => {
    const { w, v } = setup();
    const late = w.spawn({ x: 120, y: 100, z: 0 });
    const pending = w.tick();
    // Added during this tick, without acks: the engine cannot say yet that it takes no events.
    w.addViewer(late);
    expect(w.emit(text('lost'), { viewer: late })).toBe(0);
    expect(w.emit(text('kept'), { viewer: v })).toBe(0);
    const result = await pending;
    expect(result.tick).toBeGreaterThan(0);
    expect(w.eventsDropped).toBe(1);
    expect(w.eventStats(late)).toBeNull();
    expect(w.eventStats(v)).toEqual({ queued: 1, dropped: 0, pending: 1 });
  });

  it('a viewer removed and added again with acks during the tick takes a deferred event', async () => {
    const { w, plain } = setup();
    const pending = w.tick();
    w.removeViewer(plain);
    w.addViewer(plain, { acks: true });
    expect(w.emit(text('x'), { viewer: plain })).toBe(0);
    await pending;
    expect(w.eventsDropped).toBe(0);
    expect(w.eventStats(plain)).toEqual({ queued: 1, dropped: 0, pending: 1 });
  });

  it('acknowledgements and events made during a tick apply in call order: a { holders } event, then the acknowledgement that tells the client lost the entity', async () => {
    // The viewer's client holds e but never acknowledges: an acknowledgement of its newest packet
    // alone leaves the others out by more than 32 sequences, so e's announcement is lost for
    // certain and the viewer no longer holds it. Emitted before that acknowledgement, the event
    // reaches it; emitted after, not: during a tick as between ticks.
    const outcome = async (duringTick: boolean, emitFirst: boolean) => {
      const w = new World(WorldConfig.build({ eventReserveBytes: 100 }), { capacity: 16, threads: 2 });
      const v = w.spawn({ x: 100, y: 100, z: 0 });
      const e = w.spawn({ x: 110, y: 100, z: 0 });
      w.addViewer(v, { acks: true });
      let last = 0;
      for (let t = 0; t < 40; t++) last = decodePacket((await w.tick()).bytesAt(0), w.config).sequence;
      const pending = duringTick ? w.tick() : undefined;
      const emit = () => w.emit(text('h'), { holders: e });
      const ack = () => w.acknowledge(v, last, 0);
      if (emitFirst) emit(), ack();
      else ack(), emit();
      await pending;
      const seen = [w.eventStats(v)!.queued, w.eventsDropped];
      w.close();
      return seen;
    };
    for (const emitFirst of [true, false]) {
      const between = await outcome(false, emitFirst);
      expect(between).toEqual([emitFirst ? 1 : 0, 0]);
      expect(await outcome(true, emitFirst)).toEqual(between);
    }
  });

  // A { near } event deferred during a tick measures the avatars when it is emitted, as the same
  // calls between ticks would: moving, despawning or bringing an avatar after the emit changes
  // nothing for that event.
  const AFTER_EMIT: [string, (w: World, inRange: number, outOfRange: number) => void][] = [
    ['setPosition', (w, a, b) => (w.setPosition(a, { x: 900, y: 900 }), w.setPosition(b, { x: 100, y: 100 }))],
    ['positions written', (w, a, b) => {
      const sa = w.slotOf(a), sb = w.slotOf(b);
      [w.positions.x[sa], w.positions.x[sb]] = [w.positions.x[sb], w.positions.x[sa]];
      [w.positions.y[sa], w.positions.y[sb]] = [w.positions.y[sb], w.positions.y[sa]];
    }],
    ['despawn', (w, a) => w.despawn(a)],
  ];
  for (const [name, change] of AFTER_EMIT) {
    it(`a deferred { near } event reaches the viewers in range when emitted: ${name} after it`, async () => {
      const outcome = async (duringTick: boolean) => {
        const w = new World(WorldConfig.build({ eventReserveBytes: 100 }), { capacity: 16, threads: 2 });
        const inRange = w.spawn({ x: 100, y: 100, z: 0 });
        const outOfRange = w.spawn({ x: 900, y: 900, z: 0 });
        w.addViewer(inRange, { acks: true });
        w.addViewer(outOfRange, { acks: true });
        await w.tick();
        const pending = duringTick ? w.tick() : undefined;
        w.emit(text('n'), { near: { x: 100, y: 100 }, radius: 10 });
        change(w, inRange, outOfRange);
        await pending;
        const seen = [w.eventStats(inRange)!.queued, w.eventStats(outOfRange)!.queued, w.eventsDropped];
        w.close();
        return seen;
      };
      const between = await outcome(false);
      expect(between).toEqual([1, 0, 0]);
      expect(await outcome(true)).toEqual(between);
    });
  }
});
