// Randomized engine runs under AddressSanitizer and UndefinedBehaviorSanitizer: moves, teleports,
// entities leaving the region, spawns and despawns, viewers coming and going, lossy and reordered
// acknowledgements, events; every packet is checked against its payload and header counts, and
// the bytes of 1, 2 and 8 threads are compared. Build and run: npm run test:sanitize; under
// ThreadSanitizer: npm run test:tsan.
#include <algorithm>
#include <sched.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "arena.h"
#include "check.h"
#include "config.h"
#include "errors.h"
#include "gather.h"
#include "select.h"
#include "simd.h"
#include "world.h"

using namespace sightline;

// Every allocation through operator new is counted, to check that warm ticks allocate nothing.
static std::atomic<uint64_t> allocations{0};
// While >= 0, the number of allocations through operator new before the next one throws
// std::bad_alloc (once; then it goes back to -1).
static std::atomic<int64_t> allocationsBeforeFailure{-1};
static void* counted(std::size_t n, std::size_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (allocationsBeforeFailure.load(std::memory_order_relaxed) >= 0 && allocationsBeforeFailure.fetch_sub(1) == 0) {
    allocationsBeforeFailure.store(-1);
    throw std::bad_alloc();
  }
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                             : std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new(std::size_t n) { return counted(n, 0); }
void* operator new[](std::size_t n) { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted(n, std::size_t(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using test::checks;
using test::failures;
// Snapshots in which a dense cell was divided twice as finely (its sub-cell held the walk cap).
uint64_t finerCells = 0;
void countFinerCells(const Snapshot& snap) {
  for (uint32_t k = 0; k < snap.denseCells(); ++k) finerCells += snap.dense[k].level;
}

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

// Runs one seeded scenario; returns every packet's bytes, in order. batchedAcks: each tick's
// acknowledgements are applied together with World::acknowledgeAll (as a transport's are) rather
// than one by one; outcomes, when given, receives what became of each (0 applied, 1 unused,
// 2 invalid), in order.
std::vector<std::vector<uint8_t>> run(uint32_t seed, unsigned threads, uint32_t ticks, bool batchedAcks = false,
                                      std::vector<uint8_t>* outcomes = nullptr) {
  std::mt19937 rng(seed);
  auto uni = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo)); };
  ConfigInput in;
  in.regionSize = 1024;
  in.viewRadius = 100;
  in.graceTicks = double(rng() % 4);
  in.ghostCap = double(8 + rng() % 64);
  in.walkCap = double(16 + rng() % 200);
  in.eventReserveBytes = 40;
  in.denseCellThreshold = 32;
  // Fast fields on two seeds of three: 23 bits (3 bytes a record), one of them with weight 0.
  if (seed % 3 != 0) {
    in.fields.push_back(FieldInput{"yaw", 10, 0.0, 6.283185307179586, std::nullopt});
    in.fields.push_back(FieldInput{"anim", 5, std::nullopt, std::nullopt, 0.0});
    in.fields.push_back(FieldInput{"health", 8, std::nullopt, 100.0, 0.5});
    in.attributeBytes = 24;  // and attributes, repeated every 6 passes to viewers without acks
    in.attributeRepeatPasses = 6;
  }
  Config c = buildConfig(in);
  World w(c, 800, seed % 2 == 0);
  // Kinds and attributes: set at spawn and changed now and then (on every seed: kinds need no config).
  auto name = [&](uint32_t k) {
    uint8_t b[24];
    for (uint8_t& x : b) x = uint8_t(k * 31 + (&x - b));
    return std::vector<uint8_t>(b, b + (k % 25));
  };
  auto setState = [&](uint32_t id) {
    if (rng() % 3 == 0) w.entities().setKind(id, uint16_t(rng() % 5));
    if (c.attributeBytes && rng() % 3 == 0) {
      std::vector<uint8_t> n = name(rng());
      w.entities().setAttributes(id, n.data(), uint32_t(n.size()));
    }
  };
  ThreadPool pool(threads);
  std::vector<uint32_t> live;
  auto spawn = [&] {
    live.push_back(w.entities().spawn(int32_t(uni(0, c.regionRaw)), int32_t(uni(0, c.regionRaw)),
                                      int32_t(uni(-600 * 1024, 600 * 1024)), uint16_t(rng() % 4)));
    setState(live.back());
  };
  for (int i = 0; i < 600; ++i) spawn();
  // A crowd in one cell so sub-grids are used; for odd seeds packed into one of its sub-cells, so
  // that sub-cell holds the walk cap and the cell is divided twice as finely.
  const int64_t crowdSide = seed % 2 ? c.cellRaw / c.subGridDivisions : c.cellRaw;
  for (int i = 0; i < 200; ++i) {
    uint32_t s = slotOfId(live[i]);
    w.entities().x()[s] = int32_t(uni(0, crowdSide));
    w.entities().y()[s] = int32_t(uni(0, crowdSide));
  }
  std::vector<uint32_t> viewers;
  for (int i = 0; i < 60; ++i) {
    bool acks = i % 2 == 0;
    w.addViewer(live[i], ViewerOptions{uint32_t(c.minPayloadBytes + c.recordBytes * (rng() % 40) + 4 * (rng() % 8)), uint32_t(1 + rng() % 3), acks});
    viewers.push_back(live[i]);
  }
  // Acknowledgements travel back with loss and delay.
  struct Ack { uint32_t at, viewer; uint16_t seq; };
  std::deque<Ack> inflight;
  std::vector<std::vector<uint8_t>> out;
  std::vector<std::vector<uint16_t>> received(1u << 21);
  std::vector<uint32_t> removed;  // viewers removed: late acknowledgements name them (unused)
  std::vector<World::AckInput> batch;
  std::vector<World::AckOutcome> batchOutcome;
  auto acknowledge = [&](uint32_t viewer, uint16_t ack, uint32_t bits) {
    if (batchedAcks) {
      batch.push_back({viewer, ack, bits});
      return;
    }
    uint8_t outcome = 0;
    try {
      w.acknowledge(viewer, ack, bits);
    } catch (const CoreError& e) {
      // A late acknowledgement meant for an earlier viewer of the same avatar (removed, added again),
      // a sequence never sent, a viewer without acks or gone.
      outcome = e.code() == "ERR_SIGHTLINE_INVALID_ACK" ? 2 : 1;
      CHECK(e.code() == "ERR_SIGHTLINE_INVALID_ACK" || e.code() == "ERR_SIGHTLINE_ACKS_DISABLED" ||
                e.code() == "ERR_SIGHTLINE_UNKNOWN_VIEWER",
            "acknowledge threw %s", e.code().c_str());
    }
    if (outcomes) outcomes->push_back(outcome);
  };
  for (uint32_t t = 0; t < ticks; ++t) {
    int32_t *xs = w.entities().x(), *ys = w.entities().y();
    for (uint32_t id : live) {
      uint32_t s = slotOfId(id);
      uint32_t k = rng() % 100;
      if (k < 60) xs[s] += int32_t(uni(-900, 900)), ys[s] += int32_t(uni(-900, 900));
      else if (k < 62) xs[s] = int32_t(uni(-4000, c.regionRaw + 4000)), ys[s] = int32_t(uni(-4000, c.regionRaw + 4000));
      // Fields change on some still entities too (out-of-range values are clamped by the tick).
      for (uint32_t f = 0; f < w.entities().fieldCount(); ++f)
        if (rng() % 8 == 0) w.entities().fieldValues()[size_t(f) * w.entities().capacity() + s] = int32_t(uni(-3, 1100));
      if (rng() % 40 == 0) setState(id);
    }
    for (int k = 0; k < 3; ++k) {
      if (live.size() > 100 && rng() % 2) {
        size_t i = rng() % live.size();
        w.entities().despawn(live[i]);
        live.erase(live.begin() + std::ptrdiff_t(i));
      }
      if (live.size() < 790 && rng() % 2) spawn();
    }
    if (rng() % 10 == 0 && !viewers.empty()) {
      size_t i = rng() % viewers.size();
      w.removeViewer(viewers[i]);
      removed.push_back(viewers[i]);
      viewers.erase(viewers.begin() + std::ptrdiff_t(i));
    }
    if (rng() % 10 == 0) {
      uint32_t id = live[rng() % live.size()];
      if (!w.hasViewer(id)) w.addViewer(id, ViewerOptions{0, 1, rng() % 2 == 0}), viewers.push_back(id);
    }
    // Settings change while viewers are served: send period, packet size (an acks viewer's log
    // grows), view radius.
    for (uint32_t v : viewers) {
      if (rng() % 12 != 0) continue;
      ViewerChange ch;
      ch.what = 1u + rng() % 7;
      ch.to.sendPeriod = 1 + rng() % 3;
      ch.to.payloadBytes = uint32_t(c.minPayloadBytes + c.recordBytes * (rng() % 60) + 4 * (rng() % 8));
      ch.to.viewRadiusRaw = 1 + int64_t(rng() % uint64_t(c.viewRadiusRaw));
      w.changeViewer(v, std::move(ch));
    }
    for (uint32_t v : viewers) {
      if (rng() % 4 != 0) continue;
      uint8_t ev[35];
      std::memset(ev, int(t), sizeof ev);
      try {
        w.emit(v, ev, 1 + rng() % 35);
      } catch (const CoreError& e) {
        CHECK(e.code() == "ERR_SIGHTLINE_EVENTS_DISABLED" || e.code() == "ERR_SIGHTLINE_EVENT_QUEUE_FULL",
              "emit threw %s", e.code().c_str());
      }
    }
    w.prepareTick(pool.size());
    countFinerCells(w.snapshot());
    w.runPass(pool);
    for (size_t i = 0; i < w.viewerCount(); ++i) {
      const Viewer& v = w.viewerAt(i);
      if (v.outLength == 0) continue;
      const uint8_t* p = w.output() + v.outOffset;
      CHECK(v.outLength <= v.payloadBytes, "packet %u > payload %u", v.outLength, v.payloadBytes);
      uint32_t events = 0;
      if (p[1] & 1) {
        uint32_t n = p[kHeaderBytes + 2], at = kHeaderBytes + 3;
        for (uint32_t k = 0; k < n; ++k) at += 2 + u16(p + at);
        events = at - kHeaderBytes;
        CHECK(events <= c.eventReserveBytes, "events %u > reserve", events);
      }
      // The kinds and attributes sections after the records (their flags 2 and 4).
      uint32_t sections = 0, at = kHeaderBytes + events + 4u * u16(p + 12) + c.recordBytes * u16(p + 14);
      if (p[1] & kFlagKinds) sections += kSectionCountBytes + kKindRecordBytes * u16(p + at);
      if (p[1] & kFlagAttributes) {
        uint32_t a = at + sections, n = u16(p + a), len = kSectionCountBytes;
        for (uint32_t k = 0; k < n; ++k) len += kAttributeHeaderBytes + p[a + len + 8];
        sections += len;
      }
      CHECK(at + sections == v.outLength, "counts do not match length");
      CHECK(4u * u16(p + 12) <= (v.payloadBytes - kHeaderBytes - events) / 2, "despawns over half");
      out.emplace_back(p, p + v.outLength);
      if (v.ackLog && rng() % 5 != 0) inflight.push_back(Ack{t + uint32_t(rng() % 4), v.avatarId, u16(p + 2)});
    }
    // Deliver due acknowledgements: the client acks its newest and the 32 before it.
    for (size_t k = 0; k < inflight.size();) {
      if (inflight[k].at > t) { ++k; continue; }
      Ack a = inflight[k];
      inflight.erase(inflight.begin() + std::ptrdiff_t(k));
      if (!w.hasViewer(a.viewer)) continue;
      auto& got = received[slotOfId(a.viewer)];
      got.push_back(a.seq);
      uint16_t newest = got[0];
      for (uint16_t s : got) if (uint16_t(s - newest) < 0x8000) newest = s;
      uint32_t bits = 0;
      for (uint16_t s : got) {
        uint16_t d = uint16_t(newest - s);
        if (d >= 1 && d <= 32) bits |= 1u << (d - 1);
      }
      if (got.size() > 64) got.erase(got.begin());
      acknowledge(a.viewer, newest, bits);
    }
    // What a transport passes on too: an acknowledgement for a viewer gone or without acks, and one
    // of a sequence never sent.
    if (!removed.empty() && rng() % 4 == 0) acknowledge(removed[rng() % removed.size()], uint16_t(rng()), 0);
    if (!viewers.empty() && rng() % 4 == 0) acknowledge(viewers[rng() % viewers.size()], uint16_t(rng()), uint32_t(rng()));
    if (batchedAcks) {
      batchOutcome.resize(batch.size());
      w.acknowledgeAll(batch.data(), batch.size(), batchOutcome.data(), pool);
      if (outcomes)
        for (World::AckOutcome o : batchOutcome) outcomes->push_back(uint8_t(o));
      batch.clear();
    }
  }
  return out;
}

}  // namespace

