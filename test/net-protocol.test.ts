import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorldConfig } from '../lib/config.js';
import { SightlineError } from '../lib/errors.js';
import { cookieFor, CookieJar } from '../lib/net/cookie.js';
import {
  ACK_BYTES,
  BYE_BYTES,
  ByeReason,
  CHALLENGE_BYTES,
  CONNECT_TOKEN_MAX_BYTES,
  HELLO_MAX_BYTES,
  HELLO_MIN_BYTES,
  INPUT_HEADER_BYTES,
  INPUT_MAX_BYTES,
  MAX_CLIENT_MESSAGE_BYTES,
  MSG_ACK,
  MSG_BYE,
  MSG_CHALLENGE,
  MSG_HELLO,
  MSG_INPUT,
  MSG_PING,
  MSG_REFUSE,
  MSG_WELCOME,
  PING_BYTES,
  REFUSE_HEADER_BYTES,
  REFUSE_TEXT_MAX_BYTES,
  RefuseCode,
  WELCOME_BYTES,
  datagramKind,
  decodeControl,
  encodeAck,
  encodeBye,
  encodeChallenge,
  encodeHello,
  encodeInput,
  encodePing,
  encodeRefuse,
  encodeWelcome,
  helloBytes,
  layoutOf,
  refuseError,
  welcomeCarriesLayout,
  type WelcomeMessage,
} from '../lib/net/protocol.js';
import { rng } from './helpers/model.js';

const config = WorldConfig.build();
const big = WorldConfig.build({ regionSize: 65536, viewRadius: 256 });
const token = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
const cookie = Uint8Array.from({ length: 16 }, (_, i) => 0x10 + i);
const here = dirname(fileURLToPath(import.meta.url));

interface Vector {
  name: string;
  bytes: number;
  hex: string;
  decoded: Record<string, unknown>;
}
const vectors = JSON.parse(readFileSync(join(here, 'vectors', 'control.json'), 'utf8')) as {
  messages: Vector[];
  cookies: { secret: string; address: string; port: number; nonce: number; protocolHash: number; cookie: string }[];
};

function welcomeFor(c: WorldConfig, avatar = 77) {
  return {
    nonce: 0xdeadbeef,
    token,
    avatar,
    protocolHash: c.protocolHash,
    regionRaw: c.regionRaw,
    verticalRaw: c.verticalRaw,
    quantShift: c.quantShift,
    payloadBytes: c.payloadBytes,
    tickMicros: 50_000,
    maxInputBytes: 256,
  };
}

function every(): Uint8Array[] {
  return [
    encodeHello({ protocolHash: config.protocolHash, nonce: 12345 }),
    encodeHello({ protocolHash: config.protocolHash, nonce: 12345, cookie, connectToken: new Uint8Array(300).fill(7) }),
    encodeChallenge({ nonce: 5, cookie }),
    encodeWelcome(welcomeFor(config)),
    encodeRefuse({ nonce: 9, code: RefuseCode.SERVER_FULL, detail: 4096, text: 'server full' }),
    encodeAck(token, 65535, 0xffffffff),
    encodeBye(token, ByeReason.TIMEOUT),
    encodePing(token),
    encodeInput({ token, kind: 1, sequence: 3, payload: Uint8Array.of(1, 2, 3) }),
  ];
}

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SightlineError);
    return (e as SightlineError).code;
  }
  return undefined;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
// Byte arrays as plain arrays (a Node Buffer's toJSON runs before a replacer sees it).
const plain = (m: object) =>
  JSON.parse(
    JSON.stringify(m, (_k, v: unknown) =>
      v instanceof Uint8Array ? Array.from(v) : (v as { type?: unknown })?.type === 'Buffer' ? (v as { data: number[] }).data : v,
    ),
  ) as unknown;

