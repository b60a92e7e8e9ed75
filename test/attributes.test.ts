// Attributes: opaque bytes per entity with a version, sent with the entity's first sighting (the
// same packet) and after each change, latest version only; resent until acknowledged with acks,
// repeated every attributeRepeatPasses passes without. Checked against a model client built from
// the decoded packets, and against ClientWorld over a lossy, reordering link.
import { describe, it, expect } from 'vitest';
import { World, WorldConfig, toRaw, type EntityId, type TickResult } from '../lib/index.js';
import { decodePacketRaw, createRawPacket } from '../lib/decode.js';
import { ClientWorld } from '../lib/net/client-world.js';
import { LossyLink } from '../lib/net/lossy-link.js';
import { ModelClient, ackOf, codeOf, randInt, rng, withSeed } from './helpers/model.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null | undefined) => (b ? new TextDecoder().decode(b) : undefined);

// A model client per viewer that acknowledges every packet it gets (a lossless link with acks).
class Acking {
  readonly clients = new Map<EntityId, ModelClient>();
  readonly received = new Map<EntityId, Set<number>>();
  entries = 0;
  constructor(readonly world: World, readonly acks: boolean, readonly payload = world.config.payloadBytes) {}
  deliver(result: TickResult, only?: (viewer: EntityId, sequence: number) => boolean): void {
    for (const p of result.packets) {
      let c = this.clients.get(p.viewer);
      if (!c) this.clients.set(p.viewer, (c = new ModelClient(this.world.config, this.payload)));
      const seq = p.bytes[2] | (p.bytes[3] << 8);
      if (only && !only(p.viewer, seq)) continue;
      c.lastSequence = -1;  // losses are the test's: the model client need not see every sequence
      const raw = c.apply(p.bytes);
      this.entries += raw.attributeCount;
      if (!this.acks) continue;
      const got = this.received.get(p.viewer) ?? new Set<number>();
      got.add(seq);
      this.received.set(p.viewer, got);
      const [ack, bits] = ackOf(got, seq);
      this.world.acknowledge(p.viewer, ack, bits);
    }
  }
}

