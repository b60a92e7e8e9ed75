// The network layer: transport interface, control protocol, client world, in-process lossy link
// and the node:dgram UDP adapter. For browsers, import './browser.js' (no Node imports).
export * from './browser.js';
export { UdpServer } from './udp-server.js';
export type { UdpServerOptions, UdpServerCounters, ServerLayout } from './udp-server.js';
export { UdpClient } from './udp-client.js';
export type { UdpClientOptions, UdpClientCounters, ClientDisconnectReason } from './udp-client.js';
export { UdpClientSwarm } from './client-swarm.js';
export type { UdpClientSwarmOptions, SwarmClientCounters, SwarmConnectResult } from './client-swarm.js';
