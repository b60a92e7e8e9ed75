// Over 500 lines as one file: the checks that count allocations through this file's operator new (warm
// ticks, failed allocations, changes prepared during a pass) beside the randomized runs and main.
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
#include "checks.h"
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
using test::countFinerCells;
using test::finerCells;

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
    // A third with self records, a quarter catching jumps of more than 30 m as teleports.
    w.addViewer(live[i], ViewerOptions{uint32_t(c.minPayloadBytes + c.recordBytes * (rng() % 40) + 4 * (rng() % 8)), uint32_t(1 + rng() % 3), acks,
                                       0, ~0u, i % 3 == 0, i % 4 == 0 ? int64_t{30 * 1024} : 0});
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
    // grows), view radius, groups, boost set. Entities change groups and priority.
    for (uint32_t v : viewers) {
      if (rng() % 12 != 0) continue;
      ViewerChange ch;
      ch.what = 1u + rng() % 31;
      ch.to.sendPeriod = 1 + rng() % 3;
      ch.to.payloadBytes = uint32_t(c.minPayloadBytes + c.recordBytes * (rng() % 60) + 4 * (rng() % 8));
      ch.to.viewRadiusRaw = 1 + int64_t(rng() % uint64_t(c.viewRadiusRaw));
      ch.to.groups = rng() % 3 == 0 ? ~0u : 1u + rng() % 15;
      ch.to.boostFactor = 1 + rng() % 16;
      for (uint32_t k = rng() % 8; k > 0; --k) ch.boost.push_back(live[rng() % live.size()]);
      w.changeViewer(v, std::move(ch));
    }
    for (uint32_t id : live) {
      const uint32_t k = rng() % 100;
      if (k < 3) w.entities().setGroups(id, rng() % 4 == 0 ? ~0u : rng() % 16);
      else if (k < 5) w.entities().setWeight(id, 1 + rng() % 16);
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
    if (t % 7 == 0 && !viewers.empty()) w.teleportViewer(viewers[t % viewers.size()]);
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
  // Self records on half of them, teleports caught on a fifth (and asked for below).
  for (uint32_t s = 0; s < 600; ++s)
    w.addViewer(w.entities().idOfSlot(s), ViewerOptions{0, 1 + s % 2, s % 3 == 0, 0, ~0u, s % 2 == 0, s % 5 == 0 ? int64_t{10 * 1024} : 0});
  // Every control in use: viewers with their own radius, groups and a boost set; entities with
  // groups and priorities that keep changing (the groups log and checks run every tick).
  for (uint32_t s = 0; s < 600; s += 2) {
    ViewerChange ch;
    ch.what = ViewerChange::kViewRadius | ViewerChange::kGroups | ViewerChange::kBoost;
    ch.to.viewRadiusRaw = c.viewRadiusRaw / 2 + rng() % (c.viewRadiusRaw / 2);
    ch.to.groups = 1u + rng() % 15;
    ch.to.boostFactor = 4;
    for (uint32_t k = 0; k < 8; ++k) ch.boost.push_back(w.entities().idOfSlot(rng() % 4000));
    w.changeViewer(w.entities().idOfSlot(s), std::move(ch));
  }
  for (uint32_t s = 0; s < 4000; ++s) w.entities().setWeight(w.entities().idOfSlot(s), 1 + rng() % 16);
  ThreadPool pool(threads);
  auto tick = [&](uint32_t t) {
    int32_t* xs = w.entities().x();
    for (uint32_t s = 0; s < 4000; ++s) xs[s] += int32_t(rng() % 201) - 100;
    for (uint32_t k = 0; k < 40; ++k) w.entities().setGroups(w.entities().idOfSlot(rng() % 4000), rng() % 16);
    for (uint32_t k = 0; k < 5; ++k) {  // jumps of avatars: teleports
      const uint32_t s = rng() % 600;
      xs[s] = int32_t(2048 * 1024 + rng() % (128 * 1024));
      w.teleportViewer(w.entities().idOfSlot(s));
    }
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

// The world of the two checks below: 1,200 entities 2 m apart on a 40-wide grid, the first 1,024
// of them viewers (every other one with acks), so that its viewer list is exactly full.
static void fillViewerList(World& w) {
  for (int i = 0; i < 1200; ++i) w.entities().spawn(int32_t(1000 * 1024 + (i % 40) * 2048), int32_t(1000 * 1024 + (i / 40) * 2048), 0);
  for (uint32_t s = 0; s < 1024; ++s) w.addViewer(w.entities().idOfSlot(s), ViewerOptions{0, 1, s % 2 == 0});
}

// Adds asked for while a pass runs on other threads (a world whose viewer list is exactly full):
// building them and reserving room touches nothing the pass reads (ThreadSanitizer and
// AddressSanitizer watch), and they are adopted after it without allocating.
void addsPreparedDuringAPass() {
  ConfigInput in;
  Config c = buildConfig(in);
  World w(c, 4096);
  fillViewerList(w);
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
  fillViewerList(w);
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
