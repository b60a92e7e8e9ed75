#include "snapshot.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "arena.h"
#include "simd.h"
#include "subscription.h"

#if SIGHTLINE_AVX512
#include <immintrin.h>
#endif

namespace sightline {

namespace {

// PositionPacker::pack of slots [0, n) into out, in slot order.
void packSlotsPortable(const int32_t* x, const int32_t* y, const int32_t* z, uint32_t n, const PositionPacker& p,
                       uint64_t* out) {
  const PositionPacker packer = p;
  for (uint32_t s = 0; s < n; ++s) out[s] = packer.pack(x[s], y[s], z[s]);
}

#if SIGHTLINE_AVX512
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics as maybe uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The same 8 slots at a time: x and y widened without sign (as pack casts them), z with its sign,
// offset and clamped; multiplying by yScale and zScale (powers of two) is shifting by their logs.
SIGHTLINE_TARGET_AVX512
void packSlots512(const int32_t* x, const int32_t* y, const int32_t* z, uint32_t n, const PositionPacker& p,
                  uint64_t* out) {
  const __m512i q = _mm512_set1_epi64(p.q), yShift = _mm512_set1_epi64(__builtin_ctzll(p.yScale)),
                zShift = _mm512_set1_epi64(__builtin_ctzll(p.zScale));
  const __m512i zHalf = _mm512_set1_epi64(p.zHalf), zMax = _mm512_set1_epi64(p.zMax), zero = _mm512_setzero_si512();
  for (uint32_t s = 0; s < n; s += 8) {
    const __mmask8 live = n - s >= 8 ? __mmask8(0xff) : __mmask8((1u << (n - s)) - 1);
    const __m512i vx = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(live, x + s));
    const __m512i vy = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(live, y + s));
    __m512i vz = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(live, z + s)), zHalf);
    vz = _mm512_min_epi64(_mm512_max_epi64(vz, zero), zMax);
    const __m512i packed = _mm512_or_si512(_mm512_srlv_epi64(vx, q),
                                           _mm512_or_si512(_mm512_sllv_epi64(_mm512_srlv_epi64(vy, q), yShift),
                                                           _mm512_sllv_epi64(_mm512_srlv_epi64(vz, q), zShift)));
    _mm512_mask_storeu_epi64(out + s, live, packed);
  }
}
#pragma GCC diagnostic pop
#endif

void packSlots(const int32_t* x, const int32_t* y, const int32_t* z, uint32_t n, const PositionPacker& p,
               uint64_t* out) {
#if SIGHTLINE_AVX512
  if (simdEnabled()) return packSlots512(x, y, z, n, p, out);
#endif
  packSlotsPortable(x, y, z, n, p, out);
}

// f.template operator()<a, b, c, d>() for the run-time a, b, c and d: a loop made for what is in use.
template <typename F>
void dispatch4(bool a, bool b, bool c, bool d, F& f) {
  auto with3 = [&]<bool kA>() {
    auto with2 = [&]<bool kB>() {
      auto with1 = [&]<bool kC>() {
        if (d) f.template operator()<kA, kB, kC, true>();
        else f.template operator()<kA, kB, kC, false>();
      };
      if (c) with1.template operator()<true>();
      else with1.template operator()<false>();
    };
    if (b) with2.template operator()<true>();
    else with2.template operator()<false>();
  };
  if (a) with3.template operator()<true>();
  else with3.template operator()<false>();
}

}  // namespace

void Snapshot::extendDefaults(bool trackGroups, bool trackWeights) {
  if (!trackGroups && groupsDefault_ < count_) std::fill(groups.begin() + groupsDefault_, groups.begin() + count_, ~0u);
  groupsDefault_ = trackGroups ? 0 : std::max(groupsDefault_, count_);
  if (!trackWeights && weightsDefault_ < count_) std::fill(weights.begin() + weightsDefault_, weights.begin() + count_, uint8_t{1});
  weightsDefault_ = trackWeights ? 0 : std::max(weightsDefault_, count_);
}