// A warm world (viewers with and without acks and events, entities moving, a crowd) ticks without
// a single allocation: neither the once-per-tick phases nor the pass.
void warmTicksDoNotAllocate(unsigned threads, bool state) {
  ConfigInput in;
  in.eventReserveBytes = 64;
  if (state) {  // a 24-bit field schema, kinds, and 32-byte attributes changing on 10% of the entities a second
    in.fields.push_back(FieldInput{"yaw", 10, 0.0, 6.283185307179586, std::nullopt});
    in.fields.push_back(FieldInput{"anim", 6, std::nullopt, std::nullopt, std::nullopt});
    in.fields.push_back(FieldInput{"health", 8, std::nullopt, 100.0, 0.5});
    in.attributeBytes = 32;
  }
  Config c = buildConfig(in);
  World w(c, 4096);
  std::mt19937 rng(7);
  uint8_t name[32] = {};
  for (int i = 0; i < 4000; ++i) {
    uint32_t id = w.entities().spawn(int32_t(2048 * 1024 + rng() % (128 * 1024)), int32_t(2048 * 1024 + rng() % (128 * 1024)), 0,
                                     state ? uint16_t(1 + i % 3) : 0);
    if (state) w.entities().setAttributes(id, name, 32);
  }
  for (uint32_t s = 0; s < 600; ++s) w.addViewer(w.entities().idOfSlot(s), ViewerOptions{0, 1 + s % 2, s % 3 == 0});
  ThreadPool pool(threads);
  auto tick = [&](uint32_t t) {
    int32_t* xs = w.entities().x();
    for (uint32_t s = 0; s < 4000; ++s) xs[s] += int32_t(rng() % 201) - 100;
    int32_t* fields = w.entities().fieldValues();
    for (uint32_t f = 0; f < w.entities().fieldCount(); ++f)
      for (uint32_t s = f; s < 4000; s += 7) fields[size_t(f) * w.entities().capacity() + s] = int32_t(rng() % 300);
    if (state) {  // 400 entities a second at 20 Hz: 20 a tick; a kind now and then
      for (int k = 0; k < 20; ++k) {
        name[0] = uint8_t(t), name[1] = uint8_t(k);
        w.entities().setAttributes(w.entities().idOfSlot(rng() % 4000), name, 1 + rng() % 32);
      }
      if (t % 7 == 0) w.entities().setKind(w.entities().idOfSlot(rng() % 4000), uint16_t(rng() % 4));
    }
    w.prepareTick(pool.size());
    w.runPass(pool);
    for (uint32_t s = 0; s < 600; s += 3) {
      uint32_t id = w.entities().idOfSlot(s);
      if (w.viewer(id).passes > 0) w.acknowledge(id, uint16_t(w.viewer(id).sequence - 1), 0xffffffffu);
      uint8_t ev[8] = {1, 2, 3, 4, 5, 6, 7, uint8_t(t)};
      if (t % 5 == 0) w.emit(id, ev, sizeof ev);
    }
  };
  for (uint32_t t = 0; t < 100; ++t) tick(t);
  uint64_t before = allocations.load();
  for (uint32_t t = 100; t < 300; ++t) tick(t);
  uint64_t during = allocations.load() - before;
  CHECK(during == 0, "%u threads%s: %llu allocations in 200 warm ticks", threads, state ? " (state)" : "", (unsigned long long)during);
  std::printf("%u threads%s: %llu allocations in 200 warm ticks\n", threads, state ? ", fields, kinds and attributes" : "",
              (unsigned long long)during);
}

