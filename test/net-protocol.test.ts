import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorldConfig } from '../lib/config.js';
import { SightlineError } from '../lib/errors.js';
import {
  ACK_BYTES,
  BYE_BYTES,
  ByeReason,
  HELLO_BYTES,
  MSG_ACK,
  MSG_BYE,
  MSG_HELLO,
  MSG_PING,
  MSG_REFUSE,
  MSG_WELCOME,
  REFUSE_HEADER_BYTES,
  REFUSE_TEXT_MAX_BYTES,
  RefuseCode,
  WELCOME_BYTES,
  datagramKind,
  decodeControl,
  encodeAck,
  encodeBye,
  encodeHello,
  encodePing,
  encodeRefuse,
  encodeWelcome,
  layoutOf,
  refuseError,
} from '../lib/net/protocol.js';
import { rng } from './helpers/model.js';

const config = WorldConfig.build();
const big = WorldConfig.build({ regionSize: 65536, viewRadius: 256 });

function welcomeFor(c: WorldConfig, avatar = 77) {
  return {
    nonce: 0xdeadbeef,
    avatar,
    protocolHash: c.protocolHash,
    regionRaw: c.regionRaw,
    verticalRaw: c.verticalRaw,
    quantShift: c.quantShift,
    payloadBytes: c.payloadBytes,
    tickMicros: 50_000,
  };
}

