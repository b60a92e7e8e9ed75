#include "gather.h"

#include <algorithm>

#include "simd.h"
#include "subscription.h"

#if SIGHTLINE_AVX512
#include <immintrin.h>
#endif

namespace sightline {

namespace {

// kGroups: keep only entities whose groups meet vg (the viewer's).
template <bool kGroups>
inline uint32_t scanRange(const Snapshot& snap, uint32_t b, uint32_t e, int64_t vx, int64_t vy, uint64_t r2,
                          uint32_t exclude, uint32_t vg, Candidates out, uint32_t n) {
  const SnapEntity* es = snap.ents.data();
  const uint32_t* gs = snap.groups.data();
  for (uint32_t i = b; i < e; ++i) {
    int64_t dx = es[i].x - vx, dy = es[i].y - vy;
    uint64_t d2 = static_cast<uint64_t>(dx * dx) + static_cast<uint64_t>(dy * dy);
    // Branch-free append: always write, advance only when in range and not excluded.
    out.d2[n] = d2;
    out.index[n] = i;
    out.idOdo[n] = uint64_t{es[i].id} | uint64_t{es[i].odo} << 32;
    bool keep = (d2 <= r2) & (es[i].id != exclude);
    if constexpr (kGroups) keep &= (gs[i] & vg) != 0;
    n += static_cast<uint32_t>(keep);
  }
  return n;
}

#if SIGHTLINE_AVX512
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics as maybe uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// scanRange, 8 entities at a time: the same candidates in the same order. Two 64-byte loads hold 8
// records; their x and y are widened to 64 bits, so d2 is computed exactly as above (low 64 bits
// of the products). Kept lanes are packed by compress and stored whole: up to 8 entries past n are
// written (the arrays' slack), as the scalar loop writes one.
// kGroups: the 8 entities' groups (one 32-byte load) are tested against vg, one AND.
template <bool kGroups>
SIGHTLINE_TARGET_AVX512 uint32_t scanRange512(const Snapshot& snap, uint32_t b, uint32_t e, int64_t vx, int64_t vy,
                                              uint64_t r2, uint32_t exclude, uint32_t vg, Candidates out, uint32_t n) {
  const int32_t* words = reinterpret_cast<const int32_t*>(snap.ents.data());
  const uint32_t* gs = snap.groups.data();
  const __m256i vvg = _mm256_set1_epi32(int32_t(vg));
  const __m512i xyLanes = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const __m512i idOdoLanes = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);  // qword 1 of each record
  const __m512i vvx = _mm512_set1_epi64(vx), vvy = _mm512_set1_epi64(vy), vr2 = _mm512_set1_epi64(int64_t(r2));
  const __m256i vex = _mm256_set1_epi32(int32_t(exclude));
  __m256i index = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int32_t(b)));
  const __m256i eight = _mm256_set1_epi32(8);
  for (uint32_t i = b; i < e; i += 8) {
    const int32_t* w = words + size_t{i} * 4;
    __m512i lo, hi;
    __mmask8 live = 0xff;
    if (e - i >= 8) {
      lo = _mm512_loadu_si512(w), hi = _mm512_loadu_si512(w + 16);
    } else {  // the last 1..7 records: masked loads never touch the lanes left out
      uint32_t left = e - i;
      live = __mmask8((1u << left) - 1);
      uint32_t words4 = left * 4;
      lo = _mm512_maskz_loadu_epi32(__mmask16(words4 >= 16 ? 0xffff : (1u << words4) - 1), w);
      hi = _mm512_maskz_loadu_epi32(__mmask16(words4 <= 16 ? 0 : (1u << (words4 - 16)) - 1), w + 16);
    }
    __m512i xy = _mm512_permutex2var_epi32(lo, xyLanes, hi);
    __m512i idOdo = _mm512_permutex2var_epi64(lo, idOdoLanes, hi);
    __m256i ids = _mm512_cvtepi64_epi32(idOdo);
    __m512i dx = _mm512_sub_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(xy)), vvx);
    __m512i dy = _mm512_sub_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(xy, 1)), vvy);
    __m512i d2 = _mm512_add_epi64(_mm512_mullo_epi64(dx, dx), _mm512_mullo_epi64(dy, dy));
    __mmask8 keep = _mm512_mask_cmple_epu64_mask(live, d2, vr2) & _mm256_cmpneq_epi32_mask(ids, vex);
    if constexpr (kGroups) keep &= _mm256_test_epi32_mask(_mm256_maskz_loadu_epi32(live, gs + i), vvg);
    _mm512_storeu_si512(out.d2 + n, _mm512_maskz_compress_epi64(keep, d2));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.index + n), _mm256_maskz_compress_epi32(keep, index));
    _mm512_storeu_si512(out.idOdo + n, _mm512_maskz_compress_epi64(keep, idOdo));
    n += uint32_t(__builtin_popcount(keep));
    index = _mm256_add_epi32(index, eight);
  }
  return n;
}
#pragma GCC diagnostic pop
#endif

