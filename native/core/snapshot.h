// Cell snapshot, rebuilt once per tick: live entities inside the region counting-sorted into cell
// order (x, y, id and odometer per entity; the wire's packed position apart) with cell offsets. A cell holding at least
// denseCellThreshold entities is sorted again into an S x S sub-grid inside its own range (2S x 2S
// when an S x S sub-cell would hold walkCap entities or more; see Dense).
// After the build the pass reads only the snapshot, so the game may move entities meanwhile.
//
// Entities outside the region (x or y < 0 or >= regionSize) are left out of the snapshot and
// counted in `outsideRegion`: nobody can see them until they come back. z is not clipped here;
// the wire clamps it to the vertical extent.
#pragma once
#include <cstdint>
#include <vector>

#include "codec.h"
#include "config.h"
#include "entities.h"

namespace sightline {

// One entity of the snapshot: raw position (x, y), id and odometer total.
struct SnapEntity {
  int32_t x, y;
  uint32_t id, odo;
};
static_assert(sizeof(SnapEntity) == 16, "snapshot entities are 16 bytes");

// Geometry shared by every viewer: nearest-first cell visit orders and sub-cell visit orders.
struct Grid {
  explicit Grid(const Config& c);
  // For a viewer in sub-cell (qx, qy) of its own cell, ring block q = qy * S + qx holds the
  // (2R+1)^2 cell offsets (dx, dy) ordered by the distance from that sub-cell's center to the
  // offset cell's rectangle, then dx^2 + dy^2, then dy, then dx. A viewer near a corner thus
  // visits the diagonal neighbour right after the cells beside it.
  uint32_t ringSize;
  std::vector<int8_t> ringDx, ringDy;  // S*S blocks of ringSize
  // ringEnd[q * (R + 1) + r]: how much of block q a walk with cell radius r <= R reads (one past
  // the last offset with max(|dx|, |dy|) <= r); the offsets beyond r before it are skipped.
  std::vector<uint16_t> ringEnd;
  uint32_t cellRadius;  // R
  // The sub-cell visit orders of a dense cell divided S x S (sub-cells of 2^shift raw units).
  struct SubGrid {
    uint32_t S = 0;
    int shift = 0;
    // order[(sy * S + sx) * S*S + k] = k-th nearest sub-cell index from sub-cell (sx, sy), by the
    // distance between centers (ties: lower index first).
    std::vector<uint8_t> order;
    // lead[sy * S + sx]: how many entries lead that order as the 3 x 3 block around (sx, sy) (4, 6
    // or 9: fewer at the cell's edges). The gather takes those by their distance from the viewer.
    std::vector<uint8_t> lead;
  };
  // sub[0]: the configured subGridDivisions; sub[1]: twice as fine, for the most crowded cells
  // (S = 0: none, when the configured one is already 16).
  SubGrid sub[2];
  uint32_t S;  // sub[0].S: the ring blocks' sub-cells
};

class Snapshot {
 public:
  explicit Snapshot(const Config& c);
  // plan() then fill().
  void build(const EntityStore& store) {
    plan(store);
    fill(store);
  }
  // The first half of a build: the cell of each live slot and every array the build needs, sized
  // from the positions as they are now. It writes only scratch, so the snapshot stays as it was if
  // an allocation throws (std::bad_alloc).
  void plan(const EntityStore& store);
  // The second half, for the positions and lives plan() saw (odometers may have advanced since):
  // the snapshot itself. Allocates nothing and does not throw.
  void fill(const EntityStore& store);

  uint32_t count() const { return count_; }
  uint32_t outsideRegion() const { return outsideRegion_; }
  uint32_t denseCells() const { return denseCells_; }
  uint32_t maxCellOccupancy() const { return maxCellOccupancy_; }
  // Bytes of its arrays.
  uint64_t memoryBytes() const;

  const Config& config() const { return *config_; }
  const Grid& grid() const { return grid_; }
  // How `packed` was packed.
  const PositionPacker& packer() const { return packer_; }