describe('control messages: the documented test vectors', () => {
  it('each vector (generated from docs/control-messages.md alone) is what the encoder writes and decodes to its fields', () => {
    const t = (v: Vector) => Uint8Array.from(v.decoded.token as number[]);
    const encoders: Record<string, (v: Vector) => Uint8Array> = {
      hello: () => encodeHello({ protocolHash: 0xdf87a786, nonce: 0x01020304 }),
      'hello-cookie-token': () => encodeHello({ protocolHash: 0xdf87a786, nonce: 0x01020304, cookie, connectToken: new TextEncoder().encode('tok!') }),
      'hello-long-token': () => encodeHello({ protocolHash: 0xdf87a786, nonce: 7, cookie, connectToken: Uint8Array.from({ length: 200 }, (_, i) => i) }),
      challenge: () => encodeChallenge({ nonce: 0x01020304, cookie }),
      welcome: (v) => encodeWelcome({ ...(v.decoded as ReturnType<typeof welcomeFor>), token: t(v) }),
      refuse: () => encodeRefuse({ nonce: 9, code: RefuseCode.SERVER_FULL, detail: 4096, text: 'server full' }),
      ack: (v) => encodeAck(t(v), 0x1234, 0xa1b2c3d4),
      bye: (v) => encodeBye(t(v), ByeReason.TIMEOUT),
      ping: (v) => encodePing(t(v)),
      'input-reliable': (v) => encodeInput({ token: t(v), kind: 1, sequence: 7, payload: new TextEncoder().encode('hi') }),
      'input-unreliable-empty': (v) => encodeInput({ token: t(v), kind: 0, sequence: 65535, payload: new Uint8Array(0) }),
    };
    expect(vectors.messages.map((v) => v.name).sort()).toEqual(Object.keys(encoders).sort());
    const doc = readFileSync(join(here, '..', 'docs', 'control-messages.md'), 'utf8').replace(/\s+/g, '');
    for (const v of vectors.messages) {
      const b = encoders[v.name](v);
      expect(hex(b), v.name).toBe(v.hex);
      expect(b.length).toBe(v.bytes);
      expect(plain(decodeControl(b)), v.name).toEqual(v.decoded);
      // The document shows every vector in full (at most 64 bytes a vector there; longer ones by their start).
      expect(doc, `docs/control-messages.md shows the ${v.name} vector`).toContain(v.hex.slice(0, 128));
    }
  });

  it('cookies are the HMAC the document defines', () => {
    for (const c of vectors.cookies) {
      expect(hex(cookieFor(Buffer.from(c.secret, 'hex'), c.address, c.port, c.nonce, c.protocolHash))).toBe(c.cookie);
    }
  });
});

