// FlatIndex: a map from a key's 64-bit hash to a slot number, for a table of at most `capacity`
// entries, as one open-addressing array (linear probing, at most half full) sized at construction:
// a lookup is one probe run in one array, nothing allocates after construction, and erase shifts
// the run back (Knuth, TAOCP vol. 3, 6.4 Algorithm R) so no tombstones build up.
//
// The caller owns the keys: find() hands each candidate slot whose stored hash bits match to
// `match(slot)`, which compares the real key. Not thread-safe: the owner's lock covers it.
#pragma once

#include <cstdint>
#include <vector>

namespace sightline::net {

// The 64-bit finalizer of MurmurHash3 (Austin Appleby, public domain): every input bit reaches
// every output bit, so the low bits of the result serve as a table position.
inline uint64_t mixBits(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

class FlatIndex {
 public:
  explicit FlatIndex(uint32_t capacity) {
    size_t n = 16;
    while (n < 2 * size_t{capacity}) n <<= 1;
    entries_.assign(n, Entry{});
    mask_ = uint32_t(n - 1);
  }

  // The slot of the entry with this hash that `match(slot)` accepts, or -1.
  template <class Match>
  int64_t find(uint64_t hash, Match&& match) const {
    const uint32_t tag = uint32_t(hash);
    for (uint32_t i = tag & mask_;; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.slotPlusOne == 0) return -1;
      if (e.tag == tag && match(e.slotPlusOne - 1)) return int64_t(e.slotPlusOne) - 1;
    }
  }

  // Adds (hash → slot). The caller keeps at most `capacity` entries, so a free place exists.
  void insert(uint64_t hash, uint32_t slot) {
    const uint32_t tag = uint32_t(hash);
    uint32_t i = tag & mask_;
    while (entries_[i].slotPlusOne != 0) i = (i + 1) & mask_;
    entries_[i] = Entry{tag, slot + 1};
  }

  // Removes (hash → slot); false when it is not there.
  bool erase(uint64_t hash, uint32_t slot) {
    const uint32_t tag = uint32_t(hash);
    uint32_t i = tag & mask_;
    for (;; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.slotPlusOne == 0) return false;
      if (e.tag == tag && e.slotPlusOne == slot + 1) break;
    }
    // Algorithm R: move back each later entry of the run whose home position is not between the
    // hole and it (cyclically), so that every entry stays reachable from its home.
    for (uint32_t j = i;;) {
      j = (j + 1) & mask_;
      const Entry& e = entries_[j];
      if (e.slotPlusOne == 0) break;
      const uint32_t home = e.tag & mask_;
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!stays) {
        entries_[i] = e;
        i = j;
      }
    }
    entries_[i] = Entry{};
    return true;
  }

  void clear() { entries_.assign(entries_.size(), Entry{}); }

 private:
  struct Entry {
    uint32_t tag = 0;          // the hash's low 32 bits: its home position and a quick reject
    uint32_t slotPlusOne = 0;  // 0: empty
  };
  std::vector<Entry> entries_;
  uint32_t mask_ = 0;
};

}  // namespace sightline::net