// GhostLookup answers exactly as the table's own index: random tables, reused slots (several
// generations of one slot held at once), loaded 70,000 times (past the wrap of its load tag at
// 65,535, when the map is cleared).
void ghostLookupMatchesTheIndex() {
  std::mt19937 rng(11);
  std::vector<GhostTable> tables;
  for (int i = 0; i < 3; ++i) tables.emplace_back(64, false);
  GhostLookup lookup;
  lookup.reserve(40);
  auto randomId = [&] { return makeId(rng() % 40, rng() % 3); };
  uint64_t mismatches = 0, found = 0;
  for (uint32_t round = 0; round < 70000; ++round) {
    GhostTable& gt = tables[rng() % tables.size()];
    uint32_t id = randomId();
    if (gt.find(id) < 0 && !gt.full()) gt.insert(id, round, 0);
    if (gt.size() > 0 && rng() % 3 == 0) gt.remove(rng() % gt.size());
    const GhostLookup::Loaded loaded = lookup.load(gt);
    for (int k = 0; k < 4; ++k) {
      uint32_t q = k == 0 && gt.size() > 0 ? gt.at(rng() % gt.size()).id : randomId();
      int32_t a = loaded.find(q), b = gt.find(q);
      mismatches += a != b;
      found += a >= 0;
    }
  }
  CHECK(mismatches == 0, "GhostLookup disagreed with the table index %llu times", (unsigned long long)mismatches);
  CHECK(found > 70000, "only %llu lookups found an entry", (unsigned long long)found);
  std::printf("ghost lookup: 280000 lookups over 70000 loads agree with the table index\n");
}

// GhostTable::stale against its rule, entry by entry, for both kernels: random tables of sizes
// that do and do not fill whole groups of 16, random states and stamps, passes on both sides of the
// uint16 wrap, grace windows from 0 to beyond any age.
void staleMatchesTheRule() {
  std::mt19937 rng(17);
  const uint32_t capacities[] = {1, 10, 16, 33, 64, 512};
  std::vector<uint32_t> got(512 + 16), portable(512 + 16);
  uint64_t flagged = 0;
  for (uint32_t round = 0; round < 20000; ++round) {
    GhostTable gt(capacities[round % 6], false);
    const uint32_t size = rng() % (gt.capacity() + 1);
    const uint16_t pass = uint16_t(rng());
    const uint32_t grace = round % 7 == 0 ? 30000 : rng() % 12;
    for (uint32_t i = 0; i < size; ++i) {
      uint32_t e = gt.insert(makeId(i, rng() % 4), rng(), uint16_t(pass - rng() % 20));
      gt.at(e).state = uint8_t(rng() % 4 == 0 ? rng() % 3 : kLive);
      gt.at(e).flags = uint8_t(rng() % 4);
      if (rng() % 16 == 0) gt.at(e).lastSeen = uint16_t(rng());
    }
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < size; ++i)
      if (gt.at(i).state == kLive && uint16_t(pass - 1 - gt.at(i).lastSeen) > grace) want.push_back(i);
    uint32_t n = gt.stale(pass, grace, got.data());
    CHECK(n == want.size() && std::equal(want.begin(), want.end(), got.begin()),
          "round %u: stale() found %u entries, the rule %zu", round, n, want.size());
    if (cpuHasAvx512()) {
      setSimd(false);
      uint32_t np = gt.stale(pass, grace, portable.data());
      setSimd(true);
      CHECK(np == n && std::equal(got.begin(), got.begin() + n, portable.begin()),
            "round %u: the portable stale() differs from the vector one", round);
    }
    flagged += n;
  }
  CHECK(flagged > 20000, "only %llu stale entries in all rounds", (unsigned long long)flagged);
  std::printf("stale entries: 20000 random tables agree with the rule (%llu found)%s\n", (unsigned long long)flagged,
              cpuHasAvx512() ? ", both kernels" : "");
}