describe('control messages: round trips', () => {
  it('HELLO: padded to 128 bytes, longer with a long connect token, a zero cookie reads as none', () => {
    const b = encodeHello({ protocolHash: 0xdf87a786, nonce: 0xffffffff });
    expect(b.length).toBe(HELLO_MIN_BYTES);
    expect(decodeControl(b)).toEqual({
      type: MSG_HELLO,
      netVersion: 2,
      version: 2,
      protocolHash: 0xdf87a786,
      nonce: 0xffffffff,
      cookie: null,
      connectToken: new Uint8Array(0),
    });
    for (const n of [0, 1, 95, 96, 97, 500, CONNECT_TOKEN_MAX_BYTES]) {
      const t = Uint8Array.from({ length: n }, (_, i) => (i * 31 + 1) & 0xff);
      const h = encodeHello({ protocolHash: 1, nonce: 2, cookie, connectToken: t, version: 7 });
      expect(h.length).toBe(helloBytes(n));
      expect(h.length).toBe(Math.max(128, 33 + n));
      expect(decodeControl(h)).toMatchObject({ version: 7, cookie, connectToken: t });
    }
    expect(helloBytes(CONNECT_TOKEN_MAX_BYTES)).toBe(HELLO_MAX_BYTES);
    expect(MAX_CLIENT_MESSAGE_BYTES).toBe(HELLO_MAX_BYTES);
  });

  it('no answer to an unverified address is longer than the shortest HELLO', () => {
    expect(CHALLENGE_BYTES).toBeLessThanOrEqual(HELLO_MIN_BYTES);
    expect(WELCOME_BYTES).toBeLessThanOrEqual(HELLO_MIN_BYTES);
    expect(REFUSE_HEADER_BYTES + REFUSE_TEXT_MAX_BYTES).toBe(HELLO_MIN_BYTES);
  });

  it('WELCOME, at the default and a quantized layout', () => {
    for (const c of [config, big]) {
      const fields = welcomeFor(c, 0xfffff);
      const b = encodeWelcome(fields);
      expect(b.length).toBe(WELCOME_BYTES);
      const m = decodeControl(b);
      expect(m).toEqual({ type: MSG_WELCOME, ...fields });
      expect(layoutOf(m as typeof fields)).toEqual({
        regionRaw: c.regionRaw,
        regionShift: c.regionShift,
        verticalRaw: c.verticalRaw,
        zBits: c.zBits,
        quantShift: c.quantShift,
      });
    }
    expect(big.quantShift).toBeGreaterThan(0);
  });

  it('REFUSE, with ASCII, multi-byte and over-long text', () => {
    const m = decodeControl(encodeRefuse({ nonce: 1, code: RefuseCode.PROTOCOL_HASH, detail: 0xdf87a786, text: 'protocol hash mismatch' }));
    expect(m).toEqual({ type: MSG_REFUSE, nonce: 1, code: 2, detail: 0xdf87a786, text: 'protocol hash mismatch' });
    expect(decodeControl(encodeRefuse({ nonce: 2, code: 200, text: '' }))).toEqual({ type: MSG_REFUSE, nonce: 2, code: 200, detail: 0, text: '' });
    const accents = 'é'.repeat(100); // 200 UTF-8 bytes: cut at a character boundary
    const long = encodeRefuse({ nonce: 3, code: RefuseCode.REJECTED, text: accents });
    expect(long.length).toBeLessThanOrEqual(HELLO_MIN_BYTES);
    expect((decodeControl(long) as { text: string }).text).toBe('é'.repeat(Math.floor(REFUSE_TEXT_MAX_BYTES / 2)));
  });

  it('ACK, BYE, PING, CHALLENGE and INPUT carry what they were given', () => {
    expect(decodeControl(encodeAck(token, 0, 0))).toEqual({ type: MSG_ACK, token, ack: 0, ackBits: 0 });
    expect(decodeControl(encodeAck(token, 65535, 0x80000001))).toEqual({ type: MSG_ACK, token, ack: 65535, ackBits: 0x80000001 });
    const out = new Uint8Array(32);
    expect(encodeAck(token, 5, 6, out)).toBe(out);
    expect(decodeControl(encodeBye(token))).toEqual({ type: MSG_BYE, token, reason: ByeReason.CLOSED });
    expect(decodeControl(encodeBye(token, ByeReason.REPLACED))).toEqual({ type: MSG_BYE, token, reason: 4 });
    expect(decodeControl(encodePing(token))).toEqual({ type: MSG_PING, token });
    expect(decodeControl(encodeChallenge({ nonce: 0xffffffff, cookie }))).toEqual({ type: MSG_CHALLENGE, nonce: 0xffffffff, cookie });
    for (const n of [0, 1, INPUT_MAX_BYTES]) {
      const payload = Uint8Array.from({ length: n }, (_, i) => i & 0xff);
      const b = encodeInput({ token, kind: 0, sequence: 65535, payload });
      expect(b.length).toBe(INPUT_HEADER_BYTES + n);
      expect(decodeControl(b)).toEqual({ type: MSG_INPUT, token, kind: 0, sequence: 65535, payload });
    }
    expect([ACK_BYTES, BYE_BYTES, PING_BYTES]).toEqual([15, 10, 9]);
  });

  it('a Node Buffer decodes like a Uint8Array', () => {
    for (const b of every()) expect(plain(decodeControl(Buffer.from(b)))).toEqual(plain(decodeControl(b)));
  });

  it('datagramKind tells game packets from control messages', () => {
    expect(datagramKind(Uint8Array.of(2, 0))).toBe('game');
    expect(datagramKind(Uint8Array.of(1, 0))).toBe('unknown');  // a version 1 packet is not one of ours
    for (const b of every()) expect(datagramKind(b)).toBe('control');
    expect(datagramKind(Uint8Array.of(0xaf))).toBe('control');
    expect(datagramKind(Uint8Array.of(0xb0))).toBe('unknown');
    expect(datagramKind(Uint8Array.of(0))).toBe('unknown');
    expect(datagramKind(new Uint8Array(0))).toBe('unknown');
  });

  it('refuseError maps refuse codes to error codes and names both hashes', () => {
    const e = refuseError({ type: MSG_REFUSE, nonce: 0, code: RefuseCode.PROTOCOL_HASH, detail: 0xdf87a786, text: 'protocol hash mismatch' }, 0x12345678);
    expect(e.code).toBe('ERR_SIGHTLINE_NET_REFUSED_PROTOCOL_HASH');
    expect(e.message).toContain('0xdf87a786');
    expect(e.message).toContain('0x12345678');
    // A server's text that names them already (a sightline server's) is not repeated.
    const named = refuseError({ type: MSG_REFUSE, nonce: 0, code: RefuseCode.PROTOCOL_HASH, detail: 0xdf87a786, text: 'protocol hash mismatch: server 0xdf87a786, client 0x12345678' }, 0x12345678);
    expect(named.message.split('0x12345678').length).toBe(2);
    expect(refuseError({ type: MSG_REFUSE, nonce: 0, code: RefuseCode.SERVER_FULL, detail: 1, text: 'full' }).code).toBe('ERR_SIGHTLINE_NET_REFUSED_SERVER_FULL');
    expect(refuseError({ type: MSG_REFUSE, nonce: 0, code: RefuseCode.NET_VERSION, detail: 2, text: 'old' }).code).toBe('ERR_SIGHTLINE_NET_REFUSED_NET_VERSION');
    expect(refuseError({ type: MSG_REFUSE, nonce: 0, code: 99, detail: 0, text: '?' }).code).toBe('ERR_SIGHTLINE_NET_REFUSED');
  });
});

