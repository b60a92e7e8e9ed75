// The per-viewer pass: subscription, capped gather, ghost-cap eligibility, scoring (the priority
// accumulator), budget, selection, ghost bookkeeping and packet assembly. Runs on pool threads;
// touches only the snapshot (read), this viewer's state and this worker's scratch.
#include <algorithm>
#include <functional>

#include "budget.h"
#include "codec.h"
#include "fixed.h"
#include "world.h"

namespace sightline {

namespace {

// Score descending, then candidate order (nearest cells first): a strict total order, so the
// selection is the same whatever the thread count.
template <typename Scored>
inline bool higher(const Scored& a, const Scored& b) {
  return a.score != b.score ? a.score > b.score : a.order < b.order;
}

// The `take` highest entries of sc[0, m) under `higher`, moved to sc[0, take) (in no particular
// order). Selects the threshold score on a plain u64 array, then takes everything above it and the
// earliest-ordered ties at it: cheaper than selecting the structs themselves.
template <typename Scored>
inline void selectTop(Scored* sc, uint32_t m, uint32_t take, uint64_t* keys, Scored* ties) {
  for (uint32_t i = 0; i < m; ++i) keys[i] = sc[i].score;
  std::nth_element(keys, keys + (take - 1), keys + m, std::greater<uint64_t>());
  const uint64_t thr = keys[take - 1];
  uint32_t above = 0, t = 0;
  for (uint32_t i = 0; i < m; ++i) {
    if (sc[i].score > thr) sc[above++] = sc[i];
    else if (sc[i].score == thr) ties[t++] = sc[i];
  }
  uint32_t need = take - above;
  if (t > need)
    std::nth_element(ties, ties + need, ties + t, [](const Scored& a, const Scored& b) { return a.order < b.order; });
  for (uint32_t i = 0; i < need; ++i) sc[above + i] = ties[i];
}

}  // namespace

void World::serve(Viewer& v, Scratch& s) {
  const Config& c = config_;
  const Snapshot& snap = snapshot_;
  TickStats& st = s.stats;
  GhostTable& gt = v.ghosts;
  const uint32_t now = ++v.passes;
  ++st.served;

  // Subscription box (cells within the cell radius); a change is counted.
  Subscription box = subscriptionBox(cellOf(v.vx, c.cellShift), cellOf(v.vy, c.cellShift), c.cellRadius,
                                     c.cellsPerAxis);
  if (v.hasBox && !(box == v.box)) ++st.subscriptionChanges;
  v.box = box, v.hasBox = true;

  // Capped gather, then the nearest ghostCap candidates are eligible.
  Candidate* cand = s.candidates.data();
  GatherResult g = gather(snap, v.vx, v.vy, c.viewRadiusSq, c.walkCap, v.avatarId, cand);
  st.candidates += g.count;
  st.examined += g.examined;
  uint32_t n = g.count;
  if (n > c.ghostCap) {
    std::nth_element(cand, cand + c.ghostCap, cand + n, [](const Candidate& a, const Candidate& b) {
      return a.d2 != b.d2 ? a.d2 < b.d2 : a.order < b.order;
    });
    n = c.ghostCap;
  }
  st.eligible += n;

  // Score: drift x weight[band]. Held ghosts are stamped (and revived if departing).
  const uint32_t* odo = snap.odo.data();
  const uint32_t* ids = snap.ids.data();
  Scored* sc = s.scored.data();
  uint32_t m = 0, newPositive = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Candidate& k = cand[i];
    uint32_t id = ids[k.index];
    int32_t e = gt.find(id);
    uint32_t drift, isNew;
    if (e >= 0) {
      GhostEntry& ge = gt.at(uint32_t(e));
      ge.stamp = now;
      ge.departing = 0;
      drift = odo[k.index] - ge.mark;  // wrapping subtraction
      isNew = 0;
    } else {
      drift = c.newDrift;
      isNew = 1;
    }
    // drift < 2^32 and weight < 2^32: the product fits in 64 bits, so it never saturates.
    uint64_t score = uint64_t{drift} * c.bandWeights[ilog2(k.d2)];
    if (score == 0) continue;  // the cut at the first zero score
    sc[m++] = Scored{score, k.order, k.index, isNew};
    newPositive += isNew;
  }

  // Despawn records first (queued by the previous pass's evictions), at most half the state bytes.
  uint8_t* out = output_[tick_ & 1].data() + v.outOffset;
  uint8_t* p = out + kHeaderBytes;
  Budget budget = packetBudget(v.payloadBytes, 0);
  uint32_t despawns = 0;
  for (uint32_t q = gt.queueSize(); q > 0; --q) {
    uint32_t id = gt.queueFront();
    int32_t e = gt.find(id);
    if (e < 0) { gt.dequeue(); continue; }
    GhostEntry& ge = gt.at(uint32_t(e));
    if (!ge.departing) {  // revived since it was queued
      ge.queued = 0;
      gt.dequeue();
    } else if (despawns < budget.maxDespawns) {
      putU32(p, id);
      p += kDespawnRecordBytes;
      ++despawns;
      gt.remove(uint32_t(e));
      gt.dequeue();
    } else {
      gt.requeueFront();
    }
  }
  st.despawns += despawns;

  // Selection: the top `slots` by score. New ghosts need room in the table.
  uint32_t slots = updateSlots(budget, despawns);
  uint32_t room = gt.capacity() - gt.size();
  uint32_t take;
  if (newPositive <= room) {
    take = std::min(m, slots);
    if (m > slots && take > 0) selectTop(sc, m, take, s.keys.data(), s.ties.data());
  } else {
    std::sort(sc, sc + m, higher<Scored>);
    take = 0;
    uint32_t left = room;
    for (uint32_t i = 0; i < m && take < slots; ++i) {
      if (sc[i].isNew) {
        if (left == 0) { ++st.ghostTableFull; continue; }
        --left;
      }
      sc[take++] = sc[i];
    }
  }

  // Assembly and bookkeeping: a sent ghost records its mark and position.
  const int32_t *xs = snap.x.data(), *ys = snap.y.data(), *zs = snap.z.data();
  uint32_t newGhosts = 0;
  for (uint32_t i = 0; i < take; ++i) {
    const Scored& r = sc[i];
    uint32_t idx = r.index, id = ids[idx];
    writeUpdate(p, id, packer_.pack(xs[idx], ys[idx], zs[idx]));
    p += kRecordBytes;
    uint32_t e;
    if (r.isNew) {
      e = gt.insert(id, odo[idx], now);
      ++newGhosts;
    } else {
      e = uint32_t(gt.find(id));
      gt.at(e).mark = odo[idx];
    }
    // What the client now believes: the position as it decodes from the wire.
    GhostPosition& gp = gt.positionAt(e);
    gp.x = xs[idx], gp.y = ys[idx], gp.z = zs[idx];
  }
  st.records += take;
  st.newGhosts += newGhosts;

  // Eviction: a ghost not stamped within the grace window departs; its despawn goes out next pass.
  const uint32_t grace = c.graceTicks;
  for (uint32_t i = 0, sz = gt.size(); i < sz; ++i) {
    GhostEntry& ge = gt.at(i);
    if (ge.departing || now - ge.stamp <= grace) continue;
    ge.departing = 1;
    if (!ge.queued) {
      ge.queued = 1;
      gt.enqueue(ge.id);
    }
  }

  writeHeader(out, PacketHeader{v.sequence++, tick_, uint16_t(despawns), uint16_t(take)});
  v.outLength = uint32_t(p - out);
  st.bytes += v.outLength;
}

}  // namespace sightline
