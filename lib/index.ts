// sightline: interest management with a priority accumulator for Node.js game servers.
export { World, TickResult } from './world.js';
export type { EventTarget, EntityId, Vec3, WorldOptions, ViewerOptions, Positions, Packet, TickStats, GatherResult, GhostTableView } from './world.js';
export * from './config.js';
export { SightlineError } from './errors.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from './fixed.js';
export { decodePacket, decodePacketRaw, createRawPacket } from './decode.js';
export type { DecodedPacket, RawPacket, PacketHeader, PacketUpdate, PacketLayoutConfig } from './decode.js';
