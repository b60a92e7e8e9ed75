import { describe, it, expect, afterEach } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { UdpServer } from '../lib/net/udp-server.js';
import { UdpClient } from '../lib/net/udp-client.js';
import {
  MSG_CHALLENGE,
  MSG_WELCOME,
  encodeAck,
  encodeBye,
  encodeHello,
  encodeInput,
  encodePing,
  type ChallengeMessage,
  type WelcomeMessage,
} from '../lib/net/protocol.js';
import { SessionHost, type Endpoint } from '../lib/net/session-host.js';
import { decodeControl, MSG_ACK, MSG_BYE, MSG_HELLO, MSG_INPUT, MSG_PING } from '../lib/net/protocol.js';
import { zeroSessionCounters } from '../lib/net/transport.js';
import { rng } from './helpers/model.js';
import { HOST, caughtUp, client, config, harness, mismatches, rawHandshake, rawSocket, runCleanups, until } from './helpers/net.js';

afterEach(runCleanups);

function randomToken(r: () => number): Uint8Array {
  return Uint8Array.from({ length: 8 }, () => Math.floor(r() * 256));
}

describe('sessions nobody can hijack', () => {
  it("forged BYE, ACK, PING and INPUT from the victim's address, without its token, change nothing for the victim", async () => {
    const inputs: string[] = [];
    const h = await harness({ onInput: (viewer, bytes) => inputs.push(`${viewer}:${bytes.length}`) });
    const victim = await client(h);
    const bystander = await client(h);
    const port = victim.c.localPort;
    const r = rng(21);
    for (let t = 0; t < 10; t++) {
      await h.tick();
      await caughtUp(h, victim.c, victim.avatar);
      await caughtUp(h, bystander.c, bystander.avatar);
    }
    await until('the acks', () => h.server.counters.acks >= 20);
    const before = { ...h.server.counters };
    const stats0 = h.world.ackStats(victim.avatar)!;
    const forge = (bytes: Uint8Array) => h.server.handleDatagram(bytes, HOST, port);
    let forged = 0;
    for (let k = 0; k < 50; k++) {
      const token = k === 0 ? new Uint8Array(8) : randomToken(r);
      // The ACK claims that every packet but the newest was lost.
      const newest = (h.world.ghosts(victim.avatar).sequence + 65535) % 65536;
      forge(encodeAck(token, newest, 0));
      forge(encodeBye(token));
      forge(encodePing(token));
      forge(encodeInput({ token, kind: 1, sequence: 0, payload: Uint8Array.of(1, 2, 3) }));
      forged += 4;
    }
    // The 2-byte BYE of the earlier revision: malformed now.
    forge(Uint8Array.of(0xa4, 0));
    // A HELLO from the victim's address without a cookie is answered with a CHALLENGE and forgotten;
    // one with a made-up cookie too.
    forge(encodeHello({ protocolHash: config.protocolHash, nonce: 42 }));
    forge(encodeHello({ protocolHash: config.protocolHash, nonce: 42, cookie: new Uint8Array(16).fill(7) }));
    const after = h.server.counters;
    expect(after.badTokens - before.badTokens).toBe(forged);
    expect(after.malformed - before.malformed).toBe(1);
    expect(after.challenges - before.challenges).toBe(2);
    expect(after.badCookies - before.badCookies).toBe(1);
    expect(after.acks).toBe(before.acks);
    expect(after.disconnects).toBe(before.disconnects);
    expect(after.connects).toBe(before.connects);
    expect(inputs).toEqual([]);
    expect(h.events).toEqual([]);
    expect(h.world.ackStats(victim.avatar)).toEqual(stats0);
    // The victim carries on: every packet arrives and it holds what the server believes it holds.
    for (let t = 0; t < 10; t++) {
      await h.tick();
      await caughtUp(h, victim.c, victim.avatar);
    }
    // The acks reach the engine: at once on the dgram path, as the next tick starts on the native
    // one (a tick more, then).
    for (let k = 0; k < 50 && h.world.ackStats(victim.avatar)!.acked < stats0.acked + 10; k++) {
      await new Promise((res) => setTimeout(res, 5));
      if (h.server.dataPath === 'native') {
        await h.tick();
        await caughtUp(h, victim.c, victim.avatar);
      }
    }
    expect(h.world.ackStats(victim.avatar)!.acked).toBeGreaterThanOrEqual(stats0.acked + 10);
    expect(victim.c.state).toBe('connected');
    expect(h.server.has(victim.avatar)).toBe(true);
    expect(mismatches(h.world, victim.avatar, victim.c.world)).toEqual([]);
    expect(h.world.ackStats(victim.avatar)!.lost).toBe(0);
    expect(victim.c.counters.challenges).toBe(1); // its own; the CHALLENGEs the forgeries drew are ignored
  });

  it("forged PINGs from a silent client's address do not keep its session alive", async () => {
    const h = await harness({ timeoutMs: 300, keepaliveMs: 100 });
    const raw = await rawSocket();
    const w = (await rawHandshake(raw, h.port, 5)) as WelcomeMessage;
    const port = (raw.s.address() as { port: number }).port;
    const r = rng(4);
    const timer = setInterval(() => h.server.handleDatagram(encodePing(randomToken(r)), HOST, port), 20);
    try {
      await until('the timeout', () => h.events.length > 0, 3000);
    } finally {
      clearInterval(timer);
    }
    expect(h.events).toEqual([`${w.avatar} timeout`]);
    expect(h.server.counters.badTokens).toBeGreaterThan(5);
  });

  it('a cookie replayed from another address or port is refused: a fresh CHALLENGE, no session, onConnect never called', async () => {
    let connects = 0;
    const h = await harness({
      onConnect: () => {
        connects++;
        const id = h.world.spawn({ x: 10, y: 10, z: 0 });
        h.world.addViewer(id, { acks: true });
        return id;
      },
    });
    const a = await rawSocket();
    const b = await rawSocket();
    await a.send(encodeHello({ protocolHash: config.protocolHash, nonce: 9 }), h.port);
    await until('the CHALLENGE', () => a.inbox.some((m) => m.type === MSG_CHALLENGE));
    const cookie = (a.inbox.find((m) => m.type === MSG_CHALLENGE) as ChallengeMessage).cookie;
    const before = { ...h.server.counters };
    // The same cookie and nonce from another socket (another port on the same address) ...
    await b.send(encodeHello({ protocolHash: config.protocolHash, nonce: 9, cookie }), h.port);
    await until("B's CHALLENGE", () => b.inbox.some((m) => m.type === MSG_CHALLENGE));
    // ... and from another address, through the datagram handler.
    h.server.handleDatagram(encodeHello({ protocolHash: config.protocolHash, nonce: 9, cookie }), '127.0.0.2', (a.s.address() as { port: number }).port);
    // With another nonce from A itself: the cookie is bound to the nonce too.
    await a.send(encodeHello({ protocolHash: config.protocolHash, nonce: 10, cookie }), h.port);
    await until("A's second CHALLENGE", () => a.inbox.filter((m) => m.type === MSG_CHALLENGE).length === 2);
    expect(h.server.counters.badCookies - before.badCookies).toBe(3);
    expect(h.server.counters.connects).toBe(before.connects);
    expect(b.inbox.some((m) => m.type === MSG_WELCOME)).toBe(false);
    expect(h.server.clientCount).toBe(0);
    expect(connects).toBe(0);
    // The cookie still works from where it was issued.
    await a.send(encodeHello({ protocolHash: config.protocolHash, nonce: 9, cookie }), h.port);
    await until("A's WELCOME", () => a.inbox.some((m) => m.type === MSG_WELCOME));
    expect(h.server.clientCount).toBe(1);
    expect(connects).toBe(1);
  });

  it('an expired cookie draws a new CHALLENGE, and the new cookie is taken', async () => {
    const h = await harness({ cookieLifetimeMs: 40 });
    const raw = await rawSocket();
    await raw.send(encodeHello({ protocolHash: config.protocolHash, nonce: 3 }), h.port);
    await until('the CHALLENGE', () => raw.inbox.length === 1);
    const old = (raw.inbox[0] as ChallengeMessage).cookie;
    await new Promise((res) => setTimeout(res, 130)); // past two periods: both secrets replaced
    await raw.send(encodeHello({ protocolHash: config.protocolHash, nonce: 3, cookie: old }), h.port);
    await until('the second CHALLENGE', () => raw.inbox.length === 2);
    expect(raw.inbox[1].type).toBe(MSG_CHALLENGE);
    expect(h.server.counters.badCookies).toBe(1);
    await raw.send(encodeHello({ protocolHash: config.protocolHash, nonce: 3, cookie: (raw.inbox[1] as ChallengeMessage).cookie }), h.port);
    await until('the WELCOME', () => raw.inbox.some((m) => m.type === MSG_WELCOME));
    // A UdpClient gets through with such a short cookie life too: it answers each CHALLENGE at once.
    const c = await client(h);
    expect(h.server.has(c.avatar)).toBe(true);
  });

  it('the connect token reaches onConnect, with the address that proved it receives there', async () => {
    const seen: { key: string; address: string; port: number; token: number[] }[] = [];
    const h = await harness({
      onConnect: (key, request) => {
        seen.push({ key, address: request.address, port: request.port, token: Array.from(request.connectToken) });
        const id = h.world.spawn({ x: 10, y: 10, z: 0 });
        h.world.addViewer(id, { acks: true });
        return id;
      },
    });
    const ticket = Uint8Array.from({ length: 1024 }, (_, i) => (i * 7) & 0xff);
    const a = await client(h);
    const c = new UdpClient();
    const avatar = await c.connect(HOST, h.port, config.protocolHash, { connectToken: ticket });
    expect(h.server.has(avatar) && h.server.has(a.avatar)).toBe(true);
    expect(seen.map((s) => s.token.length)).toEqual([0, 1024]);
    expect(seen[1].token).toEqual(Array.from(ticket));
    expect(seen[1]).toMatchObject({ key: `${HOST}:${c.localPort}`, address: HOST, port: c.localPort });
    await c.close();
    for (const bad of [new Uint8Array(1025), 'ticket', [1, 2]]) {
      const d = new UdpClient();
      await expect(d.connect(HOST, h.port, config.protocolHash, { connectToken: bad as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' });
      expect(d.state).toBe('idle');
    }
    await expect(new UdpClient().connect(HOST, h.port, config.protocolHash, { connectTokn: ticket } as never)).rejects.toMatchObject({
      code: 'ERR_SIGHTLINE_UNKNOWN_OPTION',
    });
  });

  it("the address option is validated: numbers, booleans, symbols, '' and the other family's addresses are refused", () => {
    const onConnect = () => 0;
    for (const address of [42, true, Symbol('x'), '', 'not a host!', '::1', '-bad.example', {}]) {
      expect(() => new UdpServer({ config, onConnect, address } as never), String(address.toString?.())).toThrow(
        expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }),
      );
    }
    expect(() => new UdpServer({ config, onConnect, address: '127.0.0.1', type: 'udp6' })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    for (const address of ['0.0.0.0', '127.0.0.1', 'localhost', 'game.example.com']) {
      expect(() => new UdpServer({ config, onConnect, address }).close()).not.toThrow();
    }
    expect(() => new UdpServer({ config, onConnect, address: '::', type: 'udp6' }).close()).not.toThrow();
    expect(() => new UdpClient({ bindAddress: '' })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
    expect(() => new UdpClient({ bindAddress: 7 as never })).toThrow(expect.objectContaining({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' }));
  });
});

describe('the server checks session messages inline; decodeControl is the slow twin', () => {
  it('on random and mutated datagrams the server drops as malformed exactly what decodeControl rejects (or a server never receives)', () => {
    const seed = 0x5e55;
    const r = rng(seed);
    const sent: Uint8Array[] = [];
    const counters = zeroSessionCounters();
    const host = new SessionHost<Endpoint>('test', { config, onConnect: () => 1 }, counters, (b) => sent.push(b));
    const from = { address: '127.0.0.1', port: 4000 };
    // A session at that address, so that well-formed messages reach the token check.
    host.handle(encodeHello({ protocolHash: config.protocolHash, nonce: 1 }), '127.0.0.1:4000', from);
    const cookie = (decodeControl(sent[0]) as ChallengeMessage).cookie;
    host.handle(encodeHello({ protocolHash: config.protocolHash, nonce: 1, cookie }), '127.0.0.1:4000', from);
    const token = (decodeControl(sent[1]) as WelcomeMessage).token;
    const seeds = [
      encodeAck(token, 0, 0),
      encodeBye(token),
      encodePing(token),
      encodeInput({ token, kind: 0, sequence: 1, payload: Uint8Array.of(1, 2) }),
      encodeHello({ protocolHash: config.protocolHash, nonce: 9 }),
      sent[0],
      sent[1],
    ];
    for (let k = 0; k < 20_000; k++) {
      let b: Uint8Array;
      if (r() < 0.3) {
        b = Uint8Array.from({ length: Math.floor(r() * 40) }, () => Math.floor(r() * 256));
        if (b.length > 0 && r() < 0.7) b[0] = 0xa0 + Math.floor(r() * 9);
      } else {
        const base = seeds[Math.floor(r() * seeds.length)];
        const cut = r() < 0.3 ? Math.floor(r() * (base.length + 2)) : base.length;
        b = new Uint8Array(cut);
        b.set(base.subarray(0, Math.min(cut, base.length)));
        if (r() < 0.5 && b.length > 0) b[Math.floor(r() * b.length)] ^= 1 << Math.floor(r() * 8);
      }
      let expected: boolean;
      try {
        const m = decodeControl(b);
        expected = ![MSG_ACK, MSG_BYE, MSG_PING, MSG_INPUT, MSG_HELLO].includes(m.type);
      } catch {
        expected = true;
      }
      const before = counters.malformed;
      host.handle(b, '127.0.0.1:4000', from);
      const malformed = counters.malformed - before === 1;
      if (malformed !== expected) throw new Error(`seed ${seed}, datagram ${k} (${Buffer.from(b).toString('hex')}): server says malformed ${malformed}, decodeControl ${expected}`);
      // A BYE with the right token ends the session: open it again for the next datagrams.
      if (host.byKey.size === 0) {
        sent.length = 0;
        host.handle(encodeHello({ protocolHash: config.protocolHash, nonce: k + 2 }), '127.0.0.1:4000', from);
        const c = (decodeControl(sent[0]) as ChallengeMessage).cookie;
        host.handle(encodeHello({ protocolHash: config.protocolHash, nonce: k + 2, cookie: c }), '127.0.0.1:4000', from);
        const t = (decodeControl(sent[1]) as WelcomeMessage).token;
        for (let i = 0; i < 4; i++) seeds[i].set(t, 1);
        token.set(t);
      }
    }
    expect(counters.malformed).toBeGreaterThan(1000);
    expect(counters.badTokens).toBeGreaterThan(100);
  });
});

// Spoofing through a raw socket needs CAP_NET_RAW: the test runs where the tests run as root.
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const python = spawnSync('python3', ['-c', 'import socket'], { encoding: 'utf8' }).status === 0;

/**
 * Sends UDP datagrams with a forged source through a raw IPv4 socket (python3, IP_HDRINCL), from
 * a child process that does not block this one (the server and the victim keep running).
 */
function spoof(fromPort: number, toPort: number, ...payloads: Uint8Array[]): Promise<void> {
  const script = `
import socket, struct, sys
src, sport, dport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for hexdata in sys.argv[4:]:
    data = bytes.fromhex(hexdata)
    udp = struct.pack('!HHHH', sport, dport, 8 + len(data), 0) + data
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, socket.inet_aton(src), socket.inet_aton('127.0.0.1'))
    s.sendto(ip + udp, ('127.0.0.1', 0))
`;
  const hex = payloads.map((p) => Buffer.from(p).toString('hex'));
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', script, HOST, String(fromPort), String(toPort), ...hex], (err, _out, stderr) => (err ? reject(new Error(`raw send failed: ${stderr}`)) : resolve()));
  });
}

describe.runIf(isRoot && python)('spoofing through a raw socket (root)', () => {
  it("datagrams with the victim's source address and port but not its token are dropped; with its token one would act", async () => {
    const h = await harness();
    const victim = await client(h);
    for (let t = 0; t < 5; t++) {
      await h.tick();
      await caughtUp(h, victim.c, victim.avatar);
    }
    const before = { ...h.server.counters };
    const r = rng(8);
    await spoof(
      victim.c.localPort,
      h.port,
      encodeBye(randomToken(r)),
      encodePing(randomToken(r)),
      encodeAck(randomToken(r), 0, 0),
      Uint8Array.of(0xa4, 0), // the old 2-byte BYE
    );
    // The victim's own ACKs arrive too: wait for what the spoofed datagrams are counted as.
    await until(
      'the spoofed datagrams',
      () => h.server.counters.badTokens - before.badTokens >= 3 && h.server.counters.malformed - before.malformed >= 1,
      10_000,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(h.server.counters.badTokens - before.badTokens).toBe(3);
    expect(h.server.counters.malformed - before.malformed).toBe(1);
    expect(h.events).toEqual([]);
    for (let t = 0; t < 5; t++) {
      await h.tick();
      await caughtUp(h, victim.c, victim.avatar);
    }
    expect(mismatches(h.world, victim.avatar, victim.c.world)).toEqual([]);
    // The control: the same path with the session's real token ends the session, so the spoof
    // did reach the server as the victim, and only the token stood in its way.
    await spoof(victim.c.localPort, h.port, encodeBye(victim.c.welcome!.token));
    await until('the BYE', () => h.events.length === 1);
    expect(h.events).toEqual([`${victim.avatar} bye`]);
  });
});