// keepSmallest against a full sort: keys drawn to make ties at every level (all equal, a few
// values, narrow ranges, spread over many octaves), smallest-first (distances) and largest-first
// (scores, with the bucket and sub-bucket flipped as the pass does).
void selectionMatchesASort() {
  struct E { uint64_t key; uint32_t order; };
  std::mt19937_64 rng(5);
  std::vector<E> a(700), ref;
  std::vector<uint32_t> out(700 + kSplitSlack), outVec(700 + kSplitSlack);
  std::vector<uint16_t> buckets(700 + kSplitSlack);
  std::vector<uint32_t> idx(1400 + 2 * kSplitSlack);
  std::vector<uint64_t> keys(700);
  uint32_t runs = 0, nearHits = 0, kernelRounds = 0;
  for (uint32_t round = 0; round < 20000; ++round) {
    uint32_t n = 2 + uint32_t(rng() % 699), take = 1 + uint32_t(rng() % (n - 1));
    uint32_t kind = round % 5;
    uint64_t base = rng() >> (rng() % 64);
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t k;
      switch (kind) {
        case 0: k = base; break;
        case 1: k = base + rng() % 3; break;
        case 2: k = base + rng() % 5000; break;
        case 3: k = rng() >> (rng() % 64); break;
        default: k = rng() % 8; break;
      }
      a[i] = E{k, i};
    }
    const bool largest = round % 2 == 1;
    auto less = [&](const E& x, const E& y) {
      if (x.key != y.key) return largest ? x.key > y.key : x.key < y.key;
      return x.order < y.order;
    };
    auto lessAt = [&](uint32_t i, uint32_t j) { return less(a[i], a[j]); };
    for (uint32_t i = 0; i < n; ++i) keys[i] = a[i].key;
    bool bucketsRight = true;
    auto select = [&](uint32_t* into) {
      logBuckets(keys.data(), n, largest, buckets.data());
      for (uint32_t i = 0; i < n; ++i)
        bucketsRight &= buckets[i] == (largest ? kBuckets - 1 - logBucket(a[i].key) : logBucket(a[i].key));
      if (largest)
        keepSmallest(n, take, into, buckets.data(), idx.data(),
                     [&](uint32_t i, uint32_t b) { return 63 - subBucket(a[i].key, kBuckets - 1 - b); }, lessAt);
      else
        keepSmallest(n, take, into, buckets.data(), idx.data(),
                     [&](uint32_t i, uint32_t b) { return subBucket(a[i].key, b); }, lessAt);
    };
    // The threshold bucket searched from a guess (as the pass guesses last pass's) is the same
    // whatever the guess: at it, beside it, far off, at either end, or none.
    logBuckets(keys.data(), n, largest, buckets.data());
    const uint32_t B = thresholdBucket(buckets.data(), n, take);
    for (uint32_t hint : {B, B - 1, B + 1, B + 2, B - 3, B + 9, 0u, kBuckets - 1, uint32_t(rng() % kBuckets)}) {
      if (thresholdBucket(buckets.data(), n, take, hint) != B) {
        CHECK(false, "selection round %u: the threshold bucket searched from %u is not %u", round, hint, B);
        return;
      }
    }
    select(out.data());
    // The vector splits give the very same positions in the same order as the portable ones.
    if (cpuHasAvx512()) {
      setSimd(false);
      select(outVec.data());
      setSimd(true);
      if (!std::equal(out.begin(), out.begin() + take, outVec.begin())) {
        CHECK(false, "selection round %u: the AVX-512 and portable kernels chose differently", round);
        return;
      }
      ++kernelRounds;
    }
    if (!bucketsRight) {
      CHECK(false, "selection round %u: logBuckets differs from logBucket", round);
      return;
    }
    ref.assign(a.begin(), a.begin() + n);
    std::sort(ref.begin(), ref.end(), less);
    std::vector<uint32_t> got(take), want(take);
    for (uint32_t i = 0; i < take; ++i) got[i] = a[out[i]].order, want[i] = ref[i].order;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    if (got != want) {
      CHECK(false, "selection round %u (n %u, take %u, kind %u) differs from a sort", round, n, take, kind);
      return;
    }
    // keepSmallestNear with a band around the true threshold, shifted at random so that it
    // sometimes misses: when it answers, the same set, and the threshold when the band gave one.
    if (!largest) {
      uint64_t t = ref[take - 1].key;
      uint64_t width = (t >> (2 + rng() % 8)) + rng() % 3;  // <= 2^62 + 2: no overflow below
      uint64_t off = rng() % (2 * width + 1);  // up to twice the half-width: some bands miss
      uint64_t mid = rng() % 2 ? (off > t ? 0 : t - off) : (t + off < t ? UINT64_MAX : t + off);
      uint64_t lo = mid > width ? mid - width : 0, hi = mid + width < mid ? UINT64_MAX : mid + width;
      uint64_t threshold = 12345;
      bool hit = keepSmallestNear(n, take, out.data(), idx.data(), lo, hi, [&](uint32_t i) { return a[i].key; }, lessAt,
                                  &threshold);
      // The same over the key array (the vector split where the CPU has it): the same answer.
      uint64_t threshold2 = 12345;
      bool hit2 = keepSmallestNear(n, take, outVec.data(), idx.data(), lo, hi, [&](uint32_t i) { return keys[i]; }, lessAt,
                                   &threshold2, keys.data());
      if (hit2 != hit || (hit && (threshold2 != threshold || !std::equal(out.begin(), out.begin() + take, outVec.begin())))) {
        CHECK(false, "near-selection round %u: the split over the key array answered differently", round);
        return;
      }
      // It can answer when no more than take keys lie below lo and at least take up to hi.
      uint32_t belowLo = 0, upToHi = 0;
      for (uint32_t i = 0; i < n; ++i) belowLo += ref[i].key < lo, upToHi += ref[i].key <= hi;
      bool shouldHit = belowLo <= take && upToHi >= take;
      if (hit != shouldHit) {
        CHECK(false, "near-selection round %u: answered %d for a band that %s the threshold", round, int(hit),
              shouldHit ? "brackets" : "misses");
        return;
      }
      if (hit) {
        for (uint32_t i = 0; i < take; ++i) got[i] = a[out[i]].order;
        std::sort(got.begin(), got.end());
        bool fromBand = ref[take - 1].key >= lo;
        if (got != want || (fromBand && threshold != t)) {
          CHECK(false, "near-selection round %u (n %u, take %u, kind %u) differs from a sort (set %s, threshold %llu for %llu)",
                round, n, take, kind, got != want ? "differs" : "equal", (unsigned long long)threshold, (unsigned long long)t);
          return;
        }
        ++nearHits;
      }
    }
    ++runs;
  }
  CHECK(runs == 20000, "selection rounds %u", runs);
  CHECK(nearHits > 2000, "only %u near-selections answered", nearHits);
  CHECK(kernelRounds == (cpuHasAvx512() ? 20000u : 0u), "kernel rounds %u", kernelRounds);
  std::printf("selection: 20000 random selections equal a full sort (%u also by a band guess; threshold buckets equal from 9 guesses each)%s\n", nearHits,
              cpuHasAvx512() ? "; AVX-512 and portable kernels agree (buckets, threshold, splits)" : "");
}

// The snapshot's packed positions, from both kernels, against PositionPacker::pack entity by
// entity: lossless and quantizing configurations (quantShift 0 and 3), x and y anywhere in the
// region, z anywhere an int32 reaches (clamped to the vertical extent), entities despawned among
// them.
void snapshotPackingAgrees() {
  std::mt19937 rng(33);
  uint64_t compared = 0;
  for (uint32_t world = 0; world < 24; ++world) {
    ConfigInput in;
    in.regionSize = world % 2 ? 65536 : 4096;  // quantShift 3, then 0
    in.verticalExtent = double(16 << (world % 7));
    Config c = buildConfig(in);
    const PositionPacker packer(c);
    uint32_t count = 1 + rng() % 900;
    World w(c, count);
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < count; ++i) {
      int32_t x = int32_t(rng() % uint32_t(c.regionRaw)), y = int32_t(rng() % uint32_t(c.regionRaw));
      uint32_t kind = rng() % 4;
      int32_t z = kind == 0 ? int32_t(rng()) : kind == 1 ? (rng() % 2 ? INT32_MAX : INT32_MIN)
                                             : int32_t(int64_t(rng() % uint64_t(2 * c.verticalRaw)) - c.verticalRaw);
      ids.push_back(w.entities().spawn(x, y, z));
    }
    for (uint32_t i = 0; i < count; i += 7) w.entities().despawn(ids[i]);
    std::vector<uint64_t> kernels[2];
    for (int vec = 0; vec < 2; ++vec) {
      if (vec == 1 && !cpuHasAvx512()) break;
      setSimd(vec == 1);
      w.prepareTick(1);
      const Snapshot& snap = w.snapshot();
      const int32_t* zs = w.entities().z();
      for (uint32_t i = 0; i < snap.count(); ++i) {
        const SnapEntity& e = snap.ents[i];
        const int32_t z = zs[slotOfId(e.id)];
        const uint64_t want = packer.pack(e.x, e.y, z);
        // What a client decodes from it: x and y quantized, z clamped to the extent and quantized.
        const PositionPacker::Decoded d = packer.unpack(want);
        const int64_t zz = std::clamp<int64_t>(int64_t{z} + packer.zHalf, 0, packer.zMax);
        const int q = c.quantShift;
        if (d.x != ((e.x >> q) << q) || d.y != ((e.y >> q) << q) || d.z != int32_t(((zz >> q) << q) - packer.zHalf)) {
          CHECK(false, "unpack, world %u: entity %u at (%d, %d, %d) decodes as (%d, %d, %d)", world, e.id, e.x, e.y, z, d.x,
                d.y, d.z);
          setSimd(true);
          return;
        }
        if (snap.packed[i] != want) {
          CHECK(false, "snapshot packing, world %u (%s kernel): entity %u packed %llx, pack gives %llx", world,
                vec ? "AVX-512" : "portable", e.id, (unsigned long long)snap.packed[i], (unsigned long long)want);
          setSimd(true);
          return;
        }
        ++compared;
      }
      kernels[vec].assign(snap.packed.begin(), snap.packed.begin() + snap.count());
    }
    setSimd(true);
    if (cpuHasAvx512()) CHECK(kernels[0] == kernels[1], "snapshot packing, world %u: the kernels differ", world);
  }
  std::printf("snapshot packing: %llu packed positions equal PositionPacker::pack and unpack as a client decodes them%s\n", (unsigned long long)compared,
              cpuHasAvx512() ? ", from both kernels" : "");
}

