// The network layer's browser-safe half: control messages, the session client core, the client
// world, the WebSocket client and the in-process link. Imports nothing from Node.
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
export { SessionClient } from './client-session.js';
export type { SessionClientOptions, SessionClientCounters, ClientDisconnectReason } from './client-session.js';
export { WsClient } from './ws-client.js';
export type { WsClientOptions, WsClientCounters, WebSocketLike, WebSocketClass } from './ws-client.js';
export { InputReceiver, InputSender } from './input.js';
export type { ReliableOutcome, InputDelivery } from './input.js';
export { LossyLink, mulberry32 } from './lossy-link.js';
export type { LinkConditions, LossyLinkOptions, LossyLinkCounters } from './lossy-link.js';
export {
  ConnectionRefusedError,
  acknowledgeOf,
  checkPacketBytes,
  checkTickPackets,
  classifyAckError,
  zeroCounters,
  zeroSessionCounters,
} from './transport.js';
export type {
  Transport,
  TransportListener,
  TransportCounters,
  SessionCounters,
  TickPackets,
  DisconnectReason,
  ConnectRequest,
  AcknowledgeFn,
} from './transport.js';

// What a client checks the protocol with (the version its decoder speaks, the hash of a layout),
// errors and unit conversion, for a client that imports this entry point alone (`sightline`
// itself loads the native addon).
export { PROTOCOL_VERSION, protocolHash } from '../wire.js';
export { SightlineError } from '../errors.js';
export { toRaw, toMeters, FRAC_BITS, RAW_PER_METER } from '../fixed.js';
