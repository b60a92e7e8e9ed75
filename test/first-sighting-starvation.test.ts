// A known gap in the starvation bound (docs/api.md, setPriority): a candidate the viewer does not
// hold yet scores newDrift × band weight × priority × boost, a constant, while the held ones' scores
// grow with their drift. Once the held movers' drift between two sends passes newDrift (64 m by
// default: weight-16 entities at 2 m a tick pass it in under 3 ticks), a weight-1 entity moving
// alike on the same band is never announced, where the bound says every 2·ceil(N/B)·16 + 1 ticks.
// Marked `fails` until first sightings' scores grow too (or the bound is documented narrower):
// when this test starts failing, the gap is closed and `.fails` goes.
import { describe, expect, it } from 'vitest';
import { decodePacket } from '../lib/decode.js';
import { WorldConfig } from '../lib/config.js';
import { World } from '../lib/world.js';

const config = WorldConfig.build({ viewRadius: 64 });

// N entities on a ring of 10 m around a viewer with B update slots a packet; all but the first
// have weight 16; each moves `step` raw units a tick, back and forth. Returns, for each entity,
// the longest wait between two sends (or from the start to its first send, or to the end).
async function worstWaits(N: number, B: number, step: number, ticks: number): Promise<{ ids: number[]; worst: number[] }> {
  const w = new World(config, { capacity: 64, threads: 1 });
  const viewer = w.spawn({ x: 100, y: 100 });
  const ids: number[] = [];
  for (let i = 0; i < N; i++) {
    const a = (2 * Math.PI * i) / N;
    ids.push(w.spawn({ x: 100 + 10 * Math.cos(a), y: 100 + 10 * Math.sin(a) }));
    if (i > 0) w.setPriority(ids[i], 16);
  }
  w.addViewer(viewer, { payloadBytes: 16 + 12 * B });
  const last = ids.map(() => -1);
  const worst = ids.map(() => 0);
  for (let t = 0; t < ticks; t++) {
    for (const id of ids) w.positions.x[w.slotOf(id)] += t % 2 === 0 ? step : -step;
    const r = await w.tick();
    for (const u of decodePacket(r.bytesAt(0), config).updates) {
      const i = ids.indexOf(u.id);
      worst[i] = Math.max(worst[i], t - last[i]);
      last[i] = t;
    }
  }
  ids.forEach((_, i) => (worst[i] = Math.max(worst[i], ticks - 1 - last[i])));
  w.close();
  return { ids, worst };
}

describe('the starvation bound and first sightings', () => {
  it('holds for a slow crowd: a weight-1 entity among weight-16 ones moving 0.03 m a tick', async () => {
    const N = 20;
    const B = 2;
    const { worst } = await worstWaits(N, B, 30, 1500);
    expect(worst[0]).toBeLessThanOrEqual(2 * Math.ceil(N / B) * 16 + 1);
  });

  it.fails('holds for a fast crowd: a weight-1 entity among weight-16 ones moving 1.95 m a tick (maxSpeed 40 m/s at 20 Hz)', async () => {
    const N = 20;
    const B = 2;
    const { worst } = await worstWaits(N, B, 2000, 1500);
    // Measured: the weight-1 entity is never sent in 1,500 ticks (the bound is 321).
    expect(worst[0]).toBeLessThanOrEqual(2 * Math.ceil(N / B) * 16 + 1);
  });
});
