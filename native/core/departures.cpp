// Departures at once, ahead of the grace window: ghosts a viewer may no longer see (visibility
// groups) and ghosts left behind by a teleport. Part of the per-viewer pass (pool threads): they
// touch the snapshot (read), the viewer's own state and the worker's scratch; no allocation, no
// lock. noteMove runs on the caller's thread, in startTick.
#include <algorithm>
#include <cstdlib>

#include "world.h"

namespace sightline {

void World::departHidden(Viewer& v, Scratch& s, const GhostLookup::Loaded& lookup) const {
  GhostTable& gt = v.ghosts;
  const uint32_t* slotGroups = snapshot_.slotGroups.data();
  const uint32_t vg = v.groups;
  uint32_t* ids = s.evicted.data();
  uint32_t count = 0;
  // A ghost the viewer may no longer see departs; one queued already (departing by the grace rule,
  // or revived since) keeps its place in the queue.
  auto check = [&](uint32_t e) {
    GhostEntry& ge = gt.at(e);
    if ((slotGroups[slotOfId(ge.id)] & vg) != 0) return;
    ge.state = kDeparting;
    if (!(ge.flags & kQueued)) ge.flags |= kQueued, ids[count++] = ge.id;
  };
  if (v.groupsScan) {
    for (uint32_t e = 0; e < gt.size(); ++e) check(e);
  } else {
    for (uint64_t k = v.groupsFrom; k < v.groupsTo; ++k) {
      const int32_t e = lookup.find(groupsLogIds_[size_t(k % kGroupsLog)]);
      if (e >= 0) check(uint32_t(e));
    }
  }
  // Ahead of every despawn queued before: in id order from the front.
  std::sort(ids, ids + count);
  for (uint32_t k = count; k > 0; --k) gt.enqueueFront(ids[k - 1]);
  s.stats.hiddenDepartures += count;
}

void World::departFar(Viewer& v, Scratch& s) const {
  GhostTable& gt = v.ghosts;
  const Snapshot& snap = snapshot_;
  const SnapEntity* ents = snap.ents.data();
  uint32_t* ids = s.evicted.data();
  uint32_t count = 0;
  // Live ghosts only: one departing already is queued (by the grace rule, a lost announcement or
  // its groups) and goes in its turn, ahead of every eviction to come.
  for (uint32_t e = 0; e < gt.size(); ++e) {
    GhostEntry& ge = gt.at(e);
    if (ge.state != kLive) continue;
    if (const int32_t idx = snap.indexOf(ge.id); idx >= 0) {
      const int64_t dx = ents[idx].x - int64_t{v.vx}, dy = ents[idx].y - int64_t{v.vy};
      if (static_cast<uint64_t>(dx * dx) + static_cast<uint64_t>(dy * dy) <= v.viewRadiusSq) continue;
    }
    ge.state = kDeparting;
    if (!(ge.flags & kQueued)) ge.flags |= kQueued, ids[count++] = ge.id;
  }
  std::sort(ids, ids + count);
  for (uint32_t k = count; k > 0; --k) gt.enqueueFront(ids[k - 1]);
  s.stats.teleportDepartures += count;
  ++s.stats.teleports;
}

void World::noteMove(Viewer& v) noexcept {
  if (!store_.isLive(v.avatarId)) {
    v.hasLast = false;
    return;
  }
  const uint32_t slot = slotOfId(v.avatarId);
  const int32_t x = store_.x()[slot], y = store_.y()[slot];
  if (v.hasLast) {
    // A horizontal move (z is not looked at). Either axis beyond the distance is a teleport; else
    // both are within it (at most the region's size, 2^26), and the squares add up in 64 bits.
    const int64_t dx = std::abs(int64_t{x} - v.lastX), dy = std::abs(int64_t{y} - v.lastY), r = v.teleportRaw;
    if (dx > r || dy > r || uint64_t(dx * dx + dy * dy) > uint64_t(r * r)) v.teleportAsked = true;
  }
  v.lastX = x, v.lastY = y, v.hasLast = true;
}

}  // namespace sightline
