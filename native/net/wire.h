// The control messages the native data path reads and writes itself (docs/transport.md, whose
// reference implementation is lib/net/protocol.ts; test/net-native.test.ts checks these against it).
// Everything else a client sends goes to JavaScript.
#pragma once

#include <cstdint>
#include <cstring>

#include "config.h"  // the engine's kProtocolVersion

namespace sightline::net {

// Byte 0 of a game packet (PROTOCOL_VERSION): the engine's, so the two cannot drift apart.
constexpr uint8_t kGamePacketVersion = uint8_t(kProtocolVersion);
constexpr uint8_t kMsgHello = 0xA0;
constexpr uint8_t kMsgWelcome = 0xA1;
constexpr uint8_t kMsgRefuse = 0xA2;
constexpr uint8_t kMsgAck = 0xA3;
constexpr uint8_t kMsgBye = 0xA4;
constexpr uint8_t kMsgPing = 0xA5;
constexpr uint8_t kMsgChallenge = 0xA6;
constexpr uint8_t kMsgInput = 0xA7;
// Every client message after the handshake carries the session's token at bytes 1..8.
constexpr uint32_t kTokenBytes = 8;
constexpr uint32_t kAckBytes = 15;         // u8 type, token, u16 ack, u32 ackBits
constexpr uint32_t kByeBytes = 10;         // u8 type, token, u8 reason
constexpr uint32_t kPingBytes = 9;         // u8 type, token
constexpr uint32_t kInputHeaderBytes = 12;  // u8 type, token, u8 kind (0 or 1), u16 sequence; then the payload
constexpr uint32_t kInputMaxBytes = 1024;   // largest INPUT payload the protocol allows
constexpr uint32_t kNetMagic = 0x4E544C53;  // HELLO bytes 1..4: "SLTN"
constexpr uint32_t kRefuseHeaderBytes = 11;
constexpr uint32_t kHelloMinBytes = 128;
constexpr uint32_t kHelloMaxBytes = 33 + 1024;  // header, then a connect token of up to 1,024 bytes
// The longest message a client sends: a datagram to a server longer than this is malformed.
constexpr uint32_t kMaxClientMessageBytes = kHelloMaxBytes > kInputHeaderBytes + kInputMaxBytes
                                                ? kHelloMaxBytes
                                                : kInputHeaderBytes + kInputMaxBytes;
constexpr uint32_t kGameHeaderBytes = 16;
// Header bytes 8..11 of a game packet: the server's acknowledgement of the client's reliable
// input (u16 ack, u16 ackBits), written per session as the packet leaves.
constexpr uint32_t kInputAckOffset = 8;

// Ack credit (docs/transport.md): each packet sent earns a client kAckCreditPerPacket acks, up to
// kAckCreditMax banked, kAckCreditStart to begin with; an ACK without credit is dropped.
constexpr int32_t kAckCreditPerPacket = 2;
constexpr int32_t kAckCreditMax = 64;
constexpr int32_t kAckCreditStart = 8;

inline uint16_t getU16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t getU32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// What the decoder (decodeControl, and SessionHost's tally of malformed datagrams by code) makes
// of a datagram longer than any client message (kMaxClientMessageBytes), from its first bytes.
enum class LongCode : uint8_t { WrongDirection, BadMagic, Malformed, Oversized, UnknownType, Count };
inline LongCode classifyLong(const uint8_t* d) {
  switch (d[0]) {
    case kGamePacketVersion: return LongCode::WrongDirection;  // a game packet, sent to a server
    case kMsgHello: return getU32(d + 1) != kNetMagic ? LongCode::BadMagic : LongCode::Oversized;
    case kMsgRefuse: return d[10] > kHelloMinBytes - kRefuseHeaderBytes ? LongCode::Malformed : LongCode::Oversized;
    case kMsgWelcome:
    case kMsgChallenge:
    case kMsgAck:
    case kMsgBye:
    case kMsgPing:
    case kMsgInput: return LongCode::Oversized;
    default: return LongCode::UnknownType;
  }
}
inline void setU16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v), p[1] = uint8_t(v >> 8); }
inline void setU32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v), p[1] = uint8_t(v >> 8), p[2] = uint8_t(v >> 16), p[3] = uint8_t(v >> 24);
}

// An ACK's acknowledgement ahead of the newest sequence sent (lastSequence, -1 before the first)
// acknowledges nothing real: the check UdpServer makes before passing an ACK on.
inline bool ackAhead(uint16_t ack, int32_t lastSequence) {
  if (lastSequence < 0) return true;
  const uint32_t ahead = uint16_t(ack - uint16_t(lastSequence));
  return ahead != 0 && ahead < 32768;
}

}  // namespace sightline::net