  // Entities of cell c are [cellStart[c], cellStart[c+1]).
  std::vector<uint32_t> cellStart;
  // Per cell: -1, or its index in `dense`.
  std::vector<int32_t> denseIndex;
  // A dense cell's sub-grid: grid().sub[level], its S*S+1 absolute offsets at subStart[block].
  // level 1 (twice as fine) when one of its level-0 sub-cells holds walkCap entities or more: a
  // sub-cell then holds about a quarter as many, and a viewer's walk takes the sub-cells around it
  // rather than stopping inside its own.
  struct Dense {
    uint32_t block;
    uint32_t level;
  };
  std::vector<Dense> dense;
  std::vector<uint32_t> subStart;
  // Per entity, in snapshot order: what the gather and the scoring read together, in one 16-byte
  // record (a candidate's fields share a cache line); apart, read only for records sent, the
  // position as an update record carries it (PositionPacker::pack of x, y and z): packed once per
  // entity and tick rather than once per record sent (some 100 times as many in a crowd).
  std::vector<SnapEntity> ents;
  std::vector<uint64_t> packed;
  // Per entity, in snapshot order, beside the records: its visibility groups (the gather ANDs them
  // with the viewer's) and its priority weight (scoring multiplies by it).
  std::vector<uint32_t> groups;
  std::vector<uint8_t> weights;
  // Whether some entity of the snapshot has groups other than every group (~0u), or a weight other
  // than 1: the gather and scoring skip the arrays above when not.
  bool groupsInUse = false, weightsInUse = false;
  // The groups every entity of the snapshot has (the AND of their groups; ~0u with none): a viewer
  // whose groups meet them sees every entity, and its gather skips the mask test.
  uint32_t groupsShared = ~0u;
  // Per slot (below the store's high-water mark): its groups as of this snapshot, for lookups by
  // id (a viewer whose groups changed checks what it holds); and the live entities whose groups
  // changed since the previous snapshot, in slot order (groupsChanged[0, groupsChangedCount)).
  std::vector<uint32_t> slotGroups;
  std::vector<uint32_t> groupsChanged;
  uint32_t groupsChangedCount = 0;
  // Per entity, in snapshot order, when the configuration has fast fields: the fields as the
  // record carries them (EntityStore::packedFields).
  std::vector<uint64_t> fields;
  // Once kinds or attributes are in use (EntityStore::stateInUse; state()): per entity, in snapshot
  // order, its kind mark | attribute mark << 32 (EntityStore::kindMarks); per slot, its kind and
  // the bytes a first sighting of it adds to a packet (a kind record unless the kind is 0, an
  // attribute entry once it has attributes).
  std::vector<uint64_t> stateMarks;
  std::vector<uint16_t> slotKind, slotExtra;
  bool state() const { return state_; }
  // Whether some live entity's kind or attributes changed since it spawned: ghosts' marks are
  // then checked against the entity's marks.
  bool stateChecks() const { return stateChecks_; }
  // The largest first-sighting size of an entity in the snapshot (0: none adds anything).
  uint32_t maxExtra() const { return maxExtra_; }
  // Per slot: the snapshot index of its entity. Not cleared between builds: a slot whose entity is
  // not in this snapshot (outside the region, despawned) may keep an older index, so a reader
  // checks i < count() && ents[i].id == id (an entity is in the snapshot at most once).
  std::vector<uint32_t> slotIndex;
  // The snapshot index of entity id, or -1 when it is not in the snapshot.
  int32_t indexOf(uint32_t id) const {
    const uint32_t slot = slotOfId(id);
    if (slot >= slotIndex.size()) return -1;
    const uint32_t i = slotIndex[slot];
    return i < count_ && ents[i].id == id ? int32_t(i) : -1;
  }

 private:
  const Config* config_;
  PositionPacker packer_;
  Grid grid_;
  uint32_t count_ = 0;
  uint32_t outsideRegion_ = 0;
  uint32_t denseCells_ = 0;
  uint32_t maxCellOccupancy_ = 0;
  uint32_t planned_ = 0, plannedOutside_ = 0, plannedHighWater_ = 0;  // from plan(), for fill()
  std::vector<uint32_t> slotCell_;  // scratch: cell of each slot this tick, or UINT32_MAX
  std::vector<uint32_t> cursor_;    // scratch: write cursor per cell / sub-cell
  std::vector<SnapEntity> tmpEnts_;
  std::vector<uint64_t> tmpPacked_;
  std::vector<uint32_t> tmpGroups_;
  std::vector<uint8_t> tmpWeights_;
  std::vector<uint64_t> tmpFields_;
  std::vector<uint64_t> tmpStateMarks_;
  bool state_ = false, stateChecks_ = false;
  uint32_t maxExtra_ = 0;
  // While the store's groups (weights) were never set: groups[0, groupsDefault_) hold ~0u
  // (weights[0, weightsDefault_) hold 1), written once rather than every tick; extendDefaults
  // brings them to the snapshot's count.
  uint32_t groupsDefault_ = 0, weightsDefault_ = 0;
  void extendDefaults(bool trackGroups, bool trackWeights);
  std::vector<uint64_t> slotPacked_;  // scratch: the packed position of each slot this tick
};

}  // namespace sightline
