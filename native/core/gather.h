// Capped gather: from a viewer's position, walk its subscription box nearest cells first (sub-cells
// nearest first in dense cells), keep entities within the horizontal view radius (2D squared
// distance, inclusive), and stop once the candidate count reaches the walk cap. The cap is checked
// at cell and sub-cell boundaries, so the result may overshoot by one cell's or one sub-cell's
// occupants; within a visited cell every entity in range is kept. Cells are ordered by their
// distance from the center of the viewer's sub-cell; in a dense cell, the 3 x 3 sub-cells around
// the viewer's (clamped) one come first, by their distance from the viewer itself, then the rest by
// center distance. The walk is an approximate nearest search: the snapshot divides a cell twice as
// finely when a sub-cell would hold walkCap entities or more, and where even those hold walkCap (4
// per m^2 at the defaults) it stops inside the viewer's own sub-cell, and nearer entities just
// across its edge are not candidates (walkCap Infinity is exact). One exception bounds the cost of
// a crowd packed finer than the sub-grid (everyone on one spot): a single cell or sub-cell is
// scanned for at most 2 x walkCap - (candidates so far) entities, in snapshot order, so a capped
// walk never holds more than 2 x walkCap candidates. A box holding no more than walkCap entities is
// read row by row instead (the cap cannot bind; the same candidates, in row order).
#pragma once
#include <cstdint>

#include "snapshot.h"

namespace sightline {

// Where the gather writes its candidates, one array per field; a candidate's position in them is
// its gather order (the tie-break after the distance).
struct Candidates {
  uint64_t* d2;     // squared horizontal distance to the viewer, raw^2
  uint32_t* index;  // position in the snapshot arrays
  uint64_t* idOdo;  // entity id | odometer total << 32 (raw units, wrapping): the snapshot's, copied
                    // so the pass need not go back for them (candIdOf, candOdoOf read them)
};
// Room the arrays need beyond the snapshot's entity count (the branch-free appends write ahead).
constexpr uint32_t kGatherSlack = 16;

inline uint32_t candIdOf(uint64_t idOdo) { return uint32_t(idOdo); }
inline uint32_t candOdoOf(uint64_t idOdo) { return uint32_t(idOdo >> 32); }

struct GatherResult {
  uint32_t count;     // candidates written
  uint32_t examined;  // entities whose distance was computed
};

// One viewer's walk: where it stands (raw, any position, inside the region or not), its view radius
// (squared, raw^2) and the cell radius of its subscription box (at most the config's; the box
// must cover the radius: cellRadius x cellRaw >= the radius), the walk cap, an entity id left
// out (the avatar) or UINT32_MAX, and its visibility groups: an entity is a candidate only where
// its groups meet them (entity & viewer != 0; one AND in the scan, skipped when every entity has
// every group and so does the viewer).
struct GatherQuery {
  int64_t vx, vy;
  uint64_t radiusSq;
  uint32_t cellRadius;
  uint32_t walkCap;
  uint32_t exclude;
  uint32_t groups = ~0u;
};

// `out`'s arrays must hold snapshot.count() + kGatherSlack entries.
GatherResult gather(const Snapshot& snap, const GatherQuery& q, Candidates out);

// A walk with the config's view radius and cell radius.
inline GatherResult gather(const Snapshot& snap, int64_t vx, int64_t vy, uint64_t radiusSq, uint32_t walkCap,
                           uint32_t exclude, Candidates out) {
  return gather(snap, GatherQuery{vx, vy, radiusSq, snap.config().cellRadius, walkCap, exclude}, out);
}

}  // namespace sightline