function every(): Uint8Array[] {
  return [
    encodeHello({ protocolHash: config.protocolHash, nonce: 12345 }),
    encodeWelcome(welcomeFor(config)),
    encodeRefuse({ nonce: 9, code: RefuseCode.SERVER_FULL, detail: 4096, text: 'server full' }),
    encodeAck(65535, 0xffffffff),
    encodeBye(ByeReason.TIMEOUT),
    encodePing(),
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

describe('control messages: round trips', () => {
  it('HELLO', () => {
    const b = encodeHello({ protocolHash: 0xdf87a786, nonce: 0xffffffff });
    expect(b.length).toBe(HELLO_BYTES);
    expect(Array.from(b.subarray(0, 14))).toEqual([0xa0, 0x53, 0x4c, 0x54, 0x4e, 2, 0x86, 0xa7, 0x87, 0xdf, 0xff, 0xff, 0xff, 0xff]);
    expect(b.subarray(14).every((x) => x === 0)).toBe(true);
    expect(decodeControl(b)).toEqual({ type: MSG_HELLO, version: 2, protocolHash: 0xdf87a786, nonce: 0xffffffff });
    expect(decodeControl(encodeHello({ protocolHash: 0, nonce: 0, version: 7 }))).toEqual({ type: MSG_HELLO, version: 7, protocolHash: 0, nonce: 0 });
  });

  it('WELCOME, at the default and a quantized layout', () => {
    for (const c of [config, big]) {
      const fields = welcomeFor(c, 0xfffff);
      const b = encodeWelcome(fields);
      expect(b.length).toBe(WELCOME_BYTES);
      const m = decodeControl(b);
      expect(m).toEqual({ type: MSG_WELCOME, ...fields });
      const layout = layoutOf(m as typeof fields);
      expect(layout).toEqual({
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
    expect(long.length).toBeLessThanOrEqual(HELLO_BYTES);
    const text = (decodeControl(long) as { text: string }).text;
    expect(text).toBe('é'.repeat(Math.floor(REFUSE_TEXT_MAX_BYTES / 2)));
  });

  it('ACK, BYE, PING', () => {
    expect(decodeControl(encodeAck(0, 0))).toEqual({ type: MSG_ACK, ack: 0, ackBits: 0 });
    expect(decodeControl(encodeAck(65535, 0x80000001))).toEqual({ type: MSG_ACK, ack: 65535, ackBits: 0x80000001 });
    expect(Array.from(encodeAck(0x1234, 0xa1b2c3d4))).toEqual([0xa3, 0x34, 0x12, 0xd4, 0xc3, 0xb2, 0xa1]);
    const out = new Uint8Array(16);
    expect(encodeAck(5, 6, out)).toBe(out);
    expect(decodeControl(encodeBye())).toEqual({ type: MSG_BYE, reason: ByeReason.CLOSED });
    expect(decodeControl(encodeBye(ByeReason.REPLACED))).toEqual({ type: MSG_BYE, reason: 4 });
    expect(decodeControl(encodePing())).toEqual({ type: MSG_PING });
  });

  it('a Node Buffer decodes like a Uint8Array', () => {
    for (const b of every()) expect(decodeControl(Buffer.from(b))).toEqual(decodeControl(b));
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
    expect(refuseError({ type: MSG_REFUSE, nonce: 0, code: 99, detail: 0, text: '?' }).code).toBe('ERR_SIGHTLINE_NET_REFUSED');
  });
});

describe('control messages: strict decoding', () => {
  it('every proper prefix of every message is refused as truncated', () => {
    for (const b of every()) {
      for (let n = 0; n < b.length; n++) {
        const c = code(() => decodeControl(b.slice(0, n)));
        // A REFUSE cut inside its text is shorter than its text length says.
        expect(c, `${b[0].toString(16)} cut to ${n} bytes`).toBe('ERR_SIGHTLINE_NET_TRUNCATED');
      }
    }
  });

  it('a trailing byte is refused as oversized', () => {
    for (const b of every()) {
      const longer = new Uint8Array(b.length + 1);
      longer.set(b);
      expect(code(() => decodeControl(longer)), `type 0x${b[0].toString(16)}`).toBe('ERR_SIGHTLINE_NET_OVERSIZED');
    }
  });

  it('bad magic, nonzero padding, unknown types, bad REFUSE text, impossible WELCOME layouts', () => {
    const hello = encodeHello({ protocolHash: 1, nonce: 2 });
    for (let i = 1; i <= 4; i++) {
      const bad = hello.slice();
      bad[i] ^= 0x20;
      expect(code(() => decodeControl(bad))).toBe('ERR_SIGHTLINE_NET_BAD_MAGIC');
    }
    const padded = hello.slice();
    padded[HELLO_BYTES - 1] = 1;
    expect(code(() => decodeControl(padded))).toBe('ERR_SIGHTLINE_NET_MALFORMED');

    for (const t of [0x00, 0x01, 0x02, 0x9f, 0xa6, 0xaf, 0xb0, 0xff]) {
      expect(code(() => decodeControl(Uint8Array.of(t, 0, 0, 0, 0, 0, 0)))).toBe('ERR_SIGHTLINE_NET_UNKNOWN_TYPE');
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
    const wrongHash = w.slice();
    wrongHash[9] ^= 1;
    expect(code(() => decodeControl(wrongHash))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
    const notPow2 = w.slice();
    notPow2[13] = 1; // regionRaw 2^22 + 1
    expect(code(() => decodeControl(notPow2))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
    const wrongQ = w.slice();
    wrongQ[21] = 3;
    expect(code(() => decodeControl(wrongQ))).toBe('ERR_SIGHTLINE_NET_MALFORMED');
  });

  it('non-bytes are refused with a code', () => {
    expect(code(() => decodeControl('hello' as unknown as Uint8Array))).toBe('ERR_SIGHTLINE_NET_NOT_BYTES');
    expect(code(() => decodeControl(new Uint16Array(4) as unknown as Uint8Array))).toBe('ERR_SIGHTLINE_NET_NOT_BYTES');
  });

  it('random bytes either decode or throw a coded error, never anything else', () => {
    const r = rng(42);
    const types = [MSG_HELLO, MSG_WELCOME, MSG_REFUSE, MSG_ACK, MSG_BYE, MSG_PING, 0xa7, 0x01, 0x37];
    for (let k = 0; k < 20_000; k++) {
      const len = Math.floor(r() * 140);
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
    expect(code(() => encodeAck(65536, 0))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeAck(0, 1.5))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeAck(0, 0, new Uint8Array(ACK_BYTES - 1)))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeBye(256))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeRefuse({ nonce: 0, code: 1, text: 5 as unknown as string }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    expect(code(() => encodeWelcome({ ...welcomeFor(config), protocolHash: 1 }))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
    // Not an object at all: coded, not a TypeError.
    for (const bad of [null, undefined, 5]) {
      for (const f of [encodeHello, encodeWelcome, encodeRefuse, layoutOf, refuseError]) {
        expect(code(() => (f as (x: unknown) => unknown)(bad))).toBe('ERR_SIGHTLINE_INVALID_ARGUMENT');
      }
      expect(code(() => datagramKind(bad as never))).toBe('ERR_SIGHTLINE_NET_NOT_BYTES');
    }
    expect(BYE_BYTES).toBe(2);
  });
});

describe('browser safety', () => {
  it('the protocol, the client world, the link and the transport interface import nothing from Node', () => {
    const here = dirname(fileURLToPath(import.meta.url));
    for (const f of ['protocol.ts', 'client-world.ts', 'lossy-link.ts', 'transport.ts', 'browser.ts']) {
      const src = readFileSync(join(here, '..', 'lib', 'net', f), 'utf8');
      const imports = [...src.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gm)];
      for (const m of imports) {
        const typeOnly = m[2] !== undefined;
        const target = m[3];
        expect(target.startsWith('node:'), `${f} imports ${target}`).toBe(false);
        if (!typeOnly) {
          expect(['../world.js', '../binding.js', './udp-server.js', './udp-client.js', './udp-common.js'], `${f} imports ${target}`).not.toContain(target);
        }
      }
    }
  });
});