// The AVX-512 gather against the portable one, candidate for candidate: random worlds (sparse
// cells, dense cells with sub-grids, a crowd on one spot), viewers anywhere (outside the region
// too), capped and uncapped walks, the avatar left out. Every candidate's d2 is also checked
// against a direct computation.
void gatherKernelsAgree() {
  if (!cpuHasAvx512()) {
    std::printf("gather kernels: this CPU has no AVX-512; only the portable gather runs\n");
    return;
  }
  std::mt19937 rng(21);
  uint64_t compared = 0;
  const uint64_t finerBefore = finerCells;
  for (uint32_t world = 0; world < 40; ++world) {
    ConfigInput in;
    in.regionSize = 512;
    in.viewRadius = double(20 + rng() % 120);
    in.denseCellThreshold = double(4 + rng() % 60);
    in.walkCap = double(16 + rng() % 240);  // the snapshot divides a cell more finely by it
    Config c = buildConfig(in);
    uint32_t count = 1 + rng() % 700;
    World w(c, count);
    auto uni = [&](int64_t lo, int64_t hi) { return int32_t(lo + int64_t(rng() % uint64_t(hi - lo))); };
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t kind = rng() % 4;
      int32_t x = kind == 0 ? uni(0, c.cellRaw) : kind == 1 ? 5000 : uni(0, c.regionRaw);
      int32_t y = kind == 0 ? uni(0, c.cellRaw) : kind == 1 ? 7000 : uni(0, c.regionRaw);
      ids.push_back(w.entities().spawn(x, y, 0));
    }
    w.prepareTick(1);
    const Snapshot& snap = w.snapshot();
    countFinerCells(snap);
    std::vector<uint64_t> d2a(count + kGatherSlack), d2b(count + kGatherSlack);
    std::vector<uint32_t> ia(count + kGatherSlack), ib(count + kGatherSlack);
    std::vector<uint64_t> ioa(count + kGatherSlack), iob(count + kGatherSlack);
    for (uint32_t q = 0; q < 200; ++q) {
      int64_t vx = uni(-c.cellRaw, c.regionRaw + c.cellRaw), vy = uni(-c.cellRaw, c.regionRaw + c.cellRaw);
      if (q % 5 == 0) vx = 5000, vy = 7000;
      uint32_t walkCap = q % 3 == 0 ? UINT32_MAX : 1 + rng() % 300;
      uint32_t exclude = q % 2 ? ids[rng() % ids.size()] : UINT32_MAX;
      // A viewer's own radius (a smaller box) on most queries.
      const int64_t radius = q % 4 == 0 ? c.viewRadiusRaw : 1 + int64_t(rng() % uint64_t(c.viewRadiusRaw));
      const GatherQuery query{vx, vy, uint64_t(radius) * uint64_t(radius), uint32_t((radius + c.cellRaw - 1) / c.cellRaw), walkCap, exclude};
      setSimd(false);
      GatherResult a = gather(snap, query, Candidates{d2a.data(), ia.data(), ioa.data()});
      setSimd(true);
      GatherResult b = gather(snap, query, Candidates{d2b.data(), ib.data(), iob.data()});
      bool same = a.count == b.count && a.examined == b.examined;
      for (uint32_t k = 0; same && k < a.count; ++k) {
        const SnapEntity& e = snap.ents[ia[k]];
        int64_t dx = e.x - vx, dy = e.y - vy;
        same = d2a[k] == d2b[k] && ia[k] == ib[k] && ioa[k] == iob[k] && candIdOf(ioa[k]) == e.id &&
               candOdoOf(ioa[k]) == e.odo && d2a[k] == uint64_t(dx * dx) + uint64_t(dy * dy) &&
               d2a[k] <= query.radiusSq && e.id != exclude;
      }
      if (!same) {
        CHECK(false, "gather kernels differ: world %u, query %u (%u/%u candidates)", world, q, a.count, b.count);
        return;
      }
      if (walkCap == UINT32_MAX) {  // uncapped: every entity within the radius, by brute force
        uint32_t want = 0;
        for (uint32_t k = 0; k < snap.count(); ++k) {
          const SnapEntity& e = snap.ents[k];
          const int64_t dx = e.x - vx, dy = e.y - vy;
          want += uint64_t(dx * dx) + uint64_t(dy * dy) <= query.radiusSq && e.id != exclude;
        }
        CHECK(a.count == want, "world %u, query %u: %u candidates, brute force finds %u", world, q, a.count, want);
      }
      compared += a.count;
    }
  }
  CHECK(compared > 100000, "only %llu candidates compared", (unsigned long long)compared);
  CHECK(finerCells > finerBefore, "no gather world divided a cell more finely");
  std::printf("gather kernels: AVX-512 and portable agree on 8000 gathers (%llu candidates)\n",
              (unsigned long long)compared);
}

// chooseWithRoom against the walk it replaces: sort by score (ties by a tie key, then position),
// take in order, a new record only while room lasts. Scores drawn to tie a lot; new records
// plentiful or scarce; room and slots anywhere from 0 to past m.
void chooseWithRoomMatchesTheWalk() {
  std::mt19937_64 rng(9);
  const uint32_t M = 300;
  std::vector<uint64_t> score(M), tie(M), keys(M + kSplitSlack);
  std::vector<uint8_t> fresh(M), kept(M);
  std::vector<uint32_t> chosen(M), lists(2 * M), idx(2 * M + 2 * kSplitSlack), order(M);
  std::vector<uint16_t> buckets(M + kSplitSlack);
  uint32_t rounds = 0, withSkips = 0;
  for (uint32_t round = 0; round < 20000; ++round) {
    uint32_t m = 1 + uint32_t(rng() % M);
    uint32_t kind = round % 4;
    for (uint32_t j = 0; j < m; ++j) {
      score[j] = kind == 0 ? 1 + rng() % 4 : kind == 1 ? 1 + (rng() >> (rng() % 64)) : 1000 + rng() % 50;
      tie[j] = rng() % 3;
      fresh[j] = uint8_t(rng() % 100 < (round % 7) * 15);
    }
    uint32_t slots = uint32_t(rng() % (m + 20)), room = uint32_t(rng() % (m + 5));
    auto less = [&](uint32_t x, uint32_t y) {
      if (score[x] != score[y]) return score[x] > score[y];
      return tie[x] != tie[y] ? tie[x] < tie[y] : x < y;
    };
    // The walk.
    for (uint32_t j = 0; j < m; ++j) order[j] = j;
    std::sort(order.begin(), order.begin() + m, less);
    std::vector<uint32_t> want;
    uint32_t wantSkipped = 0, left = room;
    for (uint32_t j = 0; j < m && want.size() < slots; ++j) {
      if (fresh[order[j]]) {
        if (left == 0) { ++wantSkipped; continue; }
        --left;
      }
      want.push_back(order[j]);
    }
    uint32_t skipped = 12345;
    uint32_t take = chooseWithRoom(
        m, slots, room, [&](uint32_t j) { return fresh[j] != 0; }, [&](uint32_t j) { return score[j]; }, less,
        chosen.data(), &skipped, lists.data(), keys.data(), buckets.data(), idx.data(), kept.data());
    std::vector<uint32_t> got(chosen.begin(), chosen.begin() + take);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    if (got != want || skipped != wantSkipped) {
      CHECK(false, "chooseWithRoom round %u (m %u, slots %u, room %u): %zu chosen, %u skipped; the walk: %zu, %u", round,
            m, slots, room, got.size(), skipped, want.size(), wantSkipped);
      return;
    }
    withSkips += wantSkipped > 0;
    ++rounds;
  }
  CHECK(rounds == 20000 && withSkips > 2000, "rounds %u, with skips %u", rounds, withSkips);
  std::printf("choice with little room: 20000 random choices equal the walk (%u skip new records)\n", withSkips);
}