// The first `lead` (at most 9) entries of a sub-cell order, reordered by the squared distance from
// the viewer (vx, vy) to each sub-cell's rectangle (raw units; 0 inside it), ties kept in the
// order's sequence, into out.
inline void nearestSubCellsFirst(const uint8_t* order, uint32_t lead, uint32_t S, uint32_t subShift, int64_t ox,
                                 int64_t oy, int64_t vx, int64_t vy, uint8_t* out) {
  uint64_t key[9];
  const int64_t last = (int64_t{1} << subShift) - 1;  // a sub-cell's far edge, from its near one
  for (uint32_t k = 0; k < lead; ++k) {
    const uint32_t sc = order[k];
    const int64_t x0 = ox + (int64_t(sc % S) << subShift), y0 = oy + (int64_t(sc / S) << subShift);
    const int64_t dx = vx < x0 ? x0 - vx : vx > x0 + last ? vx - (x0 + last) : 0;
    const int64_t dy = vy < y0 ? y0 - vy : vy > y0 + last ? vy - (y0 + last) : 0;
    // distance^2 < 2^56 (a viewer whose box holds cells is within a few cells of the 2^26-raw
    // region), then the position (< 16).
    const uint64_t kk = (uint64_t(dx * dx + dy * dy) << 4) | k;
    uint32_t at = k;
    for (; at > 0 && key[at - 1] > kk; --at) key[at] = key[at - 1], out[at] = out[at - 1];
    key[at] = kk, out[at] = uint8_t(sc);
  }
}

}  // namespace

