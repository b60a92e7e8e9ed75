// Subscription: the box of cells within the cell radius of a viewer's cell, clipped to the region.
// Stored as four edges (inclusive), so membership is four comparisons and the box never allocates.
#pragma once
#include <algorithm>
#include <cstdint>

namespace sightline {

struct Subscription {
  int32_t x0 = 0, x1 = -1, y0 = 0, y1 = -1;  // inclusive cell bounds; empty when x0 > x1 or y0 > y1

  bool empty() const { return x0 > x1 || y0 > y1; }
  bool contains(int32_t cx, int32_t cy) const { return cx >= x0 && cx <= x1 && cy >= y0 && cy <= y1; }
  uint32_t cellCount() const { return empty() ? 0 : uint32_t(x1 - x0 + 1) * uint32_t(y1 - y0 + 1); }
  bool operator==(const Subscription& o) const {
    return (empty() && o.empty()) || (x0 == o.x0 && x1 == o.x1 && y0 == o.y0 && y1 == o.y1);
  }
};

// Cell of a raw coordinate: floor(raw / cellSize). The arithmetic shift floors, so -0.3 m is cell -1.
inline int64_t cellOf(int64_t raw, int cellShift) { return raw >> cellShift; }

// Box around (cx, cy), any cell coordinates including ones outside the grid, clipped to [0, cells).
// A viewer beyond an edge gets a narrower box, or an empty one; never inverted bounds past the grid.
inline Subscription subscriptionBox(int64_t cx, int64_t cy, uint32_t cellRadius, uint32_t cellsPerAxis) {
  Subscription s;
  int64_t hi = int64_t{cellsPerAxis} - 1;
  int64_t x0 = std::max<int64_t>(cx - cellRadius, 0), x1 = std::min<int64_t>(cx + cellRadius, hi);
  int64_t y0 = std::max<int64_t>(cy - cellRadius, 0), y1 = std::min<int64_t>(cy + cellRadius, hi);
  if (x0 > x1 || y0 > y1) return Subscription{};
  s.x0 = int32_t(x0), s.x1 = int32_t(x1), s.y0 = int32_t(y0), s.y1 = int32_t(y1);
  return s;
}

// Cells entered (in `next`, not in `prev`) and left (in `prev`, not in `next`), for moves of any
// length: both boxes are walked and tested for membership in the other. `emit(cx, cy)` per cell.
template <typename FnEntered, typename FnLeft>
inline void subscriptionDiff(const Subscription& prev, const Subscription& next, FnEntered entered, FnLeft left) {
  for (int32_t y = next.y0; y <= next.y1 && !next.empty(); ++y)
    for (int32_t x = next.x0; x <= next.x1; ++x)
      if (!prev.contains(x, y)) entered(x, y);
  for (int32_t y = prev.y0; y <= prev.y1 && !prev.empty(); ++y)
    for (int32_t x = prev.x0; x <= prev.x1; ++x)
      if (!next.contains(x, y)) left(x, y);
}

}  // namespace sightline