Grid::Grid(const Config& c) : cellRadius(c.cellRadius), S(c.subGridDivisions) {
  int R = static_cast<int>(c.cellRadius);
  int s = static_cast<int>(S);
  struct Off { int dx, dy; int64_t gap; };
  ringSize = uint32_t((2 * R + 1) * (2 * R + 1));
  for (int qy = 0; qy < s; ++qy)
    for (int qx = 0; qx < s; ++qx) {
      // In half sub-cell units: the sub-cell's center is (2q + 1), a cell spans 2S.
      int64_t px = 2 * qx + 1, py = 2 * qy + 1;
      std::vector<Off> offs;
      for (int dy = -R; dy <= R; ++dy)
        for (int dx = -R; dx <= R; ++dx) {
          int64_t x0 = int64_t(2) * dx * s, y0 = int64_t(2) * dy * s;
          int64_t gx = std::max<int64_t>({0, x0 - px, px - (x0 + 2 * s)});
          int64_t gy = std::max<int64_t>({0, y0 - py, py - (y0 + 2 * s)});
          offs.push_back({dx, dy, gx * gx + gy * gy});
        }
      std::stable_sort(offs.begin(), offs.end(), [](const Off& a, const Off& b) {
        if (a.gap != b.gap) return a.gap < b.gap;
        int da = a.dx * a.dx + a.dy * a.dy, db = b.dx * b.dx + b.dy * b.dy;
        if (da != db) return da < db;
        if (a.dy != b.dy) return a.dy < b.dy;
        return a.dx < b.dx;
      });
      for (const Off& o : offs) ringDx.push_back(int8_t(o.dx)), ringDy.push_back(int8_t(o.dy));
      for (int r = 0; r <= R; ++r) {
        size_t end = 0;
        for (size_t k = 0; k < offs.size(); ++k)
          if (std::max(std::abs(offs[k].dx), std::abs(offs[k].dy)) <= r) end = k + 1;
        ringEnd.push_back(uint16_t(end));
      }
    }

  for (int level = 0; level < 2; ++level) {
    const uint32_t Sl = S << level;
    if (Sl > 16) break;  // sub-cell indices are one byte
    SubGrid& g = sub[level];
    g.S = Sl;
    g.shift = c.subShift - level;
    const uint32_t n = Sl * Sl;
    g.order.resize(size_t{n} * n);
    g.lead.resize(n);
    std::vector<uint32_t> order(n);
    for (uint32_t sy = 0; sy < Sl; ++sy)
      for (uint32_t sx = 0; sx < Sl; ++sx) {
        std::iota(order.begin(), order.end(), 0u);
        auto d = [&](uint32_t k) {
          int dx = int(k % Sl) - int(sx), dy = int(k / Sl) - int(sy);
          return dx * dx + dy * dy;
        };
        std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return d(a) < d(b); });
        for (uint32_t k = 0; k < n; ++k) g.order[size_t{sy * Sl + sx} * n + k] = uint8_t(order[k]);
        // The 3 x 3 block: center distance^2 <= 2, every other sub-cell >= 4.
        g.lead[sy * Sl + sx] = uint8_t(std::count_if(order.begin(), order.end(), [&](uint32_t k) { return d(k) <= 2; }));
      }
  }
}

uint64_t Snapshot::memoryBytes() const {
  return vectorBytes(cellStart) + vectorBytes(denseIndex) + vectorBytes(dense) + vectorBytes(subStart) + vectorBytes(ents) +
         vectorBytes(packed) + vectorBytes(slotIndex) + vectorBytes(groups) + vectorBytes(weights) + vectorBytes(slotGroups) +
         vectorBytes(groupsChanged) + vectorBytes(tmpGroups_) + vectorBytes(tmpWeights_) +
         vectorBytes(slotCell_) + vectorBytes(cursor_) + vectorBytes(tmpEnts_) + vectorBytes(tmpPacked_) + vectorBytes(slotPacked_) +
         vectorBytes(grid_.ringDx) + vectorBytes(grid_.ringDy) + vectorBytes(grid_.ringEnd) + vectorBytes(grid_.sub[0].order) +
         vectorBytes(grid_.sub[1].order) + vectorBytes(fields) + vectorBytes(tmpFields_) + vectorBytes(stateMarks) +
         vectorBytes(tmpStateMarks_) + vectorBytes(slotKind) + vectorBytes(slotExtra);
}

