// Wire format 2 over the UDP transport: a client built for version 1 is refused at the handshake
// with a coded reason; a client given the server's WorldConfig gets fields, kinds and attributes,
// and one given only the hash of a server whose packets carry them is told so.
import { afterEach, describe, it, expect } from 'vitest';
import { PROTOCOL_VERSION, World, WorldConfig, type EntityId } from '../lib/index.js';
import { UdpServer } from '../lib/net/udp-server.js';
import { UdpClient } from '../lib/net/udp-client.js';
import { MSG_REFUSE, RefuseCode, encodeHello, refuseError, type RefuseMessage } from '../lib/net/protocol.js';
import { HOST, cleanups, harness, rawSocket, runCleanups, until } from './helpers/net.js';

afterEach(runCleanups);

const stateConfig = WorldConfig.build({
  fields: [{ name: 'yaw', bits: 10, min: 0, max: 2 * Math.PI }, { name: 'hp', bits: 7, max: 100 }],
  attributeBytes: 16,
});

async function stateServer(): Promise<{ world: World; server: UdpServer; port: number; npc: EntityId }> {
  const world = new World(stateConfig, { capacity: 64, threads: 1 });
  const npc = world.spawn({ x: 2000, y: 2000 }, { kind: 9, attributes: new TextEncoder().encode('Grug') });
  world.fields.yaw[world.slotOf(npc)] = stateConfig.fieldToRaw('yaw', Math.PI);
  world.fields.hp[world.slotOf(npc)] = 127;
  const server = new UdpServer({
    config: stateConfig,
    world,
    address: HOST,
    port: 0,
    onConnect: () => {
      const id = world.spawn({ x: 2001, y: 2000 });
      world.addViewer(id, { acks: true });
      return id;
    },
  });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  return { world, server, port, npc };
}

describe('wire format 2 at the handshake', () => {
  it('a HELLO of protocol version 1 is refused with VERSION, naming the server\'s version 2: ERR_SIGHTLINE_NET_REFUSED_VERSION', async () => {
    const h = await harness();
    const raw = await rawSocket();
    await raw.send(encodeHello({ protocolHash: h.world.config.protocolHash, nonce: 41, version: 1 }), h.port);
    await until('the REFUSE', () => raw.inbox.some((m) => m.type === MSG_REFUSE));
    const refuse = raw.inbox.find((m) => m.type === MSG_REFUSE) as RefuseMessage;
    expect(refuse).toMatchObject({ nonce: 41, code: RefuseCode.VERSION, detail: PROTOCOL_VERSION });
    expect(PROTOCOL_VERSION).toBe(2);
    expect(refuseError(refuse).code).toBe('ERR_SIGHTLINE_NET_REFUSED_VERSION');
    expect(h.server.clientCount).toBe(0);
  });

  it('a client given the server\'s WorldConfig gets fields, kinds and attributes; one given only its hash is told to pass the config', async () => {
    const s = await stateServer();
    const hashOnly = new UdpClient();
    cleanups.push(() => hashOnly.close());
    await expect(hashOnly.connect(HOST, s.port, stateConfig.protocolHash)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_NET_LAYOUT_UNKNOWN' });

    const names: string[] = [];
    const c = new UdpClient({ onAttributes: (_id, bytes) => names.push(new TextDecoder().decode(bytes)) });
    cleanups.push(() => c.close());
    await c.connect(HOST, s.port, stateConfig);
    for (let t = 0; t < 50 && c.world.get(s.npc) === undefined; t++) {
      s.server.sendTick(await s.world.tick());
      await new Promise((r) => setTimeout(r, 5));
    }
    await until('the NPC', () => c.world.get(s.npc)?.attributes !== null && c.world.get(s.npc) !== undefined);
    const e = c.world.get(s.npc)!;
    expect(e.kind).toBe(9);
    expect(e.fields.hp).toBe(100);
    expect(e.fields.yaw).toBeCloseTo(Math.PI, 2);
    expect(names).toEqual(['Grug']);
  });
});
