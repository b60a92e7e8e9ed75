// Packet encoding (docs/wire-format.md). Little-endian, version 2.
//
// Header, 16 bytes:
//   0 u8  version        4 u32 tick            12 u16 despawn count
//   1 u8  flags          8 u16 ack (reserved)  14 u16 update count
//   2 u16 sequence      10 u16 ack bits (reserved)
// Flag bit 0: an events section follows the header (events.h). Then despawn records (u32 wire id
// each), then update records (recordBytes each: u32 wire id, u64 packed position, then the fast
// fields, fieldBytes little-endian bytes), then when flag bit 1 is set the kinds section (u16
// count, then u32 id + u16 kind each) and when flag bit 2 is set the attributes section (u16
// count, then u32 id, u32 version, u8 length and the bytes each). The packed position holds x in bits [0, B), y in [B, 2B), z in [2B, 2B + Z) where
// B = log2(regionRaw) - q and Z = ceil(log2(verticalRaw)) - q, q = config.quantShift (0 at the
// defaults: lossless). z is offset by verticalRaw/2 and clamped to the vertical extent.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "config.h"

namespace sightline {

// Little-endian stores: a plain copy on little-endian hosts, byte by byte elsewhere.
template <typename T>
inline void putLE(uint8_t* p, T v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (size_t i = 0; i < sizeof v; ++i) p[i] = uint8_t(v >> (8 * i));
  }
}
inline void putU16(uint8_t* p, uint16_t v) { putLE(p, v); }
inline void putU32(uint8_t* p, uint32_t v) { putLE(p, v); }
inline void putU64(uint8_t* p, uint64_t v) { putLE(p, v); }

constexpr uint8_t kFlagEvents = 1;      // an events section follows the header
constexpr uint8_t kFlagKinds = 2;       // a kinds section follows the update records
constexpr uint8_t kFlagAttributes = 4;  // an attributes section follows (after the kinds section)

struct PacketHeader {
  uint16_t sequence;
  uint32_t tick;
  uint16_t despawnCount;
  uint16_t updateCount;
  uint8_t flags;
};

inline void writeHeader(uint8_t* p, const PacketHeader& h) {
  p[0] = uint8_t(kProtocolVersion);
  p[1] = h.flags;
  putU16(p + 2, h.sequence);
  putU32(p + 4, h.tick);
  putU16(p + 8, 0);
  putU16(p + 10, 0);
  putU16(p + 12, h.despawnCount);
  putU16(p + 14, h.updateCount);
}

// Packs a raw position already inside the region horizontally (snapshot positions always are).
struct PositionPacker {
  explicit PositionPacker(const Config& c)
      : q(c.quantShift),
        zHalf(c.verticalRaw >> 1),
        zMax(c.verticalRaw - 1),
        yScale(uint64_t{1} << (c.regionShift - c.quantShift)),
        zScale(uint64_t{1} << (2 * (c.regionShift - c.quantShift))) {}
  // The fields shifted into place by multiplying: one shift count (q) in a loop that packs many.
  uint64_t pack(int32_t x, int32_t y, int32_t z) const {
    int64_t zz = std::clamp<int64_t>(int64_t{z} + zHalf, 0, zMax);
    return (uint64_t(uint32_t(x)) >> q) | ((uint64_t(uint32_t(y)) >> q) * yScale) | ((uint64_t(zz) >> q) * zScale);
  }
  // The position a client decodes from a packed one (raw): x and y quantized, z clamped to the
  // vertical extent and quantized (docs/wire-format.md).
  struct Decoded { int32_t x, y, z; };
  Decoded unpack(uint64_t packed) const {
    const int b = std::countr_zero(yScale);  // the bits of x and of y
    const uint64_t field = yScale - 1;
    return Decoded{int32_t((packed & field) << q), int32_t(((packed >> b) & field) << q),
                   int32_t(int64_t((packed >> (2 * b)) << q) - zHalf)};
  }
  int q;
  int64_t zHalf, zMax;
  uint64_t yScale, zScale;  // 2^B, 2^(2B): B = regionShift - q, the bits of x and of y
};

inline void writeUpdate(uint8_t* p, uint32_t id, uint64_t packed) {
  putU32(p, id);
  putU64(p + 4, packed);
}

// The fields of an update record, fieldBytes (1 to 8) little-endian bytes at p. `slack`: p + 8 may
// be written (the next record overwrites what lies past the fields), so one 8-byte store does.
inline void writeFields(uint8_t* p, uint64_t fields, uint32_t fieldBytes, bool slack) {
  if (slack) {
    putU64(p, fields);
  } else {
    for (uint32_t i = 0; i < fieldBytes; ++i) p[i] = uint8_t(fields >> (8 * i));
  }
}

}  // namespace sightline
