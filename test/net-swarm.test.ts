// UdpClientSwarm (Linux) against a UdpServer of either data path: its light clients take in game
// packets of the protocol version the engine writes, and its sample clients decode them as a
// UdpClient would, fast fields, kinds and attributes included, given the server's WorldConfig.
import { afterEach, describe, expect, it } from 'vitest';
import { World, WorldConfig, type EntityId } from '../lib/index.js';
import { UdpClientSwarm } from '../lib/net/client-swarm.js';
import { UdpServer } from '../lib/net/udp-server.js';
import { HOST, cleanups, runCleanups, until } from './helpers/net.js';

afterEach(runCleanups);

const stateConfig = WorldConfig.build({
  fields: [{ name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI }, { name: 'hp', bits: 7, max: 100 }],
  attributeBytes: 16,
});

async function server(config: WorldConfig, dataPath: 'native' | 'dgram'): Promise<{ world: World; server: UdpServer; port: number; npc: EntityId }> {
  const world = new World(config, { capacity: 64, threads: 1 });
  cleanups.push(() => world.close());
  const state = config.fields.length > 0;
  const npc = world.spawn({ x: 2000, y: 2000 }, state ? { kind: 9, attributes: new TextEncoder().encode('Grug') } : undefined);
  if (state) {
    world.fields.yaw[world.slotOf(npc)] = config.fieldToRaw('yaw', Math.PI);
    world.fields.hp[world.slotOf(npc)] = 127;
  }
  const s = new UdpServer({
    config,
    world,
    dataPath,
    address: HOST,
    port: 0,
    onConnect: () => {
      const id = world.spawn({ x: 2001, y: 2000 });
      world.addViewer(id, { acks: true });
      return id;
    },
  });
  const { port } = await s.listen();
  cleanups.push(() => s.close());
  return { world, server: s, port, npc };
}

function swarm(clients: number, firstAddress: string): UdpClientSwarm {
  const w = new UdpClientSwarm({ clients, firstAddress, sample: (i) => i % 2 === 0, connectTimeoutMs: 3000 });
  cleanups.push(() => w.close());
  return w;
}

describe.skipIf(!UdpClientSwarm.supported)('UdpClientSwarm', () => {
  it.each(['native', 'dgram'] as const)('takes in and acknowledges every game packet of the default configuration (%s data path)', async (dataPath) => {
    const s = await server(WorldConfig.build(), dataPath);
    const w = swarm(4, '127.1.0.1');
    expect(await w.connect(HOST, s.port, s.world.config.protocolHash)).toMatchObject({ connected: 4, failed: 0 });
    let sent = 0;
    for (let t = 0; t < 10; t++) sent += s.server.sendTick(await s.world.tick());
    await until('the packets', () => w.totals().applied === sent);
    const t = w.totals();
    expect(sent).toBe(40);
    expect(t).toMatchObject({ gamePackets: sent, applied: sent, malformed: 0, early: 0, duplicates: 0, stale: 0 });
    expect(w.worldOf(0)!.get(s.npc)).toBeDefined();
    await until('the acks', () => s.server.counters.acks >= sent);
  });

  it("given the server's WorldConfig, the sample clients get fields, kinds and attributes; given only its hash, each client is told to pass the config", async () => {
    const s = await server(stateConfig, 'native');
    const hashOnly = swarm(2, '127.2.0.1');
    const refused = await hashOnly.connect(HOST, s.port, stateConfig.protocolHash);
    expect(refused).toMatchObject({ connected: 0, failed: 2 });
    expect(refused.errors[0]).toContain('ERR_SIGHTLINE_NET_LAYOUT_UNKNOWN');

    const w = swarm(2, '127.1.0.1');
    expect(await w.connect(HOST, s.port, stateConfig)).toMatchObject({ connected: 2, failed: 0 });
    for (let t = 0; t < 50 && w.worldOf(0)!.get(s.npc)?.attributes == null; t++) {
      s.server.sendTick(await s.world.tick());
      await new Promise((r) => setTimeout(r, 5));
    }
    const e = w.worldOf(0)!.get(s.npc)!;
    expect(e.kind).toBe(9);
    expect(e.fields.hp).toBe(100);
    expect(e.fields.yaw).toBeCloseTo(Math.PI, 2);
    expect(new TextDecoder().decode(e.attributes!)).toBe('Grug');
    expect(w.totals()).toMatchObject({ malformed: 0, early: 0 });
  });
});
