// The network layer: transport interface, control protocol, session client and server cores,
// client world, in-process lossy link, the node:dgram UDP adapter and the WebSocket server (ws). For browsers, import
// './browser.js' (no Node imports).
export * from './browser.js';
export { SessionHost } from './session-host.js';
export type { SessionServerOptions, ServerLayout, Endpoint, Session } from './session-host.js';
export { UdpServer } from './udp-server.js';
export type { UdpServerOptions, UdpServerCounters } from './udp-server.js';
export { UdpClient } from './udp-client.js';
export type { UdpClientOptions, UdpClientCounters } from './udp-client.js';
export { WsServer } from './ws-server.js';
export type { WsServerOptions, WsServerCounters } from './ws-server.js';
export { UdpClientSwarm } from './client-swarm.js';
export type { UdpClientSwarmOptions, SwarmClientCounters, SwarmConnectResult } from './client-swarm.js';