describe('control messages: strict decoding', () => {
  it('every proper prefix of every message is refused as truncated', () => {
    for (const b of every()) {
      for (let n = 0; n < b.length; n++) {
        const c = code(() => decodeControl(b.slice(0, n)));
        // An INPUT's payload may be any length: a prefix past its header is a shorter, valid input.
        if (b[0] === MSG_INPUT && n >= INPUT_HEADER_BYTES) expect(c).toBeUndefined();
        else expect(c, `${b[0].toString(16)} cut to ${n} bytes`).toBe('ERR_SIGHTLINE_NET_TRUNCATED');
      }
    }
  });

  it('a trailing byte is refused as oversized, and so is a payload or connect token over 1,024 bytes', () => {
    for (const b of every()) {
      if (b[0] === MSG_INPUT) continue;
      const longer = new Uint8Array(b.length + 1);
      longer.set(b);
      expect(code(() => decodeControl(longer)), `type 0x${b[0].toString(16)}`).toBe('ERR_SIGHTLINE_NET_OVERSIZED');
    }
    const input = new Uint8Array(INPUT_HEADER_BYTES + INPUT_MAX_BYTES + 1);
    input.set(encodeInput({ token, kind: 0, sequence: 0, payload: new Uint8Array(0) }));
    expect(code(() => decodeControl(input))).toBe('ERR_SIGHTLINE_NET_OVERSIZED');
    const hello = new Uint8Array(33 + CONNECT_TOKEN_MAX_BYTES + 1);
    hello.set(encodeHello({ protocolHash: 1, nonce: 1 }).subarray(0, 31));
    hello[31] = (CONNECT_TOKEN_MAX_BYTES + 1) & 0xff;
    hello[32] = (CONNECT_TOKEN_MAX_BYTES + 1) >> 8;
    expect(code(() => decodeControl(hello))).toBe('ERR_SIGHTLINE_NET_OVERSIZED');
  });

  it('bad magic, nonzero padding, unknown types and input kinds, bad REFUSE text, impossible WELCOME layouts', () => {
    const hello = encodeHello({ protocolHash: 1, nonce: 2 });
    for (let i = 1; i <= 4; i++) {
      const bad = hello.slice();
      bad[i] ^= 0x20;
      expect(code(() => decodeControl(bad))).toBe('ERR_SIGHTLINE_NET_BAD_MAGIC');
    }
    const padded = hello.slice();
    padded[HELLO_MIN_BYTES - 1] = 1;
    expect(code(() => decodeControl(padded))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
    // A token length that disagrees with the datagram: a 128-byte HELLO saying 100 bytes of token.
    const lying = hello.slice();
    lying[31] = 100;
    expect(code(() => decodeControl(lying))).toBe('ERR_SIGHTLINE_NET_TRUNCATED');

    for (const t of [0x00, 0x01, 0x02, 0x9f, 0xa8, 0xaf, 0xb0, 0xff]) {
      expect(code(() => decodeControl(Uint8Array.of(t, 0, 0, 0, 0, 0, 0)))).toBe('ERR_SIGHTLINE_NET_UNKNOWN_TYPE');
    }
    for (const kind of [2, 3, 255]) {
      const b = encodeInput({ token, kind: 0, sequence: 0, payload: Uint8Array.of(1) });
      b[9] = kind;
      expect(code(() => decodeControl(b))).toBe('ERR_SIGHTLINE_NET_INPUT_KIND');
    }

    const refuse = encodeRefuse({ nonce: 1, code: 1, text: 'ab' });
    const badUtf8 = refuse.slice();
    badUtf8[REFUSE_HEADER_BYTES] = 0xff;
    expect(code(() => decodeControl(badUtf8))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
    const tooLong = new Uint8Array(REFUSE_HEADER_BYTES + 200);
    tooLong[0] = MSG_REFUSE;
    tooLong[10] = 200;
    expect(code(() => decodeControl(tooLong))).toBe('ERR_SIGHTLINE_NET_MALFORMED');

    const w = encodeWelcome(welcomeFor(config));
    // A hash the position layout does not give is a server with fields or attributes (the WELCOME
    // does not carry them): it decodes, and says its layout is not the whole story.
    const otherHash = w.slice();
    otherHash[17] ^= 1;
    expect(welcomeCarriesLayout(decodeControl(w) as WelcomeMessage)).toBe(true);
    expect(welcomeCarriesLayout(decodeControl(otherHash) as WelcomeMessage)).toBe(false);
    const notPow2 = w.slice();
    notPow2[21] = 1; // regionRaw 2^22 + 1
    expect(code(() => decodeControl(notPow2))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
    const wrongQ = w.slice();
    wrongQ[29] = 3;
    expect(code(() => decodeControl(wrongQ))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
    const bigInput = w.slice();
    bigInput[36] = 0x01;
    bigInput[37] = 0x04; // 1025
    expect(code(() => decodeControl(bigInput))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
  });

  it('non-bytes are refused with a code', () => {
    expect(code(() => decodeControl('hello' as unknown as Uint8Array))).toBe('ERR_SIGHTLINE_NET_NOT_BYTES');
    expect(code(() => decodeControl(new Uint16Array(4) as unknown as Uint8Array))).toBe('ERR_SIGHTLINE_NET_NOT_BYTES');
  });

  it('random bytes either decode or throw a coded error, never anything else', () => {
    const r = rng(42);
    const types = [MSG_HELLO, MSG_WELCOME, MSG_REFUSE, MSG_ACK, MSG_BYE, MSG_PING, MSG_CHALLENGE, MSG_INPUT, 0xa8, 0x01, 0x37];
    for (let k = 0; k < 20_000; k++) {
      const len = Math.floor(r() * 300);
      const b = new Uint8Array(len);
      for (let i = 0; i < len; i++) b[i] = Math.floor(r() * 256);
      if (len > 0 && r() < 0.8) b[0] = types[Math.floor(r() * types.length)];
      if (len >= 5 && b[0] === MSG_HELLO && r() < 0.5) b.set([0x53, 0x4c, 0x54, 0x4e], 1);
      try {
        decodeControl(b);
      } catch (e) {
        expect(e).toBeInstanceOf(SightlineError);
        expect((e as SightlineError).code).toMatch(/^ERR_SIGHTLINE_NET_/);
      }
    }
  });

  it('encoders check their arguments', () => {
    expect(code(() => encodeHello({ protocolHash: -1, nonce: 0 }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeHello({ protocolHash: 0, nonce: 2 ** 32 }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeHello({ protocolHash: 0, nonce: 0, cookie: new Uint8Array(15) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeHello({ protocolHash: 0, nonce: 0, connectToken: new Uint8Array(CONNECT_TOKEN_MAX_BYTES + 1) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeHello({ protocolHash: 0, nonce: 0, connectToken: 'abc' as never }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    // Tokens of the wrong size.
    for (const t of [new Uint8Array(7), new Uint8Array(9), new Uint8Array(0), 'abcdefgh', [1, 2, 3, 4, 5, 6, 7, 8]]) {
      expect(code(() => encodeAck(t as never, 0, 0))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      expect(code(() => encodeBye(t as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      expect(code(() => encodePing(t as never))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      expect(code(() => encodeInput({ token: t as never, kind: 0, sequence: 0, payload: new Uint8Array(1) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      expect(code(() => encodeWelcome({ ...welcomeFor(config), token: t as never }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    }
    expect(code(() => encodeAck(token, 65536, 0))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeAck(token, 0, 1.5))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeAck(token, 0, 0, new Uint8Array(ACK_BYTES - 1)))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeBye(token, 256))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeInput({ token, kind: 2, sequence: 0, payload: new Uint8Array(1) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeInput({ token, kind: 0, sequence: 65536, payload: new Uint8Array(1) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeInput({ token, kind: 0, sequence: 0, payload: new Uint8Array(INPUT_MAX_BYTES + 1) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeChallenge({ nonce: 0, cookie: new Uint8Array(8) }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeRefuse({ nonce: 0, code: 1, text: 5 as unknown as string }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(welcomeCarriesLayout(decodeControl(encodeWelcome({ ...welcomeFor(config), protocolHash: 1 })) as WelcomeMessage)).toBe(false);
    expect(code(() => encodeWelcome({ ...welcomeFor(config), maxInputBytes: INPUT_MAX_BYTES + 1 }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    // Not an object at all: coded, not a TypeError.
    for (const bad of [null, undefined, 5]) {
      for (const f of [encodeHello, encodeWelcome, encodeRefuse, encodeChallenge, encodeInput, layoutOf, refuseError]) {
        expect(code(() => (f as (x: unknown) => unknown)(bad))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      }
    }
  });
});

describe('cookies', () => {
  it('a cookie verifies for its own address, port, nonce and hash only, and lives one to two rotation periods', () => {
    const jar = new CookieJar(1000, 0);
    const c = jar.issue('127.0.0.1', 5000, 7, 99, 0);
    expect(jar.verify(c, '127.0.0.1', 5000, 7, 99, 10)).toBe(true);
    expect(jar.verify(c, '127.0.0.2', 5000, 7, 99, 10)).toBe(false);
    expect(jar.verify(c, '127.0.0.1', 5001, 7, 99, 10)).toBe(false);
    expect(jar.verify(c, '127.0.0.1', 5000, 8, 99, 10)).toBe(false);
    expect(jar.verify(c, '127.0.0.1', 5000, 7, 98, 10)).toBe(false);
    const flipped = c.slice();
    flipped[15] ^= 1;
    expect(jar.verify(flipped, '127.0.0.1', 5000, 7, 99, 10)).toBe(false);
    expect(jar.verify(c.subarray(0, 15), '127.0.0.1', 5000, 7, 99, 10)).toBe(false);
    expect(jar.verify(c, '127.0.0.1', 5000, 7, 99, 1500)).toBe(true); // one rotation: the previous secret
    expect(jar.verify(c, '127.0.0.1', 5000, 7, 99, 2100)).toBe(false); // two: gone
    const late = new CookieJar(1000, 0);
    const d = late.issue('::1', 1, 2, 3, 0);
    expect(late.verify(d, '::1', 1, 2, 3, 2500)).toBe(false); // two periods without a HELLO: both secrets new
  });
});

describe('browser safety', () => {
  it('the protocol, the client session, the client world and its extrapolation, input, the link and the transport interface import nothing from Node', () => {
    const browserSafe = [
      'protocol.ts', 'control-types.ts', 'control-encode.ts', 'control-decode.ts', 'control-layout.ts', 'bytes.ts', 'options.ts',
      'client-world.ts', 'extrapolate.ts', 'client-session.ts', 'client-session-types.ts', 'input.ts', 'lossy-link.ts', 'transport.ts', 'ws-client.ts', 'browser.ts',
    ];
    for (const f of browserSafe) {
      const src = readFileSync(join(here, '..', 'lib', 'net', f), 'utf8');
      const imports = [...src.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gm)];
      for (const m of imports) {
        const typeOnly = m[2] !== undefined;
        const target = m[3];
        expect(target.startsWith('node:'), `${f} imports ${target}`).toBe(false);
        if (!typeOnly) {
          expect(target.startsWith('./') || ['../config.js', '../wire.js', '../decode.js', '../errors.js', '../fixed.js', '../random.js'].includes(target), `${f} imports ${target}`).toBe(true);
          expect(browserSafe.map((x) => `./${x.replace(/\.ts$/, '.js')}`).concat(['../config.js', '../wire.js', '../decode.js', '../errors.js', '../fixed.js', '../random.js']), `${f} imports ${target}`).toContain(target);
        }
      }
    }
  });
});