// BlockArena: blocks of several sizes, taken and given back at random, are 64-byte aligned, never
// overlap (each holds its own pattern until released), and released ones are reused.
void blockArenaKeepsBlocksApart() {
  std::mt19937 rng(5);
  BlockArena arena;
  struct Held {
    unsigned char* p;
    size_t bytes;
    unsigned char tag;
  };
  std::vector<Held> held;
  const size_t sizes[] = {64, 200, 4096, 10240, 70000, 3u << 20};
  uint64_t bad = 0, reused = 0;
  std::vector<void*> released;
  for (uint32_t step = 0; step < 20000; ++step) {
    if (held.empty() || rng() % 3 != 0) {
      const size_t bytes = sizes[rng() % (step < 19000 ? 5 : 6)];
      auto* p = static_cast<unsigned char*>(arena.allocate(bytes));
      bad += reinterpret_cast<uintptr_t>(p) % 64 != 0;
      reused += std::find(released.begin(), released.end(), p) != released.end();
      const unsigned char tag = static_cast<unsigned char>(rng());
      std::memset(p, tag, bytes);
      held.push_back(Held{p, bytes, tag});
    } else {
      const size_t k = rng() % held.size();
      const Held h = held[k];
      for (size_t b = 0; b < h.bytes; b += 97) bad += h.p[b] != h.tag;
      bad += h.p[h.bytes - 1] != h.tag;
      arena.release(h.p, h.bytes);
      if (released.size() < 4096) released.push_back(h.p);
      held[k] = held.back();
      held.pop_back();
    }
  }
  for (const Held& h : held)
    for (size_t b = 0; b < h.bytes; b += 97) bad += h.p[b] != h.tag;
  CHECK(bad == 0, "BlockArena: %llu misaligned or overwritten bytes", (unsigned long long)bad);
  CHECK(reused > 100, "BlockArena reused only %llu released blocks", (unsigned long long)reused);
  std::printf("block arena: 20000 allocations and releases, aligned and apart; %llu released blocks reused\n",
              (unsigned long long)reused);
}

// The pool runs every index exactly once, in the guided chunks thread_pool.h describes (each
// chunk's size follows from where it begins), inline for a single chunk, and rethrows the first
// exception with the pool usable afterwards.
void threadPoolRunsEachIndexOnce() {
  uint64_t loops = 0, chunksAt8192 = 0;
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    for (uint32_t grain : {1u, 16u, 64u}) {
      for (uint32_t count : {0u, 1u, 15u, 16u, 17u, 100u, 8192u, 10007u}) {
        std::vector<std::atomic<uint32_t>> runs(count);
        std::mutex m;
        std::vector<std::pair<uint32_t, uint32_t>> chunks;
        std::atomic<bool> offWorker{false};
        pool.parallelFor(count, grain, [&](uint32_t b, uint32_t e, unsigned w) {
          if (w >= pool.size()) offWorker = true;
          for (uint32_t i = b; i < e; ++i) runs[i].fetch_add(1, std::memory_order_relaxed);
          std::lock_guard<std::mutex> lock(m);
          chunks.emplace_back(b, e);
        });
        ++loops;
        uint32_t wrong = 0;
        for (auto& r : runs) wrong += r.load() != 1;
        CHECK(wrong == 0 && !offWorker, "pool %u threads, grain %u, count %u: %u indices not run exactly once", threads, grain, count, wrong);
        std::sort(chunks.begin(), chunks.end());
        uint32_t at = 0, badChunks = 0;
        const bool inlineRun = threads == 1 || count <= grain;
        for (auto [b, e] : chunks) {
          const uint32_t want = inlineRun ? count : b + guidedChunk(count - b, grain, 2 * threads);
          badChunks += b != at || e != want;
          at = e;
        }
        CHECK(badChunks == 0 && at == count, "pool %u threads, grain %u, count %u: %u chunks not as guided", threads, grain, count, badChunks);
        if (threads == 2 && grain == 16 && count == 8192) chunksAt8192 = chunks.size();
      }
    }
    for (uint32_t round = 0; round < 3; ++round) {
      std::atomic<uint32_t> after{0};
      try {
        pool.parallelFor(1000, 16, [&](uint32_t b, uint32_t e, unsigned) {
          if (b <= 500 && 500 < e) throw std::runtime_error("chunk 500");
        });
        CHECK(false, "pool %u threads: the exception was not rethrown", threads);
      } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "chunk 500", "pool %u threads: rethrew %s", threads, e.what());
      }
      pool.parallelFor(1000, 16, [&](uint32_t b, uint32_t e, unsigned) { after.fetch_add(e - b); });
      CHECK(after.load() == 1000, "pool %u threads: after an exception %u of 1000 indices ran", threads, after.load());
    }
  }
  CHECK(guidedChunk(UINT32_MAX, 16, 4) == UINT32_MAX / 4 && guidedChunk(5, 16, 4) == 5 && guidedChunk(100, 16, 4) == 25 &&
            guidedChunk(40, 16, 4) == 16,
        "guidedChunk arithmetic");
  std::printf("thread pool: %llu loops of 1, 2, 3 and 8 threads ran each index once, in guided chunks (%llu claims for 8,192 viewers on 2 threads); exceptions rethrown\n",
              (unsigned long long)loops, (unsigned long long)chunksAt8192);
}

// On Linux the pool's workers never run on the CPU of the thread that called parallelFor (the
// caller is pinned to each CPU in turn here, so its CPU is known), and the loops stay correct when
// the caller moves.
void threadPoolKeepsWorkersOffCallerCpu() {
#if defined(__linux__)
  cpu_set_t original;
  CPU_ZERO(&original);
  CHECK(sched_getaffinity(0, sizeof original, &original) == 0, "sched_getaffinity failed");
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &original)) cpus.push_back(c);
  CHECK(cpus.size() >= 2, "this test needs 2 CPUs; the process may use %zu", cpus.size());
  if (cpus.size() < 2) return;
  ThreadPool pool(3);  // made before the caller is pinned: its workers may use every CPU but the caller's
  uint64_t workerChunks = 0, onCallerCpu = 0, loops = 0;
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < cpus.size() && k < 4; ++k) {
      const int cpu = cpus[k];
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "pinning the caller to CPU %d failed", cpu);
      std::vector<std::atomic<uint32_t>> runs(4096);
      std::atomic<uint64_t> chunks{0}, bad{0};
      pool.parallelFor(4096, 1, [&](uint32_t b, uint32_t e, unsigned w) {
        if (w != 0) {
          chunks.fetch_add(1);
          if (sched_getcpu() == cpu) bad.fetch_add(1);
        }
        for (uint32_t i = b; i < e; ++i) runs[i].fetch_add(1, std::memory_order_relaxed);
        for (volatile int spin = 0; spin < 2000; spin = spin + 1) {
        }
      });
      uint32_t wrong = 0;
      for (auto& r : runs) wrong += r.load() != 1;
      CHECK(wrong == 0, "caller on CPU %d: %u indices not run exactly once", cpu, wrong);
      workerChunks += chunks.load(), onCallerCpu += bad.load(), ++loops;
    }
  }
  sched_setaffinity(0, sizeof original, &original);
  CHECK(onCallerCpu == 0, "%llu of %llu worker chunks ran on the caller's CPU", (unsigned long long)onCallerCpu,
        (unsigned long long)workerChunks);
  std::printf("thread pool: %llu loops with the caller pinned to each of %zu CPUs in turn; %llu worker chunks, %llu on the caller's CPU\n",
              (unsigned long long)loops, std::min<size_t>(cpus.size(), 4), (unsigned long long)workerChunks,
              (unsigned long long)onCallerCpu);
