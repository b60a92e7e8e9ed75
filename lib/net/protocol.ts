// Control datagrams between a client and a server (docs/control-messages.md, docs/transport.md): the handshake (HELLO,
// CHALLENGE, WELCOME, REFUSE), acks, input, keepalives and goodbyes that travel beside the
// engine's game packets. One entry point for the modules that hold them.
// Browser-safe: imports nothing from Node.
export * from './control-types.js';
export { encodeHello, encodeChallenge, encodeWelcome, encodeRefuse, encodeAck, encodeBye, encodePing, encodeInput, helloBytes } from './control-encode.js';
export { decodeControl, tryDecodeControl, datagramKind, type DatagramKind } from './control-decode.js';
export { layoutOf, refuseError, welcomeCarriesLayout } from './control-layout.js';
export { hex32 } from './bytes.js';
