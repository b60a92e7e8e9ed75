// Pieces the UDP server and client share: address resolution without an event-loop turn, and
// address checks.
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import { SightlineError, describe } from '../errors.js';

/**
 * dgram `lookup` that answers IP literals synchronously (the default defers every send to the
 * next tick) and resolves names with dns.lookup.
 */
export function lookupLiteral(
  hostname: string,
  options: LookupOneOptions | number,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void {
  const family = isIP(hostname);
  if (family !== 0) {
    callback(null, hostname, family);
    return;
  }
  const opts: LookupOneOptions = typeof options === 'number' ? { family: options } : options;
  dnsLookup(hostname, opts, callback);
}

/** `address:port`, with an IPv6 address in brackets. */
export function endpointKey(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

// A host name (RFC 1123 labels of letters, digits and inner hyphens, dot-separated).
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/**
 * Checks an address option of a socket of this family: an IP literal of that family, or a host
 * name; returns it. `''` is refused (it would bind every interface silently: say '0.0.0.0' or '::').
 * @throws ERR_SIGHTLINE_INVALID_ARGUMENT.
 */
export function checkAddress(name: string, value: unknown, type: 'udp4' | 'udp6'): string {
  const family = typeof value === 'string' ? isIP(value) : 0;
  const want = type === 'udp4' ? 4 : 6;
  if (typeof value !== 'string' || (family === 0 && !HOST_NAME.test(value)) || (family !== 0 && family !== want)) {
    const any = type === 'udp4' ? "'0.0.0.0'" : "'::'";
    throw new SightlineError(
      'ERR_SIGHTLINE_INVALID_ARGUMENT',
      `${name} must be an IPv${want} address or a host name (${any} for every interface), received ${describe(value)}` +
        (family !== 0 ? ` (an IPv${family} address, for a ${type} socket)` : ''),
    );
  }
  return value;
}