namespace {

template <bool kGroups>
GatherResult gatherWith(const Snapshot& snap, const GatherQuery& q, Candidates out) {
  const Config& c = snap.config();
  const Grid& g = snap.grid();
  const int64_t vx = q.vx, vy = q.vy;
  const uint64_t r2 = q.radiusSq;
  const uint32_t walkCap = q.walkCap, exclude = q.exclude;
  const uint32_t cellRadius = std::min(q.cellRadius, g.cellRadius);
  int64_t vcx = cellOf(vx, c.cellShift), vcy = cellOf(vy, c.cellShift);
  Subscription box = subscriptionBox(vcx, vcy, cellRadius, c.cellsPerAxis);
  GatherResult r{0, 0};
  if (box.empty()) return r;
  uint32_t n = 0, examined = 0;
  const uint32_t vg = q.groups;
#if SIGHTLINE_AVX512
  const bool vec = simdEnabled();
  auto scanRange = [vec, vg](const Snapshot& sn, uint32_t b, uint32_t e, int64_t x, int64_t y, uint64_t rr, uint32_t ex,
                             Candidates o, uint32_t k) {
    return vec ? scanRange512<kGroups>(sn, b, e, x, y, rr, ex, vg, o, k)
               : sightline::scanRange<kGroups>(sn, b, e, x, y, rr, ex, vg, o, k);
  };
#else
  auto scanRange = [vg](const Snapshot& sn, uint32_t b, uint32_t e, int64_t x, int64_t y, uint64_t rr, uint32_t ex,
                        Candidates o, uint32_t k) { return sightline::scanRange<kGroups>(sn, b, e, x, y, rr, ex, vg, o, k); };
#endif
  // When the box holds no more than walkCap entities the cap cannot bind and every cell is scanned:
  // the box is then read row by row, a row of cells being one range of the snapshot.
  const uint32_t* cs = snap.cellStart.data();
  const size_t rowWidth = size_t(box.x1) - size_t(box.x0) + 1;
  uint64_t inBox = 0;
  for (int32_t cy = box.y0; cy <= box.y1; ++cy) {
    size_t row = size_t(cy) * c.cellsPerAxis + size_t(box.x0);
    inBox += cs[row + rowWidth] - cs[row];
  }
  if (inBox <= walkCap) {
    for (int32_t cy = box.y0; cy <= box.y1; ++cy) {
      size_t row = size_t(cy) * c.cellsPerAxis + size_t(box.x0);
      n = scanRange(snap, cs[row], cs[row + rowWidth], vx, vy, r2, exclude, out, n);
    }
    r.count = n;
    r.examined = uint32_t(inBox);
    return r;
  }
  const uint32_t S = g.S;
  // The viewer's sub-cell within its own cell picks the visit order of the cells around it.
  const int64_t ownQx = (vx - (vcx << c.cellShift)) >> c.subShift, ownQy = (vy - (vcy << c.cellShift)) >> c.subShift;
  const size_t ringBlock = size_t(ownQy * S + ownQx);
  const size_t ringBase = ringBlock * g.ringSize;
  const int8_t* ringDx = g.ringDx.data() + ringBase;
  const int8_t* ringDy = g.ringDy.data() + ringBase;
  const size_t ringEnd = g.ringEnd[ringBlock * (g.cellRadius + 1) + cellRadius];
  // One cell or sub-cell is scanned for at most 2 x walkCap - n entities (snapshot order): a crowd
  // packed onto one spot, finer than the sub-grid, costs no more than that. Uncapped walks scan all.
  const bool capped = walkCap < (1u << 30);
  auto scan = [&](uint32_t b, uint32_t e) {
    if (capped && e - b > 2 * walkCap - n) e = b + (2 * walkCap - n);
    n = scanRange(snap, b, e, vx, vy, r2, exclude, out, n);
    examined += e - b;
  };
  for (size_t k = 0; k < ringEnd; ++k) {
    if (n >= walkCap) break;
    int64_t cx = vcx + ringDx[k], cy = vcy + ringDy[k];
    if (!box.contains(int32_t(std::clamp<int64_t>(cx, -1, c.cellsPerAxis)),
                      int32_t(std::clamp<int64_t>(cy, -1, c.cellsPerAxis))))
      continue;
    uint32_t cell = uint32_t(cy) * c.cellsPerAxis + uint32_t(cx);
    uint32_t b = snap.cellStart[cell], e = snap.cellStart[cell + 1];
    if (b == e) continue;
    int32_t di = snap.denseIndex[cell];
    if (di < 0) {
      scan(b, e);
      continue;
    }
    // Dense cell: visit sub-cells nearest first from the viewer's (clamped) sub-cell. The 3 x 3
    // sub-cells around it lead that order; they are taken by their distance from the viewer itself,
    // so a viewer near a corner of its sub-cell meets the sub-cells at that corner first.
    const Snapshot::Dense d = snap.dense[size_t(di)];
    const Grid::SubGrid& sg = g.sub[d.level];
    const uint32_t Sd = sg.S, SSd = Sd * Sd;
    const uint32_t* ss = snap.subStart.data() + d.block;
    int64_t ox = cx << c.cellShift, oy = cy << c.cellShift;
    int64_t qx = std::clamp<int64_t>((vx - ox) >> sg.shift, 0, Sd - 1);
    int64_t qy = std::clamp<int64_t>((vy - oy) >> sg.shift, 0, Sd - 1);
    const uint8_t* order = sg.order.data() + size_t(qy * Sd + qx) * SSd;
    const uint32_t lead = sg.lead[size_t(qy * Sd + qx)];
    uint8_t first[9];
    nearestSubCellsFirst(order, lead, Sd, uint32_t(sg.shift), ox, oy, vx, vy, first);
    for (uint32_t j = 0; j < SSd; ++j) {
      if (n >= walkCap) break;
      uint32_t sc = j < lead ? first[j] : order[j];
      scan(ss[sc], ss[sc + 1]);
    }
  }
  r.count = n;
  r.examined = examined;
  return r;
}

}  // namespace

GatherResult gather(const Snapshot& snap, const GatherQuery& q, Candidates out) {
  // Every entity's groups hold groupsShared: when the viewer's meet those, every entity's meet
  // them too (with no groups set, groupsShared is ~0u: any viewer groups but none).
  return (snap.groupsShared & q.groups) != 0 ? gatherWith<false>(snap, q, out) : gatherWith<true>(snap, q, out);
}

}  // namespace sightline
