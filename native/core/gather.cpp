#include "gather.h"

#include <algorithm>

#include "subscription.h"

namespace sightline {

namespace {

inline uint32_t scanRange(const Snapshot& snap, uint32_t b, uint32_t e, int64_t vx, int64_t vy, uint64_t r2,
                          uint32_t exclude, Candidate* out, uint32_t n) {
  const SnapEntity* es = snap.ents.data();
  for (uint32_t i = b; i < e; ++i) {
    int64_t dx = es[i].x - vx, dy = es[i].y - vy;
    uint64_t d2 = static_cast<uint64_t>(dx * dx) + static_cast<uint64_t>(dy * dy);
    // Branch-free append: always write, advance only when in range and not excluded.
    out[n].index = i;
    out[n].order = n;
    out[n].d2 = d2;
    n += static_cast<uint32_t>((d2 <= r2) & (es[i].id != exclude));
  }
  return n;
}

}  // namespace

GatherResult gather(const Snapshot& snap, int64_t vx, int64_t vy, uint64_t r2, uint32_t walkCap, uint32_t exclude,
                    Candidate* out) {
  const Config& c = snap.config();
  const Grid& g = snap.grid();
  int64_t vcx = cellOf(vx, c.cellShift), vcy = cellOf(vy, c.cellShift);
  Subscription box = subscriptionBox(vcx, vcy, c.cellRadius, c.cellsPerAxis);
  GatherResult r{0, 0};
  if (box.empty()) return r;
  uint32_t n = 0, examined = 0;
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
  const uint32_t S = g.S, SS = S * S;
  // The viewer's sub-cell within its own cell picks the visit order of the cells around it.
  const int64_t ownQx = (vx - (vcx << c.cellShift)) >> c.subShift, ownQy = (vy - (vcy << c.cellShift)) >> c.subShift;
  const size_t ringBase = size_t(ownQy * S + ownQx) * g.ringSize;
  const int8_t* ringDx = g.ringDx.data() + ringBase;
  const int8_t* ringDy = g.ringDy.data() + ringBase;
  // One cell or sub-cell is scanned for at most 2 x walkCap - n entities (snapshot order): a crowd
  // packed onto one spot, finer than the sub-grid, costs no more than that. Uncapped walks scan all.
  const bool capped = walkCap < (1u << 30);
  auto scan = [&](uint32_t b, uint32_t e) {
    if (capped && e - b > 2 * walkCap - n) e = b + (2 * walkCap - n);
    n = scanRange(snap, b, e, vx, vy, r2, exclude, out, n);
    examined += e - b;
  };
  // `out` has room for snap.count() + 1 entries: the branch-free append writes one past the end.
  for (size_t k = 0; k < g.ringSize; ++k) {
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
    // Dense cell: visit sub-cells nearest first from the viewer's (clamped) sub-cell.
    const uint32_t* ss = snap.subStart.data() + size_t(di) * (SS + 1);
    int64_t ox = cx << c.cellShift, oy = cy << c.cellShift;
    int64_t qx = std::clamp<int64_t>((vx - ox) >> c.subShift, 0, S - 1);
    int64_t qy = std::clamp<int64_t>((vy - oy) >> c.subShift, 0, S - 1);
    const uint8_t* order = g.subOrder.data() + size_t(qy * S + qx) * SS;
    for (uint32_t j = 0; j < SS; ++j) {
      if (n >= walkCap) break;
      uint32_t sc = order[j];
      scan(ss[sc], ss[sc + 1]);
    }
  }
  r.count = n;
  r.examined = examined;
  return r;
}

}  // namespace sightline
