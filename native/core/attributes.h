// Attributes: per entity an opaque byte string of at most `maxBytes` with a version (0: none yet;
// +1 per set, wrapping past 2^32 - 1 to 1). Two slabs, allocated when the store is made: the live
// one (capacity x maxBytes), written by setAttributes at any time (a pass may be running), and the
// pass one, which the pass reads. sync() (once per tick, before the pass, on the caller's thread)
// copies the slots changed since the last sync from the live slab into the pass slab, so a pass
// reads one consistent version of every entity while the game sets the next ones.
// The pass slab holds each slot as the attribute entry the wire carries (docs/wire-format.md: u32
// id, u32 version, u8 length, the bytes), in a stride of whole 16-byte blocks: the pass checks an
// entry and copies it with one random access, in 8-byte words (the words past the entry's end are
// copied too and stay outside the packet).
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "config.h"

namespace sightline {

class AttributeStore {
 public:
  static constexpr uint32_t kNoOwner = 0xffffffffu;  // a pass slot owned by no live entity

  AttributeStore(uint32_t capacity, uint32_t maxBytes);
  uint32_t maxBytes() const { return maxBytes_; }
  // Bytes held: the two slabs and the per-slot arrays.
  uint64_t memoryBytes() const {
    return live_.capacity() + pass_.capacity() + liveLen_.capacity() + dirtyFlag_.capacity() +
           sizeof(uint16_t) * passCost_.capacity() +
           sizeof(uint32_t) * (liveVersion_.capacity() + liveOwner_.capacity() + dirty_.capacity());
  }
  bool enabled() const { return maxBytes_ > 0; }

  // The live side. set() copies len (<= maxBytes, checked by the caller) bytes and returns the new
  // version; clear() forgets a slot's attributes (its entity spawned or despawned), owner being the
  // id now in the slot (kNoOwner when none). Both mark the slot for the next sync.
  uint32_t set(uint32_t slot, const uint8_t* data, uint32_t len);
  void clear(uint32_t slot, uint32_t owner);
  uint32_t liveVersion(uint32_t slot) const { return liveVersion_[slot]; }
  uint32_t liveLength(uint32_t slot) const { return liveLen_[slot]; }
  const uint8_t* liveBytes(uint32_t slot) const { return live_.data() + size_t(slot) * maxBytes_; }

  // Copies the marked slots into the pass side. Allocates nothing.
  void sync();

  // The pass side: what the pass of the tick after the last sync reads. owner: the id whose
  // attributes a slot holds (a ghost's id is checked against it).
  // entry(slot): its wire entry, readable for stride() bytes (a whole number of 8-byte words).
  const uint8_t* entry(uint32_t slot) const { return pass_.data() + size_t(slot) * stride_; }
  uint32_t stride() const { return stride_; }
  uint32_t owner(uint32_t slot) const { return loadU32(entry(slot)); }
  uint32_t version(uint32_t slot) const { return loadU32(entry(slot) + 4); }
  uint32_t length(uint32_t slot) const { return entry(slot)[8]; }
  const uint8_t* bytes(uint32_t slot) const { return entry(slot) + kEntryHeaderBytes; }
  // The bytes slot's entry takes in a packet (header and bytes; 0 while its version is 0), one u16
  // per slot beside the slab: the snapshot reads every slot's each tick, in order, without
  // striding through the slab's entries.
  const uint16_t* costs() const { return passCost_.data(); }

 private:
  void mark(uint32_t slot) {
    if (!dirtyFlag_[slot]) dirtyFlag_[slot] = 1, dirty_[dirtyCount_++] = slot;
  }
  static constexpr uint32_t kEntryHeaderBytes = kAttributeHeaderBytes;
  static uint32_t loadU32(const uint8_t* p) {  // little-endian, as codec.h writes it
    if constexpr (std::endian::native == std::endian::little) {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    } else {
      return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    }
  }
  uint32_t maxBytes_, stride_;
  std::vector<uint8_t> live_, pass_;
  std::vector<uint32_t> liveVersion_, liveOwner_;
  std::vector<uint8_t> liveLen_;
  std::vector<uint16_t> passCost_;  // per slot: the pass slab's entry's packet bytes, or 0 (costs())
  std::vector<uint32_t> dirty_;  // slots marked since the last sync (each once: dirtyFlag_)
  std::vector<uint8_t> dirtyFlag_;
  uint32_t dirtyCount_ = 0;
};

}  // namespace sightline
