// Over 500 lines as one file: the per-viewer pass is one sequence, read top to bottom; its parts with a concept of their own are in gather, select, ghost, departures, budget and codec.
// The per-viewer pass: subscription, capped gather, ghost-cap eligibility, scoring (the priority
// accumulator, over the eligible candidates and the held ghosts past the cap), budget, selection, ghost bookkeeping and packet assembly. Runs on pool threads;
// touches only the snapshot (read), this viewer's state and this worker's scratch. No allocation,
// no lock, no call out.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>

#include "budget.h"
#include "codec.h"
#include "fixed.h"
#include "sections.h"
#include "select.h"
#include "world.h"

namespace sightline {

namespace {

// Scoring's rarer cases, for a candidate whose entry is e (or -1) and whose odometer reads odo:
// not held (new), announced again (its announcement was lost: unheld), or
// held with something pending (departing: revived; queued). Stamps a held entry with this pass.
// Returns drift | fresh << 32.
// Returns drift | fresh << 32 | boosted << 33 (boosted: the entry is flagged kBoosted).
__attribute__((noinline)) uint64_t driftOfOther(GhostTable& gt, int32_t e, uint32_t odo, uint16_t pass,
                                                uint32_t newDrift) {
  if (e < 0) return uint64_t{newDrift} | uint64_t{1} << 32;
  GhostEntry& ge = gt.at(uint32_t(e));
  const uint8_t state = ge.state, flags = ge.flags;
  const uint32_t mark = ge.mark;
  ge.lastSeen = pass;
  if (state == kDeparting) ge.state = kLive;
  const uint64_t boosted = uint64_t{(flags & kBoosted) != 0} << 33;
  if (flags & kUnheld) return uint64_t{newDrift} | uint64_t{1} << 32 | boosted;
  return (odo - mark) | boosted;
}

// The update records of the chosen candidates, in packet order: sc[chosen[i]] for i < take, or
// sc[i] when chosen is null. The mark of each held ghost sent becomes its odometer now; the packet
// positions i of the others (new ghosts, and ghosts announced again), which need more than that,
// go to `other`, their count to *otherCount. Returns the end of the records. A function of its own
// (not inlined): the record stores are byte stores, which the compiler must assume may change any
// value in memory, so inside the pass it reloaded the arrays' addresses and the flags for every
// record (measured: uniform 6% faster apart).
// With kFields, each record carries fields[idx] (fieldBytes of it) after the position. With
// kMarks, a held ghost last sent before its entity's kind or attributes changed (its mark below the
// entity's kind or attribute mark in marks[idx]) goes to `other` too, its mark left for the caller.
// work: scratch for take words.
template <bool kChosen, bool kFields, bool kMarks>
__attribute__((noinline)) uint8_t* writeRecords(uint8_t* p, const World::Scored* sc, const uint32_t* chosen,
                                                uint32_t take, const uint32_t* candIndex, const SnapEntity* ents,
                                                const uint64_t* packed, const uint64_t* fields, uint32_t fieldBytes,
                                                const uint64_t* marks, GhostEntry* entries, uint32_t* other,
                                                uint32_t* otherCount, uint64_t* work) {
  uint32_t* const otherStart = other;
  // The records but the last are written with fields in one 8-byte store (the next record
  // overwrites what lies past them); the last one's fields byte by byte (nothing after the
  // packet is written).
  if constexpr (kMarks) {
    // Two loops, the records then the marks: one loop over both kept more values live than there
    // are registers, and reloaded them from the stack for every record. The records loop leaves
    // the marks loop each record's snapshot index and its scored entry and fresh flag in work[i],
    // read in order, rather than the scored and chosen arrays again.
    // The marks loop's reads of the snapshot's marks are random (packet order): asked for here,
    // they arrive meanwhile. (Its ghost entries were read by the scoring just before.)
    static_assert(sizeof(World::Scored) == 8 && offsetof(World::Scored, entry) == 4 && offsetof(World::Scored, fresh) == 6,
                  "a scored candidate is order | entry << 32 | fresh << 48");
    auto record = [&](uint32_t i, bool slack) __attribute__((always_inline)) {
      uint64_t r;
      std::memcpy(&r, sc + (kChosen ? chosen[i] : i), 8);
      const uint32_t idx = candIndex[uint32_t(r)];
      __builtin_prefetch(marks + idx);
      work[i] = (r & 0xffffffff00000000u) | idx;
      writeUpdate(p, ents[idx].id, packed[idx]);
      if constexpr (kFields) {
        writeFields(p + kRecordBytes, fields[idx], fieldBytes, slack);
        p += kRecordBytes + fieldBytes;
      } else {
        p += kRecordBytes;
      }
    };
    if (take > 0) {
      for (uint32_t i = 0; i + 1 < take; ++i) record(i, true);
      record(take - 1, false);
    }
    for (uint32_t i = 0; i < take; ++i) {
      const uint64_t w = work[i];
      const uint32_t idx = uint32_t(w), held = uint32_t(w >> 32);  // entry | fresh << 16
      bool plain = (held & 0xffff8000u) == 0;  // a held ghost (entry >= 0) with fresh 0
      if (plain) {
        const uint32_t mark = entries[held].mark;
        const uint64_t m = marks[idx];
        plain = int32_t(mark - uint32_t(m)) >= 0 && int32_t(mark - uint32_t(m >> 32)) >= 0;
      }
      if (plain) [[likely]] {
        entries[held].mark = ents[idx].odo;
      } else {
        *other++ = i;
      }
    }
    *otherCount = uint32_t(other - otherStart);
    return p;
  }
  auto record = [&](uint32_t i, bool slack) __attribute__((always_inline)) {
    const World::Scored r = sc[kChosen ? chosen[i] : i];
    const uint32_t idx = candIndex[r.order];
    const SnapEntity se = ents[idx];
    writeUpdate(p, se.id, packed[idx]);
    if constexpr (kFields) {
      writeFields(p + kRecordBytes, fields[idx], fieldBytes, slack);
      p += kRecordBytes + fieldBytes;
    } else {
      p += kRecordBytes;
    }
    if (r.entry >= 0 && r.fresh == 0) [[likely]] {
      entries[r.entry].mark = se.odo;
    } else {
      *other++ = i;
    }
  };
  if (take > 0) {
    for (uint32_t i = 0; i + 1 < take; ++i) record(i, true);
    record(take - 1, false);
  }
  *otherCount = uint32_t(other - otherStart);
  return p;
}

using RecordWriter = uint8_t* (*)(uint8_t*, const World::Scored*, const uint32_t*, uint32_t, const uint32_t*,
                                   const SnapEntity*, const uint64_t*, const uint64_t*, uint32_t, const uint64_t*,
                                   GhostEntry*, uint32_t*, uint32_t*, uint64_t*);

// writeRecords for this packet: through `chosen` or not, with fields or not, checking marks or not.
RecordWriter recordWriter(bool chosen, bool fields, bool marks) {
  static constexpr RecordWriter table[8] = {
      writeRecords<false, false, false>, writeRecords<false, false, true>, writeRecords<false, true, false>,
      writeRecords<false, true, true>,   writeRecords<true, false, false>, writeRecords<true, false, true>,
      writeRecords<true, true, false>,   writeRecords<true, true, true>,
  };
  return table[(chosen ? 4 : 0) | (fields ? 2 : 0) | (marks ? 1 : 0)];
}

// How many ghost table entries one repeat scan (fillAttributes, viewers without acknowledgements)
// looks at, before the table's size bounds it: twice the share due a pass, at least 16.
inline uint32_t repeatScan(uint32_t size, uint32_t K) { return std::max<uint32_t>(16, 2 * ((size + K - 1) / K)); }

}  // namespace

// The kinds' and attributes' floor of a packet with `stateBytes` for records and sections:
// attributeShare of them, and at least two section counts, a kind record and the largest
// attribute entry (so one first sighting always fits), at most all of them.
uint32_t World::sectionFloor(uint32_t stateBytes) const {
  const Config& c = config_;
  const uint32_t least = 2 * kSectionCountBytes + kKindRecordBytes + (c.attributeBytes ? kAttributeHeaderBytes + c.attributeBytes : 0);
  return std::min(stateBytes, std::max(uint32_t((uint64_t{stateBytes} * c.attributeShareQ16) >> 16), least));
}

void World::serve(Viewer& v, Scratch& s) {
  const Config& c = config_;
  const Snapshot& snap = snapshot_;
  TickStats& st = s.stats;
  GhostTable& gt = v.ghosts;
  ++v.passes;
  ++st.served;

  // Acknowledgements: this packet's slot in the log. A packet still unresolved there, 64 packets
  // on, is taken as lost once the client has acknowledged anything (it went silent: an outage;
  // what it carried is sent again), else as assumed delivered (a client that never acknowledges
  // gets what a viewer without acknowledgements gets). Done first: it may remove entries.
  AckLog* log = v.ackLog.get();
  const uint32_t logSlot = v.sequence % AckLog::kPackets;
  if (log && log->packets[logSlot].used) {
    if (log->acknowledging) {
      resolvePacket(v, log->packets[logSlot], logSlot, AckLog::Lost);
      ++log->expired;
    } else {
      resolvePacket(v, log->packets[logSlot], logSlot, AckLog::Assumed);
    }
  }

  // The attribute queue's front, and for viewers without acknowledgements the attribute states the
  // repeat scan (fillAttributes) will read, asked for now (they are cold: read once per K passes),
  // so they arrive while the gather runs.
  if (gt.tracksAttributes()) gt.prefetchAttributeQueue();
  if (gt.tracksAttributes() && c.attributeRepeatPasses > 0 && !(log && log->acknowledging) && gt.size() > 0) {
    // Two scans' worth: the fill after the records goes on where the one before them stopped.
    const uint32_t size = gt.size(), scan = std::min(2 * repeatScan(size, c.attributeRepeatPasses), size);
    const uint32_t from = v.attributeCursor % size;
    const uint32_t head = std::min(scan, size - from);
    gt.prefetchAttributes(from, head);
    if (head < scan) gt.prefetchAttributes(0, scan - head);
  }

  // Subscription box (cells within the cell radius); a change is counted.
  Subscription box = subscriptionBox(cellOf(v.vx, c.cellShift), cellOf(v.vy, c.cellShift), v.cellRadius,
                                     c.cellsPerAxis);
  if (v.hasBox && !(box == v.box)) ++st.subscriptionChanges;
  v.box = box, v.hasBox = true;

  // Capped gather, then the nearest ghostCap candidates (distance, then gather order) are eligible
  // (the caps in use: setCaps may have lowered them).
  const uint64_t* candD2 = s.candD2.data();
  const uint32_t* candIndex = s.candIndex.data();
  const uint64_t* candIdOdo = s.candIdOdo.data();
  GatherResult g = gather(snap, GatherQuery{v.vx, v.vy, v.viewRadiusSq, v.cellRadius, walkCap_, v.avatarId, v.groups},
                          Candidates{s.candD2.data(), s.candIndex.data(), s.candIdOdo.data()});
  st.candidates += g.count;
  st.examined += g.examined;
  uint32_t n = g.count;
  uint32_t* eligible = s.eligible.data();
  const uint32_t ghostCap = ghostCap_;
  const bool allEligible = n <= ghostCap;
  if (!allEligible) {
    // The nearest ghostCap: first by a band of +-1/32 around last pass's threshold distance (it
    // moves little from one pass to the next), else by the radix select.
    auto d2Of = [candD2](uint32_t i) { return candD2[i]; };
    auto nearer = [candD2](uint32_t i, uint32_t j) { return candD2[i] != candD2[j] ? candD2[i] < candD2[j] : i < j; };
    const uint64_t hint = v.eligibleHint;
    if (hint == 0 || !keepSmallestNear(n, ghostCap, eligible, s.indices.data(), hint - (hint >> 5), hint + (hint >> 5),
                                       d2Of, nearer, &v.eligibleHint, candD2)) {
      logBuckets(candD2, n, false, s.buckets.data());
      keepSmallest(n, ghostCap, eligible, s.buckets.data(), s.indices.data(),
                   [candD2](uint32_t i, uint32_t b) { return subBucket(candD2[i], b); }, nearer);
      uint64_t farthest = 0;
      for (uint32_t i = 0; i < ghostCap; ++i) farthest = std::max(farthest, candD2[eligible[i]]);
      v.eligibleHint = farthest;
    }
    n = ghostCap;
  }
  st.eligible += n;

  // Eviction: a live ghost not eligible on more than the grace window's passes (up to the previous
  // one) departs; its despawn record goes out with this pass at the earliest. Evicted ids are
  // queued in id order, so the despawn order does not depend on the table's layout.
  const uint16_t pass = uint16_t(v.passes);
  // Entries entries[0, count) depart; those not queued yet join the despawn queue in id order.
  auto depart = [&](const uint32_t* entries, uint32_t count) {
    uint32_t queued = 0;
    for (uint32_t k = 0; k < count; ++k) {
      GhostEntry& ge = gt.at(entries[k]);
      ge.state = kDeparting;
      if (!(ge.flags & kQueued)) {
        ge.flags |= kQueued;
        s.evicted[queued++] = ge.id;
      }
    }
    std::sort(s.evicted.data(), s.evicted.data() + queued);
    for (uint32_t k = 0; k < queued; ++k) gt.enqueue(s.evicted[k]);
  };
  // With no hidden or far departures on this pass, the grace rule's departures wait for the scan
  // of the unstamped ghosts after scoring (one scan of the table instead of two): the same ghosts
  // depart, in the same queue order. A stale ghost eligible again would have departed and been
  // revived by its scoring (nothing sent for it in between), so leaving it live is the same.
  const bool hiding = v.groupsScan || v.groupsFrom != v.groupsTo;
  const bool graceLater = !hiding && !v.teleporting;
  if (!graceLater) depart(s.stale.data(), gt.stale(pass, c.graceTicks, s.stale.data()));
  const GhostLookup::Loaded lookup = s.lookup.load(gt);
  if (hiding) departHidden(v, s, lookup);
  if (v.teleporting) departFar(v, s);

  // Score: drift x weight[band]; drift = odometer now - mark (wrapping), or newDrift when the
  // client does not hold it. Held ghosts are stamped with this pass (and revived if departing).
  const SnapEntity* ents = snap.ents.data();
  World::Scored* sc = s.scored.data();
  uint64_t* scores = s.scores.data();
  GhostEntry* const entries = &gt.at(0);
  const uint32_t* const weights = c.bandWeights.data();
  // Priority: each entity's weight, and the viewer's boost of the entities in its set: held ones
  // are flagged in their entries (kBoosted, off the common path), new ones found by slot in this
  // worker's map, marked for as long as the viewer is served.
  const uint8_t* const entityWeights = snap.weights.data();
  const bool entityWeighted = snap.weightsInUse;
  uint32_t* const boostIds = s.boostIds.data();
  const bool boosting = !v.boost.empty();
  const uint64_t boostFactor = v.boostFactor;
  if (boosting)
    for (uint32_t id : v.boost)
      if (slotOfId(id) < s.boostIds.size()) boostIds[slotOfId(id)] = id;
  uint32_t m = 0, newPositive = 0;
  // Kinds and attributes in use: the fresh candidates (new, or announced again) and the most a
  // first sighting of one adds to the packet (its kind record and attribute entry).
  const bool stateOn = snap.state();
  const uint16_t* const slotExtra = stateOn ? snap.slotExtra.data() : nullptr;
  const AttributeStore* const freshAttributes = stateOn && store_.attributes().enabled() ? &store_.attributes() : nullptr;
  uint32_t freshPositive = 0, maxNewExtra = 0;
  // A fresh (new, or announced again) or boosted candidate's score times its factor: a fresh one's
  // newDrift times its entity's weight (a held ghost's drift carries the weight already: the
  // odometer grows by it, EntityStore::advanceOdometer), and a boosted one's times the viewer's
  // boost. With those (at most 16 x 16) the product may not fit: it saturates. boosted: for a
  // candidate without an entry (isNew), whether the viewer's set has it is looked up here. Off the
  // common path, and not inlined, so that none of it is computed there.
  auto scaledScore = [&](uint64_t score, uint32_t i, uint32_t id, bool fresh, bool isNew, bool boosted) __attribute__((noinline)) {
    if (isNew) boosted = boosting && boostIds[slotOfId(id)] == id;
    const uint64_t f = uint64_t{fresh && entityWeighted ? entityWeights[candIndex[i]] : 1u} * (boosted ? boostFactor : 1u);
    return f != 1 && __builtin_mul_overflow(score, f, &score) ? UINT64_MAX : score;
  };
  // A fresh candidate i (id) that will score positive: its drift is newDrift, and the entity's
  // weight and the viewer's boost (at least 1 each, the product saturating) leave a score above 0
  // nonzero, so that is when newDrift x its band's weight is. Off the common path.
  auto noteFresh = [&](uint32_t i, uint32_t id) __attribute__((always_inline)) {
    if (uint64_t{c.newDrift} * weights[ilog2(candD2[i])] == 0) return;
    ++freshPositive;
    maxNewExtra = std::max<uint32_t>(maxNewExtra, slotExtra[slotOfId(id)]);
    if (freshAttributes) __builtin_prefetch(freshAttributes->entry(slotOfId(id)));  // its announcement may send them
  };
  // Candidate i, whose lookup word is w (entry index + 1, or 0). The common case, a live ghost
  // the client holds with nothing pending (state and flags zero), is inline; the rest is
  // driftOfOther's.
  // kWeighted: entity weights or a boost set in use (else every factor is 1: boostFactor is 1 and no
  // entry is flagged kBoosted while the set is empty); kState: kinds or attributes in use. The
  // common case has no factor either way: its entry is not flagged kBoosted.
  auto score = [&]<bool kWeighted, bool kState>(uint32_t i, uint32_t w) __attribute__((always_inline)) {
    const uint64_t idOdo = candIdOdo[i];
    const uint32_t id = candIdOf(idOdo);
    uint32_t drift, fresh = 0, boosted = 0;
    int32_t e = int32_t(w) - 1;
    if (w != 0 && entries[w - 1].id == id && (entries[w - 1].state | entries[w - 1].flags) == 0) [[likely]] {
      GhostEntry& ge = entries[w - 1];
      drift = candOdoOf(idOdo) - ge.mark;  // read before the stamp is stored (a load behind a store to its word may wait)
      ge.lastSeen = pass;
    } else if (w == 0) {  // not held (the map has no entry of its slot): new
      drift = c.newDrift, fresh = 1;
      gt.prefetchIndex(id);  // it may be inserted
      ++newPositive;  // undone below when its score is zero
      if constexpr (kState) noteFresh(i, id);
    } else {
      e = lookup.resolve(w, id);
      const uint64_t r = driftOfOther(gt, e, candOdoOf(idOdo), pass, c.newDrift);
      drift = uint32_t(r), fresh = uint32_t(r >> 32) & 1, boosted = uint32_t(r >> 33) & 1;
      if (e < 0) gt.prefetchIndex(id);  // it may be inserted
      newPositive += e < 0;  // undone below when its score is zero
      if constexpr (kState)
        if (fresh) noteFresh(i, id);
    }
    // band = ilog2(d2). drift < 2^32 and weight < 2^32: the product fits in 64 bits.
    uint64_t score = uint64_t{drift} * weights[ilog2(candD2[i])];
    if (kWeighted && (fresh | boosted)) [[unlikely]] score = scaledScore(score, i, id, fresh != 0, e < 0, boosted != 0);
    if (score == 0) {  // the cut at the first zero score: unmoved since last sent
      newPositive -= e < 0;
      return;
    }
    scores[m] = score;
    sc[m++] = World::Scored{i, int16_t(e), uint16_t(fresh)};
  };
  auto scoreAll = [&]<bool kWeighted, bool kState>() __attribute__((always_inline)) {
    if (allEligible) {
      for (uint32_t i = 0; i < n; ++i) score.template operator()<kWeighted, kState>(i, lookup.word(candIdOf(candIdOdo[i])));
    } else {
      // The map words first, in a loop of loads alone (many in flight at once; measured faster
      // here, slower for the few candidates of the branch above).
      uint16_t* words = s.words.data();
      for (uint32_t j = 0; j < n; ++j) words[j] = uint16_t(lookup.word(candIdOf(candIdOdo[eligible[j]])));
      for (uint32_t j = 0; j < n; ++j) score.template operator()<kWeighted, kState>(eligible[j], words[j]);
    }
  };
  // The loop made for what is in use: the position-only one carries none of the factors' or the
  // sections' work.
  if (entityWeighted || boosting) {
    if (stateOn) scoreAll.template operator()<true, true>();
    else scoreAll.template operator()<true, false>();
  } else {
    if (stateOn) scoreAll.template operator()<false, true>();
    else scoreAll.template operator()<false, false>();
  }

  // The attribute repeat scan of viewers without acknowledgements (fillAttributes): the entries
  // of the ghost table due again (live, held, not queued, attributes last sent attributeRepeatPasses
  // or more passes ago) among the scan's window, `scan` entries from the viewer's cursor (the index
  // after the last one looked at, possibly size: taken modulo the size the call sees), wrapping
  // once; their indices go to due (in window order), their count is returned. Without branches
  // (whether one is due is not predictable): every index is written, the count advanced by the test.
  static_assert(offsetof(GhostEntry, lastSeen) == 8 && offsetof(GhostEntry, state) == 10 && offsetof(GhostEntry, flags) == 11,
                "an entry's third dword is lastSeen | state << 16 | flags << 24");
  static_assert(offsetof(GhostAttribute, lastPass) == 4 && offsetof(GhostAttribute, queued) == 6,
                "an attribute state is acked | lastPass << 32 | queued << 48 | unused << 56");
  auto findDue = [&](uint32_t* due) {
    const uint32_t K = c.attributeRepeatPasses, size = gt.size();
    uint32_t found = 0;
    auto scanRange = [&](uint32_t from, uint32_t to) {
      for (uint32_t e = from; e < to; ++e) {
        uint32_t meta;
        uint64_t a;
        std::memcpy(&meta, reinterpret_cast<const uint8_t*>(entries + e) + 8, 4);
        std::memcpy(&a, &gt.attributeAt(e), 8);
        const bool isDue = ((meta >> 16) & (0xffu | uint32_t{kUnheld} << 8)) == 0 && ((a >> 48) & 0xff) == 0 &&
                           uint16_t(pass - uint16_t(a >> 32)) >= K;
        due[found] = e;
        found += isDue;
      }
    };
    const uint32_t scan = std::min(repeatScan(size, K), size);
    const uint32_t e0 = v.attributeCursor % size, head = std::min(scan, size - e0);
    scanRange(e0, e0 + head);
    scanRange(0, scan - head);
    return found;
  };
  // The attribute entries (the pass slab: a random slot each, cold) of entries due[0, count), both
  // lines of one that crosses a line, asked for together.
  auto askForAttributes = [&](const uint32_t* due, uint32_t count) {
    const AttributeStore& slab = store_.attributes();
    const uint32_t last = slab.stride() - 1;
    for (uint32_t j = 0; j < count; ++j) {
      const uint8_t* entry = slab.entry(slotOfId(entries[due[j]].id));
      __builtin_prefetch(entry);
      __builtin_prefetch(entry + last);
    }
  };
  // The first fill's repeat scan is done here, into s.lists (free until the selection), so that
  // its attribute entries arrive during the rest of the pass before that fill, rather than as
  // they are sent. It finds what that fill's own scan would: the window is the same (the cursor
  // and the table's size do not change before it), no entry's attribute state changes before it
  // but in the fill's queue walk (which either sends an entry, after which it is not due, or
  // takes a queued one off the queue without sending anything, which a repeat send would not
  // either), and the entries that depart meanwhile are passed over by the fill.
  uint32_t earlyDue = 0;
  bool earlyScanned = false;
  if (stateOn && gt.tracksAttributes() && c.attributeRepeatPasses > 0 && !(log && log->acknowledging) && gt.size() > 0) {
    earlyDue = findDue(s.lists.data());
    earlyScanned = true;
    askForAttributes(s.lists.data(), earlyDue);
  }

  // Held ghosts not eligible on this pass (past the ghost cap, or beyond where the walk stopped)
  // that are still within the view radius: scored too, as candidates appended after the gather's,
  // so that what the client shows while the grace window keeps them (the edge of the cap does not
  // flicker) is kept up to date instead of frozen. They are not stamped: the window still runs
  // out for a ghost that stays past the cap. Only live ghosts with nothing pending (one the client
  // may not hold, unheld, is announced again only once eligible). In table order: a pure function
  // of the viewer's state.
  {
    uint64_t* cd2 = s.candD2.data();
    uint32_t* cix = s.candIndex.data();
    uint64_t* cio = s.candIdOdo.data();
    uint32_t q = g.count;
    // Live and not stamped on this pass (stale as of the next pass with no grace), 16 at a time
    // where the CPU has vectors.
    // With graceLater, those past the grace window (not eligible on more than graceTicks passes
    // before this one) depart instead, their indices kept in front of the list.
    uint32_t* unstamped = s.stale.data();
    const uint32_t unstampedCount = gt.stale(uint16_t(pass + 1), 0, unstamped);
    uint32_t graceStale = 0;
    for (uint32_t u = 0; u < unstampedCount; ++u) {
      const uint32_t k = unstamped[u];
      const GhostEntry& ge = entries[k];
      if (graceLater && uint16_t(pass - 1 - ge.lastSeen) > c.graceTicks) {
        unstamped[graceStale++] = k;
        continue;
      }
      if ((ge.flags & ~kBoosted) != 0) continue;
      const int32_t idx = snap.indexOf(ge.id);
      if (idx < 0) continue;
      const SnapEntity se = ents[idx];
      const int64_t dx = se.x - int64_t{v.vx}, dy = se.y - int64_t{v.vy};
      const uint64_t d2 = static_cast<uint64_t>(dx * dx) + static_cast<uint64_t>(dy * dy);
      if (d2 > v.viewRadiusSq) continue;
      // A ghost the viewer may no longer see has departed above (departHidden): it is not live.
      // The drift carries the entity's weight (as scoring's above); the boost multiplies.
      uint64_t score = uint64_t{se.odo - ge.mark} * weights[ilog2(d2)];
      if ((ge.flags & kBoosted) && __builtin_mul_overflow(score, boostFactor, &score)) score = UINT64_MAX;
      if (score == 0) continue;
      cd2[q] = d2, cix[q] = uint32_t(idx), cio[q] = uint64_t{se.id} | uint64_t{se.odo} << 32;
      scores[m] = score;
      sc[m++] = World::Scored{q++, int16_t(k), 0};
    }
    depart(unstamped, graceStale);
  }

  // Table pressure: when more new candidates scored positive than the table has room for, the
  // ghosts not eligible on this pass (not stamped) are evicted early, least recently eligible first
  // (ties: lower id first), as many as room is short. Their despawns join the queue below, and the
  // room follows once those are written: a viewer that moved through crowds is not left without
  // updates for the rest of the grace window. Rare (a full table), so not on the common path.
  if (const uint32_t room0 = gt.capacity() - gt.size(); newPositive > room0) {
    // Live and not stamped on this pass: stale as of the next pass with no grace.
    uint32_t* idle = s.stale.data();
    const uint32_t idleCount = gt.stale(uint16_t(pass + 1), 0, idle);
    const uint32_t early = std::min(newPositive - room0, idleCount);
    auto staler = [&](uint32_t a, uint32_t b) {
      const uint16_t ageA = uint16_t(pass - gt.at(a).lastSeen), ageB = uint16_t(pass - gt.at(b).lastSeen);
      return ageA != ageB ? ageA > ageB : gt.at(a).id < gt.at(b).id;
    };
    if (early > 0 && early < idleCount) std::nth_element(idle, idle + early - 1, idle + idleCount, staler);
    depart(idle, early);
    st.pressureEvictions += early;
    // Held ghosts not eligible were scored without a stamp: those just evicted leave the scored
    // list (a packet never carries both an entity's despawn and its update).
    if (early > 0) {
      uint32_t kept = 0;
      for (uint32_t j = 0; j < m; ++j) {
        if (sc[j].entry >= 0 && entries[sc[j].entry].state == kDeparting) continue;
        sc[kept] = sc[j], scores[kept] = scores[j], ++kept;
      }
      m = kept;
    }
  }

  // Despawn records first (queued by the previous pass's evictions), at most half the state bytes.
  // Entries are removed after bookkeeping, so the entry indices held above stay valid.
  uint8_t* out = output_[tick_ & 1]->data.get() + v.outOffset;
  uint8_t* p = out + kHeaderBytes;

  // Events: the oldest unacknowledged ones that fit the event reserve, every packet until acknowledged.
  uint32_t eventBytes = 0, eventCount = 0;
  uint16_t firstEvent = 0;
  if (v.events && v.events->size() > 0) {
    EventQueue& q = *v.events;
    firstEvent = q.headSequence();
    uint32_t used = kEventSectionBytes;
    uint8_t* e = p + kEventSectionBytes;
    while (eventCount < q.size() && eventCount < 255) {
      uint32_t len = q.lengthAt(eventCount);
      if (used + kEventHeaderBytes + len > c.eventReserveBytes) break;
      putU16(e, uint16_t(len));
      std::memcpy(e + kEventHeaderBytes, q.dataAt(eventCount), len);
      e += kEventHeaderBytes + len;
      used += kEventHeaderBytes + len;
      ++eventCount;
    }
    if (eventCount > 0) {
      putU16(p, firstEvent);
      p[2] = uint8_t(eventCount);
      p = e;
      eventBytes = used;
      st.events += eventCount;
      st.eventBytes += used;
    }
  }
  Budget budget = packetBudget(v.payloadBytes, eventBytes);
  uint32_t despawns = 0, removals = 0;
  uint32_t* logDespawns = log ? log->despawnIds.data() + size_t{logSlot} * log->maxDespawns : nullptr;
  // Despawns found lost go first (the oldest news), unless the entity was announced again since.
  // One that is eligible now waits: it may be announced in this very packet, which may not name
  // it twice (and once announced, it needs no despawn). Rare: a scan.
  for (uint32_t q = log ? log->resend.count : 0; q > 0 && despawns < budget.maxDespawns; --q) {
    const uint32_t id = log->resend.pop();
    if (lookup.find(id) >= 0) continue;  // announced again: the client holds it, or will
    bool isEligible = false;
    for (uint32_t j = 0; j < n && !isEligible; ++j) isEligible = candIdOf(candIdOdo[allEligible ? j : eligible[j]]) == id;
    if (isEligible) {
      log->queueResend(id);
      continue;
    }
    putU32(p, id);
    p += kDespawnRecordBytes;
    logDespawns[despawns++] = id;
  }
  for (uint32_t q = gt.queueSize(); q > 0; --q) {
    uint32_t id = gt.queueFront();
    int32_t e = lookup.find(id);
    if (e < 0) {  // removed since it was queued (an acknowledgement found the client never had it)
      gt.dequeue();
      continue;
    }
    GhostEntry& ge = gt.at(uint32_t(e));
    if (ge.state != kDeparting) {  // revived since it was queued
      ge.flags &= uint8_t(~kQueued);
      gt.dequeue();
    } else if (despawns < budget.maxDespawns) {
      putU32(p, id);
      p += kDespawnRecordBytes;
      ge.flags &= uint8_t(~kQueued);
      if (log) logDespawns[despawns] = id;  // sent again should the packet be found lost
      s.removals[removals++] = uint32_t(e);
      gt.prefetchIndex(id);  // removed at the end of the pass
      ++despawns;
      gt.dequeue();
    } else {
      gt.requeueFront();  // waits for the next packet, keeping its place in line
    }
  }
  st.despawns += despawns;
  // The last lookup was above: entries are inserted and removed from here on.
  // Each removal moves the table's last entry into the hole and rewrites that entry's index slot:
  // ask for those slots now, as for the removed ids above.
  for (uint32_t r = 0, size = gt.size(); r < removals && r < size; ++r) gt.prefetchIndex(gt.at(size - 1 - r).id);

  // Selection: the top `slots` by score descending, ties nearest first (distance, then gather
  // order). New ghosts need room. `chosen` gets their positions in sc, in packet order (unless
  // allChosen).
  auto before = [candD2, scores, sc](uint32_t x, uint32_t y) {
    if (scores[x] != scores[y]) return scores[x] > scores[y];
    const uint64_t a = candD2[sc[x].order], b = candD2[sc[y].order];
    return a != b ? a < b : sc[x].order < sc[y].order;
  };
  // The update records' bytes; with kinds or attributes in use, less what the sections keep: a
  // first sighting carries its kind and attributes in its own packet, so fresh candidates are
  // admitted only as many as the sections' floor holds, and kind records that did not fit the last
  // packet get room in this one.
  // The self record (ViewerOptions::self): the avatar's own, first of the updates, whenever it moved
  // or its last one was lost, when a record fits after the despawns. Not a ghost: no kind or
  // attributes ride with it.
  uint32_t stateBytes = budget.stateBytes - despawns * kDespawnRecordBytes;
  uint32_t selfRecords = 0;
  if (v.self && stateBytes >= c.recordBytes) {
    const int32_t si = snap.indexOf(v.avatarId);
    if (si >= 0 && (v.selfPending || ents[si].odo != v.selfMark)) {
      writeUpdate(p, v.avatarId, snap.packed[si]);
      if (c.fieldBytes) writeFields(p + kRecordBytes, snap.fields[si], c.fieldBytes, false);
      p += c.recordBytes;
      v.selfMark = ents[si].odo, v.selfPending = false;
      selfRecords = 1;
      stateBytes -= c.recordBytes;
      ++st.selfRecords;
    }
  }
  const uint32_t tableRoom = gt.capacity() - gt.size();
  uint32_t room = tableRoom;
  uint32_t newCount = newPositive;
  bool freshRoom = false;  // room bounds every fresh candidate (new or announced again), not only new ones
  uint32_t reserved = 0;
  PacketSections sections(s.kindRecords.data(), s.attributeSection.data());
  // Attributes: what the client holds of them is in the ghost table; entries go into `sections`
  // (and the acknowledgement log) as they are chosen.
  const AttributeStore& attrs = store_.attributes();
  const bool attributesOn = gt.tracksAttributes();
  const bool acking = log && log->acknowledging;
  uint32_t* const logAttributeIds = log && attributesOn ? log->attributeIds.data() + size_t{logSlot} * log->maxAttributes : nullptr;
  // The most entries a packet takes: its log's room (the log keeps payloadBytes / 9), and the u16 count.
  const uint32_t maxAttributeEntries = logAttributeIds ? std::min<uint32_t>(log->maxAttributes, 0xffff) : 0xffff;
  uint32_t* const logAttributeVersions = log && attributesOn ? log->attributeVersions.data() + size_t{logSlot} * log->maxAttributes : nullptr;
  // Entry e's attributes into the section when they fit within `limit` bytes of sections; false
  // when they do not (nothing sent). True also when there is nothing to send (gone, none yet, the
  // acknowledged version, or sent by this very pass: a packet names an entity's attributes once).
  auto sendAttributes = [&](uint32_t e, uint32_t limit) {
    const uint32_t id = gt.at(e).id, slot = slotOfId(id);
    GhostAttribute& ga = gt.attributeAt(e);
    const uint32_t version = attrs.version(slot);
    if (attrs.owner(slot) != id || version == 0 || (acking && ga.acked == version) || ga.lastPass == pass) return true;
    const uint32_t length = attrs.length(slot);
    if (sections.bytes() + sections.attributeCost(length) > limit || sections.attributeCount() >= maxAttributeEntries) return false;
    if (logAttributeIds) logAttributeIds[sections.attributeCount()] = id, logAttributeVersions[sections.attributeCount()] = version;
    sections.addAttributeEntry(attrs.entry(slot));
    ga.lastPass = pass;
    return true;
  };
  // The attribute queue, then (viewers not acknowledging) the ghosts whose attributes went out
  // attributeRepeatPasses or more passes ago, about 2 x size / K of the table a call from where the
  // last stopped, while they fit within `limit`. findEntry: the entry index of an id, or -1.
  auto fillAttributes = [&](uint32_t limit, auto findEntry, bool early) {
    for (uint32_t q = gt.attributeQueueSize(); q > 0; --q) {
      const uint32_t id = gt.attributeFront();
      const int32_t e = findEntry(id);
      if (e >= 0 && gt.attributeAt(uint32_t(e)).queued) {
        const GhostEntry& ge = gt.at(uint32_t(e));
        if (ge.state == kDeparting && !(ge.flags & kUnheld)) {  // it may yet be revived: it waits
          gt.attributeRequeueFront();
          continue;
        }
        // One announced again gets them with its announcement.
        if (!(ge.flags & kUnheld) && !sendAttributes(uint32_t(e), limit)) return;
        gt.attributeAt(uint32_t(e)).queued = 0;
      }
      gt.attributeDequeue();
    }
    const uint32_t K = c.attributeRepeatPasses, size = gt.size();
    if (K == 0 || acking || size == 0) return;
    // The due entries (findDue), then sent in order: the same entries, in the same order, as
    // sending each as it is found (a send changes no other entry's state). The first fill's were
    // found after scoring; one of them that departed since is not due now and is passed over. A
    // send that does not fit leaves the cursor where it was before that entry was looked at: the
    // scan's start for its first entry, else the index after the one before it (size for entry
    // 0, reached by the wrap).
    uint32_t* due = s.stale.data();  // free while the fills run
    uint32_t found;
    if (early) {
      due = s.lists.data(), found = earlyDue;
    } else {
      found = findDue(due);
      askForAttributes(due, found);
    }
    const uint32_t scan = std::min(repeatScan(size, K), size);
    const uint32_t start = v.attributeCursor, e0 = start % size, head = std::min(scan, size - e0);
    for (uint32_t j = 0; j < found; ++j) {
      if (early && entries[due[j]].state != kLive) continue;
      if (!sendAttributes(due[j], limit)) {
        v.attributeCursor = due[j] == e0 ? start : due[j] == 0 ? size : due[j];
        return;
      }
    }
    v.attributeCursor = scan > head ? scan - head : e0 + head;
  };
  if (stateOn) {
    const uint32_t floor = sectionFloor(stateBytes);
    if (maxNewExtra > 0 && freshPositive > 0) {
      constexpr uint32_t headers = 2 * kSectionCountBytes;
      const uint32_t fits = floor > headers ? (floor - headers) / maxNewExtra : 0;
      room = std::min({room, fits, freshPositive});
      reserved = room > 0 ? headers + room * maxNewExtra : 0;
      newCount = freshPositive, freshRoom = true;
    }
    if (v.kindBacklog > 0)
      reserved += std::min<uint32_t>(floor - std::min(floor, reserved), kSectionCountBytes + kKindRecordBytes * v.kindBacklog);
    // Attributes pending take what is left of the floor now; more after the records, if they leave room.
    if (attributesOn && floor > reserved) {
      fillAttributes(floor - reserved, [&](uint32_t id) { return lookup.find(id); }, earlyScanned);
      reserved += sections.attributeBytes();
    }
  }
  uint32_t slots = (stateBytes - reserved) / c.recordBytes;
  uint32_t take;
  uint32_t* chosen = s.chosen.data();
  bool allChosen = false;  // chosen = sc[0, take)
  if (newCount <= room) {
    take = std::min(m, slots);
    if (m > slots && take > 0) {
      logBuckets(scores, m, true, s.buckets.data());
      keepSmallest(m, take, chosen, s.buckets.data(), s.indices.data(),
                   [scores](uint32_t j, uint32_t b) { return 63 - subBucket(scores[j], kBuckets - 1 - b); }, before,
                   &v.scoreBucketHint);
    } else {
      allChosen = true;
    }
  } else {
    // Too little room for every new one: the best `slots` of the held ones and the best `room` new
    // ones (what a walk in score order taking new ones while room lasts would take).
    uint32_t skipped;
    take = chooseWithRoom(
        m, slots, room, [sc, freshRoom](uint32_t j) { return freshRoom ? sc[j].fresh != 0 : sc[j].entry < 0; },
        [scores](uint32_t j) { return scores[j]; }, before, chosen, &skipped, s.lists.data(), s.keys.data(),
        s.buckets.data(), s.indices.data(), s.kept.data());
    if (room == tableRoom) st.ghostTableFull += skipped;  // else the sections' floor bound them: they come in later packets
  }

  // Assembly and bookkeeping: a sent ghost records its mark and the position the client now holds.
  // The records and the held ghosts' marks first; then new ghosts are inserted (in packet order)
  // and ghosts announced again renewed; then the acknowledgement log and the positions held, for
  // the viewers and worlds that keep them.
  const uint64_t* packed = snap.packed.data();
  const uint32_t* order = allChosen ? nullptr : chosen;
  uint32_t others;
  uint32_t* other = s.indices.data();  // free again after the selection
  const uint64_t* fieldsOf = c.fieldBytes ? snap.fields.data() : nullptr;
  const uint64_t* marks = stateOn ? snap.stateMarks.data() : nullptr;
  p = recordWriter(order != nullptr, c.fieldBytes > 0, snap.stateChecks())(p, sc, order, take, candIndex, ents, packed, fieldsOf,
                                                                           c.fieldBytes, marks, entries, other, &others, s.keys.data());
  uint32_t newGhosts = 0;
  // The kinds and attributes sections go after the records, in the bytes the records left.
  const uint32_t sectionRoom = stateBytes - take * c.recordBytes;
  const uint16_t* const slotKind = stateOn ? snap.slotKind.data() : nullptr;
  uint8_t* const logFlags = log ? log->updateFlags.data() + size_t{logSlot} * log->maxUpdates : nullptr;
  if (logFlags) std::memset(logFlags, 0, take + selfRecords);
  // A first sighting's kind record (unless its kind is 0) and attributes (once it has some); the
  // floor kept the room for them. Were it short, attributes would be queued and a kind announced again.
  auto announce = [&](uint32_t e, uint32_t id, uint32_t at) {
    const uint16_t kind = slotKind[slotOfId(id)];
    if (kind != 0) {
      if (sections.bytes() + sections.kindCost() <= sectionRoom) {
        sections.addKind(id, kind);
        if (logFlags) logFlags[at] |= AckLog::kKindSent;
      } else {
        gt.at(e).flags |= kUnheld;
      }
    }
    if (attributesOn) {
      gt.attributeAt(e).acked = 0;  // announced (again): nothing of them is known to have arrived
      if (!sendAttributes(e, sectionRoom)) gt.queueAttributes(e);
    }
  };
  // First sightings first (the sections' bytes were kept for them), in packet order.
  for (uint32_t k = 0; k < others; ++k) {
    World::Scored& r = sc[order ? order[other[k]] : other[k]];
    if (r.entry >= 0 && r.fresh == 0) continue;  // held, its kind or attributes changed: below
    const uint32_t idx = candIndex[r.order];
    const SnapEntity se = ents[idx];
    if (r.entry < 0) {
      const uint32_t e = gt.insert(se.id, se.odo, pass);
      if (log) gt.ackAt(e).born = v.passes;
      if (boosting && boostIds[slotOfId(se.id)] == se.id) gt.at(e).flags = kBoosted;
      r.entry = int16_t(e);  // for the loop below
    } else {
      GhostEntry& ge = gt.at(uint32_t(r.entry));
      ge.mark = se.odo;
      // announced again: its announcement was lost
      ge.state = kLive, ge.lastSeen = pass;
      ge.flags &= uint8_t(~kUnheld);
      GhostAck& a = gt.ackAt(uint32_t(r.entry));
      a.confirmed = 0;
      a.born = v.passes;
      a.inflight = 0;  // packets of the earlier incarnation no longer count (their records are ignored)
    }
    newGhosts += r.fresh;
    if (stateOn) announce(uint32_t(r.entry), se.id, other[k]);
  }
  // Then held ghosts last sent before their entity's kind or attributes changed (with state checks
  // only): the new kind rides with this record when it fits, else the mark goes back before the
  // change (the record goes again, with the kind, as soon as it scores) and the next packet keeps
  // room for it.
  uint32_t backlog = 0;
  if (attributesOn && snap.stateChecks())  // their attribute states are cold: asked for together first
    for (uint32_t k = 0; k < others; ++k) {
      const World::Scored& r = sc[order ? order[other[k]] : other[k]];
      if (!r.fresh) __builtin_prefetch(&gt.attributeAt(uint32_t(r.entry)));
    }
  for (uint32_t k = 0; k < others && snap.stateChecks(); ++k) {
    const World::Scored& r = sc[order ? order[other[k]] : other[k]];
    if (r.fresh) continue;
    const uint32_t idx = candIndex[r.order];
    const SnapEntity se = ents[idx];
    GhostEntry& ge = gt.at(uint32_t(r.entry));
    const uint32_t before = ge.mark, kindMark = uint32_t(marks[idx]), attributeMark = uint32_t(marks[idx] >> 32);
    ge.mark = se.odo;
    if (int32_t(before - kindMark) < 0) {
      if (sections.bytes() + sections.kindCost() <= sectionRoom) {
        sections.addKind(se.id, slotKind[slotOfId(se.id)]);
        if (logFlags) logFlags[other[k]] |= AckLog::kKindSent;
      } else {
        ge.mark = kindMark - c.newDrift;
        ++backlog;
      }
    }
    // Changed attributes are queued (unless this pass sent them already: the newest there are).
    if (attributesOn && int32_t(before - attributeMark) < 0 && gt.attributeAt(uint32_t(r.entry)).lastPass != pass)
      gt.queueAttributes(uint32_t(r.entry));
  }
  v.kindBacklog = uint16_t(std::min<uint32_t>(backlog, 0xffff));
  // Attributes pending, in the room the records and kinds left. Entries are inserted by now: an
  // entry held at the lookup's load keeps its index until the removals at the end of the pass, so
  // the map finds it (warm), and the table's index (cold) is probed only for one inserted since.
  if (attributesOn && sections.bytes() < sectionRoom)
    fillAttributes(
        sectionRoom,
        [&](uint32_t id) {
          const int32_t e = lookup.find(id);
          return e >= 0 ? e : gt.find(id);
        },
        false);
  uint8_t flags = eventCount ? kFlagEvents : 0;
  p = sections.write(p, flags);
  st.kinds += sections.kindCount();
  st.attributes += sections.attributeCount();
  st.attributeBytes += sections.attributeBytes();
  if (log || gt.tracksPositions()) {
    for (uint32_t i = 0; i < take; ++i) {
      const World::Scored& r = sc[order ? order[i] : i];
      const uint32_t e = uint32_t(r.entry);
      const uint32_t idx = candIndex[r.order];
      const SnapEntity se = ents[idx];
      if (log) {
        ++gt.ackAt(e).inflight;
        log->updateIds[size_t{logSlot} * log->maxUpdates + i] = se.id;
        log->updateMarks[size_t{logSlot} * log->maxUpdates + i] = se.odo;
      }
      if (gt.tracksPositions()) {
        const PositionPacker::Decoded held = snap.packer().unpack(packed[idx]);  // what the client now holds
        gt.positionAt(e) = GhostPosition{held.x, held.y, held.z};
      }
    }
  }
  // The self record is logged after the others (a lost one is sent again: resolvePacket).
  if (log && selfRecords) {
    log->updateIds[size_t{logSlot} * log->maxUpdates + take] = v.avatarId;
    log->updateMarks[size_t{logSlot} * log->maxUpdates + take] = v.selfMark;
  }
  st.records += take + selfRecords;
  st.newGhosts += newGhosts;

  if (boosting)
    for (uint32_t id : v.boost)
      if (slotOfId(id) < s.boostIds.size()) boostIds[slotOfId(id)] = slotOfId(id) ^ 1u;

  // Remove the despawned entries, highest index first so earlier indices stay valid.
  std::sort(s.removals.data(), s.removals.data() + removals, std::greater<uint32_t>());
  for (uint32_t i = 0; i < removals; ++i) gt.remove(s.removals[i]);

  if (log) {
    AckLog::Packet& lp = log->packets[logSlot];
    lp.pass = v.passes, lp.sequence = v.sequence, lp.updates = uint16_t(take + selfRecords), lp.despawns = uint16_t(despawns), lp.used = 1;
    lp.probablyLost = 0;  // left over from the packet that used the slot before
    lp.firstEvent = firstEvent, lp.events = uint8_t(eventCount);
    lp.attributes = uint16_t(sections.attributeCount());
  }
  writeHeader(out, PacketHeader{v.sequence++, tick_, uint16_t(despawns), uint16_t(take + selfRecords), flags});
  v.outLength = uint32_t(p - out);
  st.bytes += v.outLength;
}

}  // namespace sightline