Snapshot::Snapshot(const Config& c)
    : cellStart(c.cellCount + 1), denseIndex(c.cellCount, -1), config_(&c), packer_(c), grid_(c), cursor_(c.cellCount) {}

void Snapshot::plan(const EntityStore& store) {
  const Config& c = *config_;
  const uint32_t hw = store.highWater();
  const int32_t *sx = store.x(), *sy = store.y();
  const uint8_t* alive = store.alive();
  const int64_t region = c.regionRaw;
  const int shift = c.cellShift;
  const uint32_t cpa = c.cellsPerAxis;

  // Each array checked on its own: an allocation that throws leaves the others as they were, and
  // the next plan() makes what is still missing.
  auto atLeast = [](auto& v, size_t n, size_t size) {
    if (v.size() < n) v.resize(size);
  };
  atLeast(slotCell_, hw, store.capacity());
  atLeast(slotPacked_, hw, store.capacity());
  if (slotGroups.size() < hw) slotGroups.resize(store.capacity(), ~0u);
  atLeast(groupsChanged, hw, store.capacity());
  // Kinds and attributes, once either is in use (which only a call from the game changes, never
  // the tick between plan and fill).
  const bool state = store.stateInUse();
  if (state && slotKind.size() < store.capacity()) slotKind.resize(store.capacity()), slotExtra.resize(store.capacity());
  if (slotIndex.size() < hw) slotIndex.resize(store.capacity(), 0);
  std::fill(cursor_.begin(), cursor_.end(), 0u);

  // The cell of each live slot, counts per cell.
  uint32_t outside = 0, n = 0;
  for (uint32_t s = 0; s < hw; ++s) {
    if (!alive[s]) { slotCell_[s] = UINT32_MAX; continue; }
    int32_t px = sx[s], py = sy[s];
    if (px < 0 || py < 0 || px >= region || py >= region) {
      slotCell_[s] = UINT32_MAX;
      ++outside;
      continue;
    }
    uint32_t cell = uint32_t(py >> shift) * cpa + uint32_t(px >> shift);
    slotCell_[s] = cell;
    ++cursor_[cell];
    ++n;
  }
  planned_ = n, plannedOutside_ = outside, plannedHighWater_ = hw;

  // Room for the entities, and for the dense cells' sub-grids at the finer of the two levels.
  const size_t cap = std::max<size_t>(n, store.capacity());
  atLeast(ents, n, cap);
  atLeast(packed, n, cap);
  atLeast(groups, n, cap);
  atLeast(weights, n, cap);
  const bool hasFields = store.fieldCount() > 0;
  if (hasFields) atLeast(fields, n, cap);
  if (state && stateMarks.size() < ents.size()) stateMarks.resize(ents.size());
  uint32_t denseCount = 0, largestDense = 0;
  for (uint32_t cell = 0; cell < c.cellCount; ++cell) {
    if (cursor_[cell] < c.denseCellThreshold) continue;
    ++denseCount;
    largestDense = std::max(largestDense, cursor_[cell]);
  }
  if (denseCount > 0) {
    const size_t S = std::max(grid_.sub[0].S, grid_.sub[1].S);
    const size_t blocks = size_t{denseCount} * (S * S + 1);
    if (subStart.size() < blocks) subStart.resize(blocks);
    if (dense.size() < denseCount) dense.resize(denseCount);
    atLeast(tmpEnts_, largestDense, largestDense);
    atLeast(tmpPacked_, largestDense, largestDense);
    atLeast(tmpGroups_, largestDense, largestDense);
    atLeast(tmpWeights_, largestDense, largestDense);
    if (hasFields) atLeast(tmpFields_, largestDense, largestDense);
    if (state && tmpStateMarks_.size() < largestDense) tmpStateMarks_.resize(std::max<size_t>(largestDense, tmpEnts_.size()));
  }
}