describe('attributes', () => {
  it('arrive with the first sighting, in the same packet, and each change is delivered exactly once on a lossless link with acks', async () => {
    const c = WorldConfig.build({ attributeBytes: 32 });
    const w = new World(c, { capacity: 64, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { attributes: enc('Ada') });
    const b = w.spawn({ x: 102, y: 100 });
    expect(w.attributes(a)).toEqual({ version: 1, bytes: enc('Ada') });
    expect(w.attributes(b)).toBe(null);
    w.addViewer(viewer, { acks: true });
    const link = new Acking(w, true);
    link.deliver(await w.tick());
    const client = link.clients.get(viewer)!;
    expect(client.sightedAt.get(a)).toBe(client.lastSequence);
    expect(dec(client.attributes.get(a)?.bytes)).toBe('Ada');
    expect(client.attributes.has(b)).toBe(false);
    expect(link.entries).toBe(1);
    // b gets its first attributes, a a new version: each arrives once, and nothing after.
    expect(w.setAttributes(b, enc('Bob'))).toBe(1);
    expect(w.setAttributes(a, enc('Ada Lovelace'))).toBe(2);
    for (let t = 0; t < 30; t++) link.deliver(await w.tick());
    expect(dec(client.attributes.get(a)?.bytes)).toBe('Ada Lovelace');
    expect(dec(client.attributes.get(b)?.bytes)).toBe('Bob');
    expect(link.entries).toBe(3);
    expect(client.attributeRepeats).toBe(0);
    expect(client.attributeHistory.get(a)).toEqual([1, 2]);
  });

  it('a burst of changes between two packets sends the latest, not each', async () => {
    const c = WorldConfig.build({ attributeBytes: 8 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { attributes: enc('v0') });
    w.addViewer(viewer, { acks: true });
    const link = new Acking(w, true);
    link.deliver(await w.tick());
    for (let k = 1; k <= 50; k++) w.setAttributes(a, enc(`v${k}`));
    for (let t = 0; t < 10; t++) link.deliver(await w.tick());
    const client = link.clients.get(viewer)!;
    expect(client.attributeHistory.get(a)).toEqual([1, 51]);
    expect(link.entries).toBe(2);
  });

  it('without acks, held ghosts get their attributes again every attributeRepeatPasses passes (the client applies each version once)', async () => {
    const c = WorldConfig.build({ attributeBytes: 8, attributeRepeatPasses: 5 });
    const w = new World(c, { capacity: 16, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const ids = Array.from({ length: 4 }, (_, i) => w.spawn({ x: 101 + i, y: 100 }, { attributes: enc(`e${i}`) }));
    w.addViewer(viewer);
    const link = new Acking(w, false);
    for (let t = 0; t < 41; t++) link.deliver(await w.tick());
    const client = link.clients.get(viewer)!;
    // 4 first sightings, then each ghost again about every 5 passes: 8 more times in 40 passes.
    expect(link.entries).toBeGreaterThanOrEqual(4 + 4 * 7);
    expect(link.entries).toBeLessThanOrEqual(4 + 4 * 8);
    for (const id of ids) expect(client.attributeHistory.get(id)).toEqual([1]);
    const none = new World(WorldConfig.build({ attributeBytes: 8, attributeRepeatPasses: 0 }), { capacity: 16, threads: 1 });
    const v2 = none.spawn({ x: 100, y: 100 });
    none.spawn({ x: 101, y: 100 }, { attributes: enc('x') });
    none.addViewer(v2);
    let entries = 0;
    for (let t = 0; t < 30; t++) for (const p of (await none.tick()).packets) entries += decodePacketRaw(p.bytes, none.config, createRawPacket()).attributeCount;
    expect(entries).toBe(1);
  });

  it('with acks, a version whose packet is lost is sent again until a packet carrying it is acknowledged', async () => {
    const c = WorldConfig.build({ attributeBytes: 8 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { attributes: enc('one') });
    w.addViewer(viewer, { acks: true });
    const link = new Acking(w, true);
    link.deliver(await w.tick());
    w.setAttributes(a, enc('two'));
    // The next 3 packets that carry attributes are lost.
    let dropped = 0;
    for (let t = 0; t < 40; t++) {
      const r = await w.tick();
      link.deliver(r, (_v, _s) => {
        const carries = r.stats.attributes > 0;
        if (carries && dropped < 3) {
          dropped++;
          return false;
        }
        return true;
      });
    }
    expect(dropped).toBe(3);
    expect(dec(link.clients.get(viewer)!.attributes.get(a)?.bytes)).toBe('two');
  });

  it('under 20% loss with reordering every viewer ends holding the latest version, never an older one after a newer, and the bytes stay bounded', async () => {
    await withSeed(2024, async (seed) => {
      const r = rng(seed);
      const c = WorldConfig.build({ attributeBytes: 16 });
      const w = new World(c, { capacity: 400, threads: 1 });
      const ids = Array.from({ length: 120 }, (_, i) => w.spawn({ x: 2000 + r() * 100, y: 2000 + r() * 100 }, { attributes: enc(`n${i}.0`) }));
      const versions = new Map<EntityId, number[]>();
      const link = new LossyLink({
        loss: 0.2,
        maxDelay: 3,
        duplicate: 0.05,
        seed,
        world: w,
        onConnect: () => {
          const id = w.spawn({ x: 2050, y: 2050 });
          w.addViewer(id, { acks: true });
          return id;
        },
      });
      const clients: ClientWorld[] = [];
      for (let k = 0; k < 6; k++) {
        const cw = new ClientWorld(c, {
          onAttributes: (id, _bytes, version) => {
            const seen = versions.get(id) ?? [];
            if (seen.length) expect(version, `entity ${id}`).toBeGreaterThan(seen[seen.length - 1]);
            seen.push(version);
            versions.set(id, seen);
          },
        });
        clients.push(cw);
        link.connect(`c${k}`, cw);
      }
      let changes = 0;
      let entries = 0;
      for (let t = 0; t < 160; t++) {
        if (t < 120) {
          for (const id of ids) {
            if (r() < 0.3) w.positions.x[w.slotOf(id)] += randInt(r, -200, 200);
            if (r() < 0.03) {
              w.setAttributes(id, enc(`n${id}.${t}`));
              changes++;
            }
          }
        }
        if (t === 120) link.setConditions({ loss: 0, maxDelay: 0, duplicate: 0 });
        const res = await w.tick();
        entries += res.stats.attributes;
        link.sendTick(res);
        link.step();
      }
      for (const cw of clients) {
        let checked = 0;
        for (const [id, e] of cw.entities) {
          if (!w.isLive(id) || w.hasViewer(id)) continue;
          expect({ id, bytes: dec(e.attributes) }).toEqual({ id, bytes: dec(w.attributes(id)?.bytes) });
          checked++;
        }
        expect(checked).toBeGreaterThan(50);
      }
      // Each viewer holds every entity: first sightings, changes, and resends of what was lost
      // (about a fifth, and resends of resends): far from one entry per change per pass.
      expect(changes).toBeGreaterThan(300);
      expect(entries).toBeLessThan(6 * (ids.length + changes) * 2);
    });
  });

  it("a newcomer's attributes arrive in the packet of its first sighting, also when a viewer teleports into a crowd of 256", async () => {
    const c = WorldConfig.build({ attributeBytes: 32 });
    const w = new World(c, { capacity: 600, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const crowd = Array.from({ length: 256 }, (_, i) => w.spawn({ x: 3000 + (i % 16), y: 3000 + Math.floor(i / 16) }, { attributes: enc(`crowd member ${i}`.padEnd(32, '.')), kind: 1 + (i % 3) }));
    w.addViewer(viewer);
    const client = new ModelClient(c);
    for (let t = 0; t < 3; t++) for (const p of (await w.tick()).packets) client.apply(p.bytes);
    expect(client.held.size).toBe(0);
    w.setPosition(viewer, { x: 3008, y: 3008 });
    const perPacket: number[] = [];
    for (let t = 0; t < 60 && client.held.size < 256; t++) {
      const res = await w.tick();
      for (const p of res.packets) {
        expect(p.bytes.length).toBeLessThanOrEqual(c.payloadBytes);
        const before = client.held.size;
        const raw = client.apply(p.bytes);
        perPacket.push(client.held.size - before);
        // Every entity first seen in this packet got its attributes and its kind in it.
        for (let i = 0; i < raw.updateCount; i++) {
          const id = raw.ids[i];
          if (client.sightedAt.get(id) !== raw.sequence) continue;
          expect(client.attributes.get(id)?.version).toBe(1);
          expect(client.kinds.get(id)).toBe(w.kind(id));
        }
      }
    }
    expect(client.held.size).toBe(256);
    for (const id of crowd) expect(dec(client.attributes.get(id)?.bytes)).toBe(dec(w.attributes(id)!.bytes));
    // The bound: the sections' floor (a quarter of the 1,184 state bytes) holds 6 newcomers with a
    // 32-byte attribute and a kind (47 bytes each, after the two section counts).
    expect(Math.max(...perPacket)).toBe(Math.floor((Math.floor(1184 / 4) - 4) / 47));
  });

  it('update records never fall below their floor while attributes are pending, and attributes never below theirs', async () => {
    const c = WorldConfig.build({ attributeBytes: 40, attributeShare: 0.25 });
    const w = new World(c, { capacity: 800, threads: 1 });
    const viewer = w.spawn({ x: 500, y: 500 });
    const ids = Array.from({ length: 600 }, () => w.spawn({ x: 480 + Math.random() * 40, y: 480 + Math.random() * 40 }, { attributes: enc('x'.repeat(40)) }));
    w.addViewer(viewer, { acks: true });
    const link = new Acking(w, true);
    for (let t = 0; t < 40; t++) link.deliver(await w.tick());
    const S = c.payloadBytes - 16;
    const floor = Math.floor((S * c.attributeShareQ16) / 65536);
    const entry = 9 + 40;
    let checked = 0;
    for (let t = 0; t < 30; t++) {
      // Everyone moves (updates wanted: more than a packet holds), and 100 change attributes (pending).
      for (const id of ids) w.positions.x[w.slotOf(id)] += toRaw(0.3);
      for (let k = 0; k < 100; k++) w.setAttributes(ids[(t * 100 + k) % ids.length], enc(String(t).padEnd(40, '-')));
      const res = await w.tick();
      for (const p of res.packets) {
        const raw = decodePacketRaw(p.bytes, c, createRawPacket());
        const state = S - 4 * raw.despawnCount;
        const attributeBytes = raw.attributeCount ? 2 + raw.attributes.reduce((s, a, i) => (i < raw.attributeCount ? s + 9 + a.length : s), 0) : 0;
        expect(raw.updateCount * 12).toBeGreaterThanOrEqual(state - Math.max(floor, 2 * 2 + 6 + entry) - 12);
        expect(attributeBytes).toBeGreaterThan(Math.floor((state * c.attributeShareQ16) / 65536) - entry - 4);
        checked++;
      }
      link.deliver(res);
    }
    expect(checked).toBe(30);
  });

  it('bad input is a coded error and changes nothing', () => {
    const w = new World(WorldConfig.build({ attributeBytes: 4 }), { capacity: 4, threads: 1 });
    const a = w.spawn({ x: 1, y: 1 }, { attributes: enc('ab') });
    expect(codeOf(() => w.setAttributes(a, enc('abcde')))).toBe('ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE');
    expect(codeOf(() => w.setAttributes(a, 'ab' as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(codeOf(() => w.setAttributes(a, new Uint16Array(1) as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(codeOf(() => w.spawn({ x: 1, y: 1 }, { attributes: enc('abcde') }))).toBe('ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE');
    expect(w.liveCount).toBe(1);
    expect(w.attributes(a)).toEqual({ version: 1, bytes: enc('ab') });
    expect(w.setAttributes(a, new Uint8Array(0))).toBe(2);
    expect(w.attributes(a)).toEqual({ version: 2, bytes: new Uint8Array(0) });
    w.despawn(a);
    expect(codeOf(() => w.setAttributes(a, enc('a')))).toBe('ERR_SIGHTLINE_STALE_ENTITY');
    expect(codeOf(() => w.attributes(a))).toBe('ERR_SIGHTLINE_STALE_ENTITY');
    const none = new World(WorldConfig.build(), { capacity: 4, threads: 1 });
    const b = none.spawn({ x: 1, y: 1 });
    expect(codeOf(() => none.setAttributes(b, enc('a')))).toBe('ERR_SIGHTLINE_ATTRIBUTES_DISABLED');
    expect(codeOf(() => none.spawn({ x: 1, y: 1 }, { attributes: enc('a') }))).toBe('ERR_SIGHTLINE_ATTRIBUTES_DISABLED');
    expect(none.liveCount).toBe(1);
    expect(none.attributes(b)).toBe(null);
  });

  it('set during a tick: the running tick sends what it found, the next one the new version', async () => {
    const c = WorldConfig.build({ attributeBytes: 8 });
    const w = new World(c, { capacity: 8, threads: 1 });
    const viewer = w.spawn({ x: 100, y: 100 });
    const a = w.spawn({ x: 101, y: 100 }, { attributes: enc('first') });
    w.addViewer(viewer, { acks: true });
    const link = new Acking(w, true);
    const running = w.tick();
    expect(w.setAttributes(a, enc('second'))).toBe(2);
    link.deliver(await running);
    const client = link.clients.get(viewer)!;
    expect(dec(client.attributes.get(a)?.bytes)).toBe('first');
    for (let t = 0; t < 3; t++) link.deliver(await w.tick());
    expect(dec(client.attributes.get(a)?.bytes)).toBe('second');
  });
});

describe('ClientWorld with kinds and attributes', () => {
  it('keeps the newest of each, calls onKind and onAttributes on a change, and holds early attributes for a late first sighting', async () => {
    const { encode } = await import('./helpers/wire.js');
    const c = WorldConfig.build({ attributeBytes: 8, fields: [{ name: 'hp', bits: 7, max: 100 }] });
    const calls: string[] = [];
    const cw = new ClientWorld(c, {
      onSpawn: (id, e) => calls.push(`spawn ${id} kind ${e.kind} attrs ${dec(e.attributes)} hp ${e.fields.hp}`),
      onKind: (id, kind) => calls.push(`kind ${id} ${kind}`),
      onAttributes: (id, bytes, version) => calls.push(`attrs ${id} v${version} ${dec(bytes)}`),
    });
    const up = (id: number, hp = 127) => ({ id, x: 1024, y: 1024, z: 0, fields: [hp] });
    cw.receive(encode(c, { sequence: 1, tick: 1, updates: [up(5)], kinds: [[5, 3]], attributes: [[5, 1, enc('one')]] }));
    cw.receive(encode(c, { sequence: 2, tick: 2, updates: [up(5, 0)], kinds: [[5, 4]] }));
    cw.receive(encode(c, { sequence: 4, tick: 4, attributes: [[5, 3, enc('three')]] }));
    cw.receive(encode(c, { sequence: 3, tick: 3, attributes: [[5, 2, enc('two')]] }));  // late: older
    // Attributes of 9 before the (late) packet that introduces it.
    cw.receive(encode(c, { sequence: 6, tick: 6, attributes: [[9, 1, enc('nine')]] }));
    cw.receive(encode(c, { sequence: 5, tick: 5, updates: [up(9)] }));
    expect(calls).toEqual([
      'spawn 5 kind 3 attrs one hp 100',
      'attrs 5 v1 one',
      'kind 5 4',
      'attrs 5 v3 three',
      'spawn 9 kind 0 attrs nine hp 100',
      'attrs 9 v1 nine',
    ]);
    expect(cw.get(5)).toMatchObject({ kind: 4, attributesVersion: 3, fields: { hp: 0 } });
    expect(dec(cw.get(9)!.attributes)).toBe('nine');
    expect(cw.counters).toMatchObject({ kindChanges: 1, attributes: 3, staleAttributes: 1 });
  });
});
