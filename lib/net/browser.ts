// The network layer's browser-safe half: control messages, the client world and the in-process
// link. Imports nothing from Node.
export * from './protocol.js';
export { ClientWorld } from './client-world.js';
export type {
  ClientEntity,
  ClientWorldOptions,
  PredictedPosition,
  ClientWorldCounters,
  ReceiveStatus,
  AckState,
  SpawnListener,
  UpdateListener,
  DespawnListener,
  EventListener,
} from './client-world.js';
export { extrapolateAxis, isJump, readExtrapolation } from './extrapolate.js';
export type { ExtrapolationOptions, Extrapolation } from './extrapolate.js';
export { LossyLink, mulberry32 } from './lossy-link.js';
export type { LinkConditions, LossyLinkOptions, LossyLinkCounters } from './lossy-link.js';
export { acknowledgeOf, checkTickPackets, classifyAckError, zeroCounters } from './transport.js';
export type {
  Transport,
  TransportListener,
  TransportCounters,
  TickPackets,
  DisconnectReason,
  ConnectRequest,
  AcknowledgeFn,
} from './transport.js';

// Errors and unit conversion, for a client that imports this entry point alone (`sightline`
// itself loads the native addon).
export { SightlineError } from '../errors.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from '../fixed.js';