#endif
}

// A tick whose allocation fails (std::bad_alloc, at the first allocation, then the second, ...:
// what earlier tries allocated stays, so each try fails further on) changes nothing: the tick number, the odometers, the snapshot and the output stay, and the world
// then ticks byte for byte as a twin that never failed.
void failedPrepareChangesNothing() {
  ConfigInput in;
  in.eventReserveBytes = 32;
  Config c = buildConfig(in);
  World a(c, 20000), b(c, 20000);
  ThreadPool pool(2);
  std::mt19937 rng(11);
  auto spawnBoth = [&](uint32_t k, int32_t spread) {
    for (uint32_t i = 0; i < k; ++i) {
      int32_t x = int32_t(2048 * 1024 + rng() % uint32_t(spread)), y = int32_t(2048 * 1024 + rng() % uint32_t(spread));
      uint32_t ia = a.entities().spawn(x, y, 0), ib = b.entities().spawn(x, y, 0);
      CHECK(ia == ib, "twins issued different ids");
    }
  };
  auto viewBoth = [&](uint32_t from, uint32_t to) {
    for (uint32_t s = from; s < to; ++s) {
      ViewerOptions o{0, 1, s % 2 == 0};
      a.addViewer(a.entities().idOfSlot(s), o), b.addViewer(b.entities().idOfSlot(s), o);
    }
  };
  auto moveBoth = [&] {
    for (uint32_t s = 0; s < a.entities().highWater(); ++s) {
      int32_t d = int32_t(rng() % 201) - 100;
      a.entities().x()[s] += d, b.entities().x()[s] += d;
    }
  };
  auto packets = [](World& w) {
    std::vector<uint8_t> all;
    for (size_t i = 0; i < w.viewerCount(); ++i) {
      const Viewer& v = w.viewerAt(i);
      all.insert(all.end(), w.output() + v.outOffset, w.output() + v.outOffset + v.outLength);
    }
    return all;
  };
  spawnBoth(2000, 256 * 1024);
  viewBoth(0, 300);
  for (int t = 0; t < 5; ++t) {
    moveBoth();
    a.prepareTick(2), a.runPass(pool), b.prepareTick(2), b.runPass(pool);
  }
  // More entities (a crowd: dense cells, larger scratch) and viewers (a larger output buffer).
  spawnBoth(12000, 64 * 1024);
  viewBoth(300, 1500);
  moveBoth();
  const uint32_t tickBefore = a.tick(), countBefore = a.snapshot().count();
  const std::vector<uint8_t> outputBefore = packets(a);
  std::vector<uint32_t> odometerBefore(a.entities().odometer(), a.entities().odometer() + a.entities().highWater());
  uint32_t failed = 0;
  for (int64_t k = 0;; ++k) {
    allocationsBeforeFailure.store(k);
    try {
      a.prepareTick(2);
      allocationsBeforeFailure.store(-1);
      break;
    } catch (const std::bad_alloc&) {
      ++failed;
      CHECK(a.tick() == tickBefore && a.snapshot().count() == countBefore && packets(a) == outputBefore &&
                std::equal(odometerBefore.begin(), odometerBefore.end(), a.entities().odometer()),
            "allocation %lld of prepareTick failed and the world changed", (long long)k);
    }
  }
  CHECK(failed >= 4, "only %u of prepareTick's allocations could be failed", failed);
  a.runPass(pool);
  b.prepareTick(2), b.runPass(pool);
  bool same = packets(a) == packets(b) && a.tick() == b.tick();
  for (int t = 0; t < 10; ++t) {
    moveBoth();
    a.prepareTick(2), a.runPass(pool), b.prepareTick(2), b.runPass(pool);
    same = same && packets(a) == packets(b);
  }
  CHECK(same, "after failed allocations the world's packets differ from its twin's");
  std::printf("failed allocations: prepareTick failed %u times, at successive allocations, and left the world as it was each time; then 11 ticks equal a twin's\n", failed);
}

// addViewer whose allocations fail in turn changes nothing; an add built ahead (makeViewer,
// reserveViewerAdds, as for an add asked for during a pass) is adopted without allocating.
void failedAddViewerChangesNothing() {
  ConfigInput in;
  in.eventReserveBytes = 32;
  Config c = buildConfig(in);
  World w(c, 4096);
  for (int i = 0; i < 3000; ++i) w.entities().spawn(int32_t(100 * 1024 + i * 50), int32_t(100 * 1024), 0);
  uint32_t failed = 0, next = 0;
  for (uint32_t round = 0; round < 40; ++round) {
    const uint32_t id = w.entities().idOfSlot(next++);
    const size_t viewers = w.viewerCount();
    const uint64_t bytes = w.outputBytes();
    for (int64_t k = 0;; ++k) {
      allocationsBeforeFailure.store(k);
      try {
        w.addViewer(id, ViewerOptions{0, 1, round % 2 == 0});
        allocationsBeforeFailure.store(-1);
        break;
      } catch (const std::bad_alloc&) {
        ++failed;
        CHECK(w.viewerCount() == viewers && !w.hasViewer(id) && w.outputBytes() == bytes,
              "addViewer: allocation %lld failed and the viewers changed", (long long)k);
      }
    }
    CHECK(w.viewerCount() == viewers + 1 && w.hasViewer(id), "addViewer did not add after its failures");
  }
  std::vector<std::unique_ptr<Viewer>> built;
  for (uint32_t i = 0; i < 200; ++i) built.push_back(w.makeViewer(w.entities().idOfSlot(next++), ViewerOptions{0, 1, i % 3 == 0}));
  w.reserveViewerAdds(uint32_t(built.size()));
  const uint64_t before = allocations.load();
  for (auto& v : built) w.adoptViewer(std::move(v));
  const uint64_t during = allocations.load() - before;
  CHECK(during == 0, "adopting 200 viewers built ahead allocated %llu times", (unsigned long long)during);
  CHECK(w.viewerCount() == 240 && w.hasViewer(w.entities().idOfSlot(next - 1)), "adopted viewers missing");
  ThreadPool pool(2);
  w.prepareTick(pool.size());
  w.runPass(pool);
  uint32_t served = 0;
  for (size_t i = 0; i < w.viewerCount(); ++i) served += w.viewerAt(i).outLength > 0;
  CHECK(served == 240, "%u of 240 viewers served", served);
  std::printf("failed allocations: addViewer failed %u times in 40 adds and changed nothing; 200 viewers built ahead adopted with %llu allocations\n",
              failed, (unsigned long long)during);
}

