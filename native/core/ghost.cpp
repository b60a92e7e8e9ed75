#include "ghost.h"

#include "fixed.h"

namespace sightline {

GhostTable::GhostTable(uint32_t capacity, bool trackPositions, bool trackAcks)
    : capacity_(capacity),
      entries_(capacity),
      positions_(trackPositions ? capacity : 0),
      acks_(trackAcks ? capacity : 0),
      queue_(capacity) {
  // Load factor <= 1/2. capacity <= 32768, so the index holds at most 65536 slots of u16.
  uint32_t slots = uint32_t{1} << ceilLog2(uint64_t{capacity} * 2);
  if (slots < 8) slots = 8;
  indexMask_ = slots - 1;
  hashShift_ = 32 - ilog2(slots);
  index_.assign(slots, kEmpty);
}

uint32_t GhostTable::insert(uint32_t id, uint32_t mark, uint16_t pass) {
  uint32_t i = size_++;
  entries_[i] = GhostEntry{id, mark, pass, kLive, 0};
  if (!acks_.empty()) acks_[i] = GhostAck{0, 0, 0, 0, 0};  // born is set by the pass
  uint32_t h = hash(id);
  while (index_[h] != kEmpty) h = (h + 1) & indexMask_;
  index_[h] = uint16_t(i);
  return i;
}

void GhostTable::remove(uint32_t i) {
  // Find and clear i's index slot, then backward-shift the probe run behind it.
  uint32_t h = hash(entries_[i].id);
  while (index_[h] != i) h = (h + 1) & indexMask_;
  uint32_t hole = h;
  for (uint32_t j = (hole + 1) & indexMask_;; j = (j + 1) & indexMask_) {
    uint16_t v = index_[j];
    if (v == kEmpty) break;
    uint32_t home = hash(entries_[v].id);
    // Move v into the hole if its home is not in the cyclic range (hole, j].
    bool inRange = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!inRange) {
      index_[hole] = v;
      hole = j;
    }
  }
  index_[hole] = kEmpty;

  uint32_t last = --size_;
  if (i != last) {
    entries_[i] = entries_[last];
    if (!positions_.empty()) positions_[i] = positions_[last];
    if (!acks_.empty()) acks_[i] = acks_[last];
    uint32_t hl = hash(entries_[i].id);
    while (index_[hl] != last) hl = (hl + 1) & indexMask_;
    index_[hl] = uint16_t(i);
  }
}

}  // namespace sightline
