#include "ghost.h"

#include <algorithm>
#include <cstddef>
#include <new>

#include "fixed.h"
#include "simd.h"

#if SIGHTLINE_AVX512
#include <immintrin.h>
#endif

namespace sightline {

GhostTable::GhostTable(uint32_t capacity, bool trackPositions, bool trackAcks, BlockArena* arena, bool trackAttributes)
    : capacity_(capacity), arena_(arena) {
  // Load factor <= 1/2. capacity <= 32768, so the index holds at most 65536 slots of u16.
  uint32_t slots = uint32_t{1} << ceilLog2(uint64_t{capacity} * 2);
  if (slots < 8) slots = 8;
  indexMask_ = slots - 1;
  hashShift_ = 32 - ilog2(slots);
  auto up = [](size_t n) { return (n + 15) & ~size_t{15}; };
  const size_t entriesAt = 0, indexAt = up(size_t{(capacity + 15) & ~15u} * sizeof(GhostEntry));
  const size_t queueAt = indexAt + up(size_t{slots} * sizeof(uint16_t));
  const size_t positionsAt = queueAt + up(size_t{capacity} * sizeof(uint32_t));
  const size_t acksAt = positionsAt + (trackPositions ? up(size_t{capacity} * sizeof(GhostPosition)) : 0);
  const size_t attributesAt = acksAt + (trackAcks ? up(size_t{capacity} * sizeof(GhostAck)) : 0);
  const size_t attributeQueueAt = attributesAt + (trackAttributes ? up(size_t{capacity} * sizeof(GhostAttribute)) : 0);
  blockBytes_ = (attributeQueueAt + (trackAttributes ? up(size_t{2} * capacity * sizeof(uint32_t)) : 0) + 63) & ~size_t{63};
  block_ = arena_ ? arena_->allocate(blockBytes_) : ::operator new(blockBytes_, std::align_val_t(64));
  char* b = static_cast<char*>(block_);
  entries_ = reinterpret_cast<GhostEntry*>(b + entriesAt);
  index_ = reinterpret_cast<uint16_t*>(b + indexAt);
  queue_ = reinterpret_cast<uint32_t*>(b + queueAt);
  if (trackPositions) positions_ = reinterpret_cast<GhostPosition*>(b + positionsAt);
  if (trackAcks) acks_ = reinterpret_cast<GhostAck*>(b + acksAt);
  if (trackAttributes) {
    attributes_ = reinterpret_cast<GhostAttribute*>(b + attributesAt);
    attributeQueue_ = reinterpret_cast<uint32_t*>(b + attributeQueueAt);
    std::fill(attributes_, attributes_ + capacity, GhostAttribute{0, 0, 0, 0});
    std::fill(attributeQueue_, attributeQueue_ + size_t{2} * capacity, 0u);
  }
  std::fill(entries_, entries_ + ((capacity + 15) & ~15u), GhostEntry{0, 0, 0, 0, 0});
  std::fill(index_, index_ + slots, kEmpty);
  std::fill(queue_, queue_ + capacity, 0u);
  if (positions_) std::fill(positions_, positions_ + capacity, GhostPosition{0, 0, 0});
  if (acks_) std::fill(acks_, acks_ + capacity, GhostAck{0, 0, 0, 0});
}

GhostTable::GhostTable(GhostTable&& o) noexcept
    : capacity_(o.capacity_),
      size_(o.size_),
      indexMask_(o.indexMask_),
      hashShift_(o.hashShift_),
      arena_(o.arena_),
      block_(o.block_),
      blockBytes_(o.blockBytes_),
      entries_(o.entries_),
      index_(o.index_),
      queue_(o.queue_),
      positions_(o.positions_),
      acks_(o.acks_),
      attributes_(o.attributes_),
      attributeQueue_(o.attributeQueue_),
      qHead_(o.qHead_),
      qCount_(o.qCount_),
      aHead_(o.aHead_),
      aCount_(o.aCount_) {
  o.block_ = nullptr;
}

GhostTable::~GhostTable() {
  if (block_ == nullptr) return;
  if (arena_) arena_->release(block_, blockBytes_);
  else ::operator delete(block_, std::align_val_t(64));
}

namespace {

bool isStale(const GhostEntry& e, uint16_t pass, uint32_t grace) {
  return e.state == kLive && uint16_t(pass - 1 - e.lastSeen) > grace;
}

#if SIGHTLINE_AVX512
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 entries (48 dwords, three vectors) a step: the third dword of each (lastSeen, state, flags)
// gathered by two permutes, tested together, the stale indices packed by compress.
SIGHTLINE_TARGET_AVX512 uint32_t stale512(const GhostEntry* entries, uint32_t n, uint16_t pass, uint32_t grace,
                                          uint32_t* out) {
  static_assert(sizeof(GhostEntry) == 12 && offsetof(GhostEntry, lastSeen) == 8 && offsetof(GhostEntry, state) == 10,
                "the third dword of an entry is lastSeen | state << 16 | flags << 24");
  const uint32_t* d = reinterpret_cast<const uint32_t*>(entries);
  const __m512i fromLow = _mm512_setr_epi32(2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0, 0, 0, 0, 0, 0);
  const __m512i fromHigh = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 19, 22, 25, 28, 31);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i seenBefore = _mm512_set1_epi32(int32_t(uint16_t(pass - 1)));
  const __m512i low16 = _mm512_set1_epi32(0xffff), stateBits = _mm512_set1_epi32(0xff0000);
  const __m512i limit = _mm512_set1_epi32(int32_t(grace));
  uint32_t count = 0;
  for (uint32_t i = 0; i < n; i += 16, d += 48) {
    const __m512i z0 = _mm512_loadu_si512(d), z1 = _mm512_loadu_si512(d + 16), z2 = _mm512_loadu_si512(d + 32);
    const __m512i meta =
        _mm512_mask_blend_epi32(0xfc00, _mm512_permutex2var_epi32(z0, fromLow, z1), _mm512_permutex2var_epi32(z1, fromHigh, z2));
    const __m512i age = _mm512_and_si512(_mm512_sub_epi32(seenBefore, meta), low16);
    const __mmask16 live = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __mmask16 stale = _mm512_mask_cmpgt_epu32_mask(_mm512_mask_testn_epi32_mask(live, meta, stateBits), age, limit);
    if (stale) {
      _mm512_storeu_si512(out + count, _mm512_maskz_compress_epi32(stale, _mm512_add_epi32(lanes, _mm512_set1_epi32(int32_t(i)))));
      count += uint32_t(__builtin_popcount(stale));
    }
  }
  return count;
}
#pragma GCC diagnostic pop
#endif

}  // namespace