// Adds asked for while a pass runs on other threads (a world whose viewer list is exactly full):
// building them and reserving room touches nothing the pass reads (ThreadSanitizer and
// AddressSanitizer watch), and they are adopted after it without allocating.
void addsPreparedDuringAPass() {
  ConfigInput in;
  Config c = buildConfig(in);
  World w(c, 4096);
  for (int i = 0; i < 1200; ++i) w.entities().spawn(int32_t(1000 * 1024 + (i % 40) * 2048), int32_t(1000 * 1024 + (i / 40) * 2048), 0);
  for (uint32_t s = 0; s < 1024; ++s) w.addViewer(w.entities().idOfSlot(s), ViewerOptions{0, 1, s % 2 == 0});
  ThreadPool pool(2);
  std::vector<std::unique_ptr<Viewer>> built;
  for (uint32_t round = 0; round < 3; ++round) {
    w.prepareTick(pool.size());
    std::thread pass([&] { w.runPass(pool); });
    for (uint32_t k = 0; k < 40; ++k) {
      const uint32_t slot = 1024 + round * 40 + k;
      built.push_back(w.makeViewer(w.entities().idOfSlot(slot), ViewerOptions{0, 1, k % 3 == 0}));
      w.reserveViewerAdds(k + 1);
    }
    pass.join();
    const uint64_t before = allocations.load();
    for (auto& v : built) w.adoptViewer(std::move(v));
    built.clear();
    CHECK(allocations.load() == before, "round %u: adopting the viewers built during the pass allocated", round);
  }
  w.prepareTick(pool.size());
  w.runPass(pool);
  uint32_t served = 0;
  for (size_t i = 0; i < w.viewerCount(); ++i) served += w.viewerAt(i).outLength > 0;
  CHECK(w.viewerCount() == 1144 && served == 1144, "%zu viewers, %u served (want 1,144 both)", w.viewerCount(), served);
  std::printf("adds during a pass: 120 viewers built while 3 passes ran, adopted after each without allocating; all 1,144 served\n");
}

// Viewer changes prepared while a pass runs (another thread serving the same viewers: the
// change writes only what the pass does not read) and applied after it without allocating.
void changesPreparedDuringAPass() {
  ConfigInput in;
  Config c = buildConfig(in);
  World w(c, 4096);
  for (int i = 0; i < 1200; ++i) w.entities().spawn(int32_t(1000 * 1024 + (i % 40) * 2048), int32_t(1000 * 1024 + (i / 40) * 2048), 0);
  for (uint32_t s = 0; s < 1024; ++s) w.addViewer(w.entities().idOfSlot(s), ViewerOptions{0, 1, s % 2 == 0});
  ThreadPool pool(2);
  std::mt19937 rng(5);
  for (uint32_t round = 0; round < 4; ++round) {
    w.prepareTick(pool.size());
    std::vector<std::pair<uint32_t, ViewerChange>> changes;
    std::thread pass([&] { w.runPass(pool); });
    uint64_t total = w.outputBytes();
    for (uint32_t k = 0; k < 300; ++k) {
      const uint32_t id = w.entities().idOfSlot(rng() % 1024);
      Viewer& v = w.viewerMutable(id);
      ViewerChange ch;
      ch.what = 1u + rng() % 7;
      ch.to.sendPeriod = 1 + rng() % 4;
      ch.to.payloadBytes = 100 + rng() % 3000;
      ch.to.viewRadiusRaw = 1 + int64_t(rng() % uint64_t(c.viewRadiusRaw));
      const uint32_t before = v.asked.payloadBytes;
      w.prepareViewerChange(v, ch, total);
      total = total - before + v.asked.payloadBytes;
      changes.emplace_back(id, std::move(ch));
    }
    pass.join();
    const uint64_t before = allocations.load();
    for (auto& [id, ch] : changes) w.applyViewerChange(w.viewerMutable(id), ch);
    CHECK(allocations.load() == before, "round %u: applying the changes prepared during the pass allocated", round);
    CHECK(w.outputBytes() == total, "round %u: output bytes %llu, the changes add up to %llu", round,
          (unsigned long long)w.outputBytes(), (unsigned long long)total);
    for (size_t i = 0; i < w.viewerCount(); ++i) {
      const Viewer& v = w.viewerAt(i);
      CHECK(v.payloadBytes == v.asked.payloadBytes && v.sendPeriod == v.asked.sendPeriod &&
                v.viewRadiusRaw == v.asked.viewRadiusRaw,
            "round %u: viewer %u's settings are not the ones asked for", round, v.avatarId);
    }
  }
  w.prepareTick(pool.size());
  w.runPass(pool);
  for (size_t i = 0; i < w.viewerCount(); ++i) {
    const Viewer& v = w.viewerAt(i);
    CHECK(v.outLength <= v.payloadBytes, "a packet of %u bytes for a payload of %u", v.outLength, v.payloadBytes);
  }
  std::printf("changes during a pass: 1,200 prepared while 4 passes ran, applied after each without allocating\n");
}

#if SIGHTLINE_NATIVE_UDP
// native/test/net_checks.cpp: the native UDP data path (its checks in the same tally).
void netChecks();
#endif

int main() {
  threadPoolRunsEachIndexOnce();
  changesPreparedDuringAPass();
  threadPoolKeepsWorkersOffCallerCpu();
  failedPrepareChangesNothing();
  failedAddViewerChangesNothing();
  addsPreparedDuringAPass();
  blockArenaKeepsBlocksApart();
  selectionMatchesASort();
  chooseWithRoomMatchesTheWalk();
  gatherKernelsAgree();
  snapshotPackingAgrees();
  ghostLookupMatchesTheIndex();
  staleMatchesTheRule();
  warmTicksDoNotAllocate(1, false);
  warmTicksDoNotAllocate(2, false);
  warmTicksDoNotAllocate(1, true);
  warmTicksDoNotAllocate(2, true);
  const uint64_t finerBeforeRuns = finerCells;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    auto a = run(seed, 1, 250);
    auto b = run(seed, 2, 250);
    auto d = run(seed, 8, 250);
    CHECK(a.size() > 1000, "seed %u: only %zu packets", seed, a.size());
    CHECK(a == b && a == d, "seed %u: packets differ between 1, 2 and 8 threads", seed);
    // The same acknowledgements applied a tick's batch at a time on the pool (acknowledgeAll):
    // the same packets, the same outcomes.
    std::vector<uint8_t> one, all2, all8;
    auto s1 = run(seed, 1, 250, false, &one);
    auto b2 = run(seed, 2, 250, true, &all2);
    auto b8 = run(seed, 8, 250, true, &all8);
    CHECK(s1 == a && b2 == a && b8 == a, "seed %u: packets differ when acknowledgements are applied in batches", seed);
    CHECK(one == all2 && one == all8 && one.size() > 100, "seed %u: batched acknowledgements end otherwise than one by one", seed);
    size_t refused = 0;
    for (uint8_t o : one) refused += o != 0;
    CHECK(refused > 0 && refused < one.size(), "seed %u: %zu of %zu acknowledgements refused", seed, refused, one.size());
    if (cpuHasAvx512()) {
      setSimd(false);
      auto portable = run(seed, 2, 250);
      setSimd(true);
      CHECK(a == portable, "seed %u: packets differ between the AVX-512 and the portable kernels", seed);
      std::printf("seed %u: %zu packets, identical for 1, 2 and 8 threads and for both kernels\n", seed, a.size());
    } else {
      std::printf("seed %u: %zu packets, identical for 1, 2 and 8 threads\n", seed, a.size());
    }
  }
  CHECK(finerCells > finerBeforeRuns, "no pass world divided a cell more finely");
  std::printf("cells divided more finely: %llu over the snapshots of the worlds above\n", (unsigned long long)finerCells);
  // Bad configurations throw coded errors, never crash.
  ConfigInput bad;
  bad.maxSpeed = 1e300;
  try {
    buildConfig(bad);
    CHECK(false, "a huge maxSpeed was accepted");
  } catch (const CoreError& e) {
    CHECK(e.code() == "ERR_SIGHTLINE_CONFIG_SPEED_EXCEEDS_CELL_PER_TICK", "code %s", e.code().c_str());
  }
#if SIGHTLINE_NATIVE_UDP
  netChecks();
#endif
  std::printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
