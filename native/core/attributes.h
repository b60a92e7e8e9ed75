// Attributes: per entity an opaque byte string of at most `maxBytes` with a version (0: none yet;
// +1 per set, wrapping past 2^32 - 1 to 1). Two slabs of capacity x maxBytes, allocated when the
// store is made: the live one, written by setAttributes at any time (a pass may be running), and
// the pass one, which the pass reads. sync() (once per tick, before the pass, on the caller's
// thread) copies the slots changed since the last sync from the live slab into the pass slab, so a
// pass reads one consistent version of every entity while the game sets the next ones.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace sightline {

class AttributeStore {
 public:
  static constexpr uint32_t kNoOwner = 0xffffffffu;  // a pass slot owned by no live entity

  AttributeStore(uint32_t capacity, uint32_t maxBytes);
  uint32_t maxBytes() const { return maxBytes_; }
  // Bytes held: the two slabs and the per-slot arrays.
  uint64_t memoryBytes() const {
    return live_.capacity() + pass_.capacity() + (liveLen_.capacity() + passLen_.capacity() + dirtyFlag_.capacity()) +
           sizeof(uint32_t) * (liveVersion_.capacity() + passVersion_.capacity() + liveOwner_.capacity() + passOwner_.capacity() + dirty_.capacity());
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
  uint32_t owner(uint32_t slot) const { return passOwner_[slot]; }
  uint32_t version(uint32_t slot) const { return passVersion_[slot]; }
  uint32_t length(uint32_t slot) const { return passLen_[slot]; }
  const uint8_t* bytes(uint32_t slot) const { return pass_.data() + size_t(slot) * maxBytes_; }

 private:
  void mark(uint32_t slot) {
    if (!dirtyFlag_[slot]) dirtyFlag_[slot] = 1, dirty_[dirtyCount_++] = slot;
  }
  uint32_t maxBytes_;
  std::vector<uint8_t> live_, pass_;
  std::vector<uint32_t> liveVersion_, passVersion_, liveOwner_, passOwner_;
  std::vector<uint8_t> liveLen_, passLen_;
  std::vector<uint32_t> dirty_;  // slots marked since the last sync (each once: dirtyFlag_)
  std::vector<uint8_t> dirtyFlag_;
  uint32_t dirtyCount_ = 0;
};

}  // namespace sightline
