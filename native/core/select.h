// Partial selection for the pass: the `take` smallest of n entries under a strict total order,
// by a two-level radix select on a log-scale bucket of a 64-bit key. Used for eligibility (nearest
// ghostCap candidates) and for the choice of updates (highest scores). Entries are named by their
// position; the caller's callables read them. No allocation: the caller passes the scratch.
#pragma once
#include <algorithm>
#include <cstdint>

namespace sightline {

// A log-scale bucket of a 64-bit key: bit width and the two bits below the leading one (a tiny
// float), 0..259, non-decreasing in the key.
constexpr uint32_t kBuckets = 260;
inline uint32_t logBucket(uint64_t v) {
  if (v < 4) return uint32_t(v);
  uint32_t w = uint32_t(64 - __builtin_clzll(v));  // >= 3
  return (w << 2) | uint32_t((v >> (w - 3)) & 3);
}

// Level 2 inside log bucket b: 64 sub-buckets splitting its key range [lo, lo + 2^(w-3)) evenly
// (w = b >> 2); 0..63, non-decreasing in v. Buckets below 4 hold one key each.
inline uint32_t subBucket(uint64_t v, uint32_t b) {
  if (b < 4) return 0;
  uint32_t w = b >> 2;
  uint64_t off = v - (uint64_t(4 | (b & 3)) << (w - 3));
  return uint32_t(w > 9 ? off >> (w - 9) : off);
}

// The branch-free splits of the selections below, on vectors where the CPU has them (select.cpp).
// Each writes positions in increasing order and may write up to kSplitSlack entries past the
// counts it returns.
constexpr uint32_t kSplitSlack = 16;
struct Split {
  uint32_t below;  // positions written to `below`
  uint32_t at;     // positions written to the other list (at the threshold bucket, or in the band)
};
// Positions i of buckets[0, n) with buckets[i] < B to below, == B to at.
Split splitBuckets(const uint16_t* buckets, uint32_t n, uint16_t B, uint32_t* below, uint32_t* at);
// Positions i of keys[0, n) with keys[i] < lo to below, lo <= keys[i] <= hi to band.
Split splitBand(const uint64_t* keys, uint32_t n, uint64_t lo, uint64_t hi, uint32_t* below, uint32_t* band);

// logBucket of keys[0, n) into buckets[0, n), or kBuckets - 1 - logBucket when flip (an order by
// largest key first). May write up to kSplitSlack entries past n.
void logBuckets(const uint64_t* keys, uint32_t n, bool flip, uint16_t* buckets);
// The smallest B such that at least `take` of buckets[0, n) are <= B. Requires 0 < take <= n.
// hint (< kBuckets; kBuckets: none) is a guess, such as last pass's: the search on vectors starts
// there and widens, so a guess at or next to B costs 2 or 3 counts instead of 9. The result does
// not depend on it.
uint32_t thresholdBucket(const uint16_t* buckets, uint32_t n, uint32_t take, uint32_t hint = kBuckets);

// Ties at the threshold bucket up to this many are ordered by less at once, without level 2
// (measured: town square 2-4% faster at 8 or 16, slower at 32).
constexpr uint32_t kFewTies = 16;

// Writes to out[0, take) the positions of the `take` smallest entries of [0, n) under less(i, j), a
// strict total order on positions, in no particular order (but a deterministic one). A radix
// select: the caller fills buckets[i] with a bucket of entry i, non-decreasing in the order's key
// (logBuckets does it for a key array); the bucket holding the take-th entry is found, and entries
// in lower buckets are kept outright. The threshold bucket is split again into 64 sub-buckets by
// sub(i, bucket), and only its threshold sub-bucket (usually one or two entries) is ordered
// exactly by less (a threshold bucket of at most kFewTies entries is ordered by less at once).
// less is a total order, so the chosen set does not depend on the thread count.
// Requires 0 < take < n; buckets (overwritten) holds n entries, idx has room for 2n + 2 kSplitSlack;
// out does not overlap idx. bucketHint, when given, holds a guess of the threshold bucket (see
// thresholdBucket; kBuckets: none) and receives the threshold bucket found.
template <typename Sub, typename Less>
void keepSmallest(uint32_t n, uint32_t take, uint32_t* out, uint16_t* buckets, uint32_t* idx, Sub sub, Less less,
                  uint16_t* bucketHint = nullptr) {
  const uint32_t B = thresholdBucket(buckets, n, take, bucketHint ? *bucketHint : kBuckets);
  if (bucketHint) *bucketHint = uint16_t(B);
  // Split into positions: below the threshold bucket to the front of idx, ties at it to the back.
  uint32_t* tie = idx + n + kSplitSlack;
  const Split split = splitBuckets(buckets, n, uint16_t(B), idx, tie);
  const uint32_t below = split.below, t = split.at;
  uint32_t need = take - below;  // >= 1 and <= t
  if (t > need && t <= kFewTies) {
    std::nth_element(tie, tie + need - 1, tie + t, less);  // few: ordered exactly at once
  } else if (t > need) {
    // Level 2 over the threshold bucket. Winners move to the front of tie (in place: writes trail
    // reads); the threshold sub-bucket goes to idx[below, ...), free since below + t <= n.
    uint32_t sh[64] = {};
    for (uint32_t j = 0; j < t; ++j) {
      uint32_t s = sub(tie[j], B);
      buckets[tie[j]] = uint16_t(s);
      ++sh[s];
    }
    uint32_t SB = 0, cum2 = 0;
    while (cum2 + sh[SB] < need) cum2 += sh[SB++];
    uint32_t* rest = idx + below;
    uint32_t won = 0, r = 0;
    for (uint32_t j = 0; j < t; ++j) {
      uint32_t x = tie[j], s = buckets[x];
      tie[won] = x;
      won += s < SB;
      rest[r] = x;
      r += s == SB;
    }
    uint32_t need2 = need - won;  // >= 1 and <= r
    if (r > need2) std::nth_element(rest, rest + need2, rest + r, less);
    for (uint32_t k = 0; k < need2; ++k) out[below + won + k] = rest[k];
    need = won;
  }
  for (uint32_t k = 0; k < below; ++k) out[k] = idx[k];
  for (uint32_t k = 0; k < need; ++k) out[below + k] = tie[k];
}

// keepSmallest with a guess: when the take-th smallest key lies in [lo, hi] (a band around last
// pass's threshold), one pass sorts the positions into those below lo (kept), those in the band
// (ordered exactly by less) and those above hi (dropped), and the result is the same set as
// keepSmallest's. key(i) is the order's key: less(i, j) whenever key(i) < key(j); when the keys
// are an array, passing it as `keys` lets the split run on vectors. Returns false when the guess
// missed (out's contents are then unspecified). On success *threshold is the take-th smallest key
// when one from the band was taken (else left as is). Requires 0 < take < n; out and idx each have
// room for n + kSplitSlack entries and do not overlap.
template <typename Key, typename Less>
bool keepSmallestNear(uint32_t n, uint32_t take, uint32_t* out, uint32_t* idx, uint64_t lo, uint64_t hi, Key key,
                      Less less, uint64_t* threshold, const uint64_t* keys = nullptr) {
  // Those below lo go straight to the front of out, in order; the band's to idx.
  Split split{0, 0};
  if (keys) {
    split = splitBand(keys, n, lo, hi, out, idx);
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t k = key(i);
      out[split.below] = i;
      split.below += k < lo;
      idx[split.at] = i;
      split.at += (k >= lo) & (k <= hi);
    }
  }
  const uint32_t below = split.below, band = split.at;
  if (below > take || below + band < take) return false;
  uint32_t need = take - below;
  if (need > 0) {
    // idx[need - 1] becomes the need-th smallest of the band, the ones before it smaller.
    if (band > need) std::nth_element(idx, idx + need - 1, idx + band, less);
    else std::iter_swap(idx + need - 1, std::max_element(idx, idx + need, less));
    *threshold = key(idx[need - 1]);
  }
  for (uint32_t k = 0; k < need; ++k) out[below + k] = idx[k];
  return true;
}