uint32_t GhostTable::stale(uint16_t pass, uint32_t grace, uint32_t* out) const {
#if SIGHTLINE_AVX512
  if (simdEnabled()) return stale512(entries_, size_, pass, grace, out);
#endif
  uint32_t count = 0;
  for (uint32_t i = 0; i < size_; ++i) {
    out[count] = i;
    count += isStale(entries_[i], pass, grace);
  }
  return count;
}

uint32_t GhostTable::insert(uint32_t id, uint32_t mark, uint16_t pass) {
  uint32_t i = size_++;
  entries_[i] = GhostEntry{id, mark, pass, kLive, 0};
  if (acks_) acks_[i] = GhostAck{0, 0, 0, 0};  // born is set by the pass
  if (attributes_) attributes_[i] = GhostAttribute{0, uint16_t(pass - 1), 0, 0};
  uint32_t h = hash(id);
  while (index_[h] != kEmpty) h = (h + 1) & indexMask_;
  index_[h] = uint16_t(i);
  return i;
}

void GhostTable::compactAttributeQueue() {
  const uint32_t ring = 2 * capacity_;
  uint32_t kept = 0;
  for (uint32_t k = 0; k < aCount_; ++k) {
    const uint32_t id = attributeQueue_[(aHead_ + k) % ring];
    const int32_t e = find(id);
    if (e < 0 || attributes_[e].queued != 1) continue;  // left over, or kept already (marked 2 below)
    attributes_[e].queued = 2;
    attributeQueue_[(aHead_ + kept++) % ring] = id;
  }
  for (uint32_t k = 0; k < kept; ++k) attributes_[find(attributeQueue_[(aHead_ + k) % ring])].queued = 1;
  aCount_ = kept;
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
    if (positions_) positions_[i] = positions_[last];
    if (acks_) acks_[i] = acks_[last];
    if (attributes_) attributes_[i] = attributes_[last];
    uint32_t hl = hash(entries_[i].id);
    while (index_[hl] != last) hl = (hl + 1) & indexMask_;
    index_[hl] = uint16_t(i);
  }
}

}  // namespace sightline
