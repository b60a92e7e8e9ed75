// The engine's fast pieces against their slow, obviously right twins, under the sanitizers: the
// ghost lookup against the table's index, the stale rule, the selections against a sort, the
// snapshot's packing, the gather kernels (AVX-512 and portable) against brute force, and the walk
// with little room. Called from sanitize.cpp's main, counted in the same tally.
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

namespace sightline::test {
uint64_t finerCells = 0;
void countFinerCells(const Snapshot& snap) {
  for (uint32_t k = 0; k < snap.denseCells(); ++k) finerCells += snap.dense[k].level;
}
}  // namespace sightline::test

using test::countFinerCells;
using test::finerCells;

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