void Snapshot::fill(const EntityStore& store) {
  const Config& c = *config_;
  const uint32_t hw = plannedHighWater_;
  const int32_t *sx = store.x(), *sy = store.y(), *sz = store.z();
  const uint32_t* odometer = store.odometer();
  count_ = planned_;
  outsideRegion_ = plannedOutside_;

  // Prefix sum into cellStart; cursor_ becomes the write position.
  uint32_t acc = 0, maxOcc = 0;
  for (uint32_t cell = 0; cell < c.cellCount; ++cell) {
    uint32_t k = cursor_[cell];
    maxOcc = std::max(maxOcc, k);
    cellStart[cell] = acc;
    cursor_[cell] = acc;
    acc += k;
  }
  cellStart[c.cellCount] = acc;
  maxCellOccupancy_ = maxOcc;

  // Pass 2: scatter in slot order (stable), with every slot's position packed first (a loop of
  // its own, on vectors where the CPU has them: 8 at a time rather than one per scattered entity).
  // In the same loop, each slot's groups against the previous snapshot's: the live entities whose
  // groups changed are listed (in slot order), and every slot's groups kept for lookups by id.
  packSlots(sx, sy, sz, hw, packer_, slotPacked_.data());
  const uint32_t* sg = store.groups();
  const uint8_t* sw = store.weights();
  const uint8_t* alive = store.alive();
  uint32_t changed = 0, notAll = 0, notOne = 0, shared = ~0u;
  const bool hasFields = store.fieldCount() > 0;
  const uint64_t* slotFields = store.packedFields();
  state_ = store.stateInUse();
  stateChecks_ = state_ && store.stateChangedLive() > 0;
  const uint32_t* kindMarks = store.kindMarks();
  const uint32_t* attributeMarks = store.attributeMarks();
  // Groups and weights never set are every group (~0u) and 1 for every slot, as slotGroups holds
  // them already: nothing changed, and the entity arrays are filled with them once (extendDefaults)
  // instead of copied every tick. The loop is made for what is in use.
  const bool trackGroups = store.groupsEverSet(), trackWeights = store.weightsEverSet();
  // Where each entity lands, by slot (a slot left out keeps an older index: see slotIndex); the
  // dense cells' reordering below moves some.
  uint32_t* where = slotIndex.data();
  auto scatter = [&]<bool kGroups, bool kWeights, bool kFields, bool kState>() {
    for (uint32_t s = 0; s < hw; ++s) {
      uint32_t g = ~0u;
      if constexpr (kGroups) {
        g = sg[s];
        if (g != slotGroups[s]) {
          if (alive[s]) groupsChanged[changed++] = store.idOfSlot(s);
          slotGroups[s] = g;
        }
      }
      uint32_t cell = slotCell_[s];
      if (cell == UINT32_MAX) continue;
      uint32_t at = cursor_[cell]++;
      ents[at] = SnapEntity{sx[s], sy[s], store.idOfSlot(s), odometer[s]};
      packed[at] = slotPacked_[s];
      where[s] = at;
      if constexpr (kGroups) groups[at] = g, notAll |= ~g, shared &= g;
      if constexpr (kWeights) weights[at] = sw[s], notOne |= sw[s] ^ 1u;
      if constexpr (kFields) fields[at] = slotFields[s];
      if constexpr (kState) stateMarks[at] = kindMarks[s] | uint64_t(attributeMarks[s]) << 32;
    }
  };
  dispatch4(trackGroups, trackWeights, hasFields, state_, scatter);
  extendDefaults(trackGroups, trackWeights);
  maxExtra_ = 0;
  if (state_) {
    const uint16_t* kinds = store.kinds();
    const AttributeStore& attrs = store.attributes();
    const uint16_t* costs = attrs.enabled() ? attrs.costs() : nullptr;
    for (uint32_t s = 0; s < hw; ++s) {
      const uint32_t extra = (kinds[s] != 0 ? kKindRecordBytes : 0) + (costs ? costs[s] : 0);
      slotKind[s] = kinds[s], slotExtra[s] = uint16_t(extra);
      if (slotCell_[s] != UINT32_MAX) maxExtra_ = std::max(maxExtra_, extra);
    }
  }
  groupsChangedCount = changed;
  groupsInUse = notAll != 0, weightsInUse = notOne != 0;
  groupsShared = shared;

  // Dense cells: counting sort by sub-cell inside the cell's range, at level 1 (twice as fine)
  // when a level-0 sub-cell holds walkCap entities or more (a walk would stop inside it) and that
  // level exists.
  const int32_t cellMask = int32_t(c.cellRaw - 1);
  const uint32_t fineFrom = c.walkCap >= (1u << 30) ? UINT32_MAX : c.walkCap;
  uint32_t dense = 0;
  size_t blocks = 0;
  if (maxOcc >= c.denseCellThreshold) {
    for (uint32_t cell = 0; cell < c.cellCount; ++cell) {
      uint32_t b = cellStart[cell], e = cellStart[cell + 1];
      if (e - b < c.denseCellThreshold) { denseIndex[cell] = -1; continue; }
      // Level-0 counts; a sub-cell of fineFrom or more sends the cell to level 1 (counted again).
      uint32_t level = 0;
      uint32_t* ss = nullptr;
      uint32_t S = 0, SS = 0;
      int subShift = 0;
      for (;;) {
        S = grid_.sub[level].S, SS = S * S, subShift = grid_.sub[level].shift;
        ss = subStart.data() + blocks;  // plan() made room for every dense cell at the finer level
        std::fill(ss, ss + SS + 1, 0u);
        for (uint32_t i = b; i < e; ++i) {
          uint32_t k = uint32_t((ents[i].y & cellMask) >> subShift) * S + uint32_t((ents[i].x & cellMask) >> subShift);
          ++ss[k + 1];
        }
        if (level == 1 || grid_.sub[1].S == 0 || *std::max_element(ss + 1, ss + SS + 1) < fineFrom) break;
        level = 1;
      }
      denseIndex[cell] = int32_t(dense);
      this->dense[dense] = Dense{uint32_t(blocks), level};
      blocks += SS + 1;
      uint32_t m = e - b;
      ss[0] = b;
      for (uint32_t k = 1; k <= SS; ++k) ss[k] += ss[k - 1];
      // ss[k] is now the start of sub-cell k; scatter through a copy.
      std::copy(ents.begin() + b, ents.begin() + e, tmpEnts_.begin());
      std::copy(packed.begin() + b, packed.begin() + e, tmpPacked_.begin());
      if (trackGroups) std::copy(groups.begin() + b, groups.begin() + e, tmpGroups_.begin());
      if (trackWeights) std::copy(weights.begin() + b, weights.begin() + e, tmpWeights_.begin());
      if (hasFields) std::copy(fields.begin() + b, fields.begin() + e, tmpFields_.begin());
      if (state_) std::copy(stateMarks.begin() + b, stateMarks.begin() + e, tmpStateMarks_.begin());
      uint32_t wr[256];
      std::copy(ss, ss + SS, wr);
      // Untracked groups and weights are the same for every entity: they stay where they are.
      auto reorder = [&]<bool kGroups, bool kWeights, bool kFields, bool kState>() {
        for (uint32_t i = 0; i < m; ++i) {
          const SnapEntity& t = tmpEnts_[i];
          uint32_t k = uint32_t((t.y & cellMask) >> subShift) * S + uint32_t((t.x & cellMask) >> subShift);
          uint32_t at = wr[k]++;
          ents[at] = t, packed[at] = tmpPacked_[i];
          where[slotOfId(t.id)] = at;
          if constexpr (kGroups) groups[at] = tmpGroups_[i];
          if constexpr (kWeights) weights[at] = tmpWeights_[i];
          if constexpr (kFields) fields[at] = tmpFields_[i];
          if constexpr (kState) stateMarks[at] = tmpStateMarks_[i];
        }
      };
      dispatch4(trackGroups, trackWeights, hasFields, state_, reorder);
      ++dense;
    }
  } else if (denseCells_ > 0) {
    std::fill(denseIndex.begin(), denseIndex.end(), -1);
  }
  denseCells_ = dense;

}

}  // namespace sightline
