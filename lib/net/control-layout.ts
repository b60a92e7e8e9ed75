// What a WELCOME's layout means for a decoder, and the error a REFUSE becomes on the client.
// Browser-safe: imports nothing from Node.

import { protocolHash } from '../wire.js';
import type { PacketLayoutConfig } from '../decode.js';
import { SightlineError } from '../errors.js';
import { checkFields, hex32 } from './bytes.js';
import { REFUSE_ERROR_CODES, RefuseCode, type RefuseMessage, type WelcomeMessage } from './control-types.js';

/**
 * @internal Why a WELCOME's layout is impossible; undefined when it is sound. Its protocol hash is
 * checked by the client against its own (the hash also covers the fields and attributes, which a
 * WELCOME does not carry: {@link welcomeCarriesLayout}).
 */
export function layoutProblem(hash: number, regionRaw: number, verticalRaw: number, quantShift: number): string | undefined {
  if (regionRaw < 1024 || regionRaw > 2 ** 26 || (regionRaw & (regionRaw - 1)) !== 0)
    return `regionRaw must be a power of two from 1024 to 2^26, received ${regionRaw}`;
  if (verticalRaw < 2 || verticalRaw > 2 ** 26) return `verticalRaw must be from 2 to 2^26, received ${verticalRaw}`;
  const regionShift = 31 - Math.clz32(regionRaw);
  const zBits = 32 - Math.clz32(verticalRaw - 1);
  const excess = 2 * regionShift + zBits - 64;
  const q = excess <= 0 ? 0 : Math.floor((excess + 2) / 3);
  if (quantShift !== q) return `quantShift must be ${q} for regionRaw ${regionRaw} and verticalRaw ${verticalRaw}, received ${quantShift}`;
  void hash;
  return undefined;
}

/**
 * Whether a WELCOME's layout is its server's whole packet layout: true when its protocol hash is
 * that of the position layout alone (no fast fields, no attributes). Otherwise a client decodes
 * with the server's WorldConfig (pass it to `connect`), since the WELCOME does not carry fields.
 */
export function welcomeCarriesLayout(welcome: Pick<WelcomeMessage, 'protocolHash' | 'regionRaw' | 'verticalRaw' | 'quantShift'>): boolean {
  return welcome.protocolHash === protocolHash(welcome.regionRaw, welcome.verticalRaw, welcome.quantShift);
}

/**
 * The packet layout a WELCOME describes, for {@link decodePacketRaw} / {@link ClientWorld}.
 * regionShift = log2(regionRaw), zBits = ceil(log2(verticalRaw)).
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (welcome not an object).
 */
export function layoutOf(welcome: Pick<WelcomeMessage, 'regionRaw' | 'verticalRaw' | 'quantShift'>): PacketLayoutConfig {
  checkFields('welcome', welcome);
  return {
    regionRaw: welcome.regionRaw,
    regionShift: 31 - Math.clz32(welcome.regionRaw),
    verticalRaw: welcome.verticalRaw,
    zBits: 32 - Math.clz32(welcome.verticalRaw - 1),
    quantShift: welcome.quantShift,
  };
}

/**
 * The error a client raises for a REFUSE: code from {@link REFUSE_ERROR_CODES}
 * (`ERR_SIGHTLINE_NET_REFUSED` for an unknown refuse code), message naming the server's reason.
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT (refuse not an object).
 */
export function refuseError(refuse: RefuseMessage, clientHash?: number): SightlineError {
  checkFields('refuse', refuse);
  const code = REFUSE_ERROR_CODES[refuse.code] ?? 'ERR_SIGHTLINE_NET_REFUSED';
  let message = `server refused the connection (code ${refuse.code}): ${refuse.text}`;
  // The hashes, unless the server's text gives them already (a sightline server's does).
  if (refuse.code === RefuseCode.PROTOCOL_HASH && clientHash !== undefined && !refuse.text.includes(`0x${hex32(clientHash)}`)) {
    message += ` (server hash 0x${hex32(refuse.detail)}, client hash 0x${hex32(clientHash)})`;
  }
  return new SightlineError(code, message);
}