// The `take` positions of list[0, count) that come first under less, written to out: keepSmallest
// over the listed positions, by the log bucket of keyOf(position), larger keys first (less's first
// criterion); all of them when take >= count. keys has room for count + kSplitSlack entries,
// buckets for count + kSplitSlack, idx for 2 count + 2 kSplitSlack.
template <typename KeyOf, typename Less>
void keepLargestOf(const uint32_t* list, uint32_t count, uint32_t take, uint32_t* out, KeyOf keyOf, Less less,
                   uint64_t* keys, uint16_t* buckets, uint32_t* idx) {
  if (take >= count) {
    std::copy(list, list + count, out);
    return;
  }
  if (take == 0) return;
  for (uint32_t k = 0; k < count; ++k) keys[k] = keyOf(list[k]);
  logBuckets(keys, count, true, buckets);
  keepSmallest(
      count, take, out, buckets, idx, [keys](uint32_t k, uint32_t b) { return 63 - subBucket(keys[k], kBuckets - 1 - b); },
      [list, &less](uint32_t x, uint32_t y) { return less(list[x], list[y]); });
  for (uint32_t k = 0; k < take; ++k) out[k] = list[out[k]];
}

// The choice of updates when new ghosts may be short of room: the same set as walking the m
// records in order (less: best first) and taking each while fewer than `slots` are taken, a new
// one only while `room` lasts (skipping it otherwise). That walk takes the first `slots`, in order,
// of the held records and the best `room` new ones, so those are found by two partial selections
// instead of a sort. isNew(j): record j has no ghost entry; score(j): its key, larger first (less's
// first criterion). Writes the chosen positions to chosen (in no particular order) and returns
// their count; *skipped = new records the walk would have skipped before it stopped. Scratch:
// lists (2m), keys (m + kSplitSlack), buckets (m + kSplitSlack), idx (2m + 2 kSplitSlack), kept (m).
template <typename IsNew, typename Score, typename Less>
uint32_t chooseWithRoom(uint32_t m, uint32_t slots, uint32_t room, IsNew isNew, Score score, Less less,
                        uint32_t* chosen, uint32_t* skipped, uint32_t* lists, uint64_t* keys, uint16_t* buckets,
                        uint32_t* idx, uint8_t* kept) {
  *skipped = 0;
  if (slots == 0) return 0;  // the walk takes nothing and meets nothing
  uint32_t* fresh = lists;           // the new records
  uint32_t* pool = lists + m;        // held records, then the new ones kept
  uint32_t nFresh = 0, nPool = 0;
  for (uint32_t j = 0; j < m; ++j) {
    kept[j] = 0;
    if (isNew(j)) fresh[nFresh++] = j;
    else pool[nPool++] = j;
  }
  const uint32_t keepFresh = std::min(room, nFresh);
  if (keepFresh > 0 && keepFresh < nFresh && keepFresh <= kFewTies) {
    // Few to keep (a sections' floor admitting a handful of newcomers among many): a run kept in
    // order by insertion, where most records lose the one comparison with its last.
    uint32_t* best = pool + nPool;
    uint32_t c = 0;
    for (uint32_t k = 0; k < nFresh; ++k) {
      const uint32_t x = fresh[k];
      if (c == keepFresh && !less(x, best[c - 1])) continue;
      uint32_t at = c < keepFresh ? c++ : c - 1;
      for (; at > 0 && less(x, best[at - 1]); --at) best[at] = best[at - 1];
      best[at] = x;
    }
  } else {
    keepLargestOf(fresh, nFresh, keepFresh, pool + nPool, score, less, keys, buckets, idx);
  }
  for (uint32_t k = 0; k < keepFresh; ++k) kept[pool[nPool + k]] = 1;
  nPool += keepFresh;
  uint32_t take;
  if (nPool < slots) {
    std::copy(pool, pool + nPool, chosen);
    take = nPool;
    *skipped = nFresh - keepFresh;  // the walk went through every record
  } else {
    // The walk stops at the slots-th record taken: only the new ones it met before count.
    keepLargestOf(pool, nPool, slots, chosen, score, less, keys, buckets, idx);
    take = slots;
    uint32_t last = chosen[0];  // the last one the walk takes
    for (uint32_t k = 1; k < take; ++k)
      if (less(last, chosen[k])) last = chosen[k];
    for (uint32_t k = 0; k < nFresh; ++k) *skipped += !kept[fresh[k]] && less(fresh[k], last);
  }
  return take;
}

}  // namespace sightline
