#include "select.h"

#include <algorithm>

#include "simd.h"

#if SIGHTLINE_AVX512
#include <immintrin.h>
#endif

namespace sightline {

namespace {

// The portable splits: branch-free appends (always write, advance when the test holds).
template <typename IsBelow, typename IsAt>
Split splitPortable(uint32_t n, uint32_t* below, uint32_t* at, IsBelow isBelow, IsAt isAt) {
  Split s{0, 0};
  for (uint32_t i = 0; i < n; ++i) {
    below[s.below] = i;
    s.below += isBelow(i);
    at[s.at] = i;
    s.at += isAt(i);
  }
  return s;
}

Split splitBucketsPortable(const uint16_t* buckets, uint32_t n, uint16_t B, uint32_t* below, uint32_t* at) {
  return splitPortable(
      n, below, at, [=](uint32_t i) { return uint32_t(buckets[i] < B); },
      [=](uint32_t i) { return uint32_t(buckets[i] == B); });
}

Split splitBandPortable(const uint64_t* keys, uint32_t n, uint64_t lo, uint64_t hi, uint32_t* below, uint32_t* band) {
  return splitPortable(
      n, below, band, [=](uint32_t i) { return uint32_t(keys[i] < lo); },
      [=](uint32_t i) { return uint32_t((keys[i] >= lo) & (keys[i] <= hi)); });
}

void logBucketsPortable(const uint64_t* keys, uint32_t n, bool flip, uint16_t* buckets) {
  const uint32_t top = flip ? kBuckets - 1 : 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t b = logBucket(keys[i]);
    buckets[i] = uint16_t(flip ? top - b : b);
  }
}

// A histogram, two interleaved (consecutive entries often share a bucket, and one counter would
// make every increment wait for the previous one), then a scan for the take-th entry. Only the
// buckets between the lowest and the highest present are cleared and scanned (a pass's keys span
// a few dozen of the 260).
uint32_t thresholdBucketPortable(const uint16_t* buckets, uint32_t n, uint32_t take) {
  uint32_t lo = kBuckets - 1, hi = 0;
  for (uint32_t i = 0; i < n; ++i) lo = std::min<uint32_t>(lo, buckets[i]), hi = std::max<uint32_t>(hi, buckets[i]);
  uint32_t hist[kBuckets], hist2[kBuckets];
  std::fill(hist + lo, hist + hi + 1, 0u), std::fill(hist2 + lo, hist2 + hi + 1, 0u);
  uint32_t i = 0;
  for (; i + 1 < n; i += 2) ++hist[buckets[i]], ++hist2[buckets[i + 1]];
  if (i < n) ++hist[buckets[i]];
  uint32_t B = lo, cum = 0;
  while (cum + hist[B] + hist2[B] < take) cum += hist[B] + hist2[B], ++B;
  return B;
}

#if SIGHTLINE_AVX512
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics as maybe uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// logBucket 8 keys at a time: the bit width from a leading-zero count, the two bits below the
// leading one by a variable shift; keys below 4 are their own bucket.
SIGHTLINE_TARGET_AVX512
void logBuckets512(const uint64_t* keys, uint32_t n, bool flip, uint16_t* buckets) {
  const __m512i three = _mm512_set1_epi64(3), four = _mm512_set1_epi64(4), sixtyFour = _mm512_set1_epi64(64);
  const __m512i top = _mm512_set1_epi64(flip ? kBuckets - 1 : 0);
  for (uint32_t i = 0; i < n; i += 8) {
    __mmask8 live = n - i >= 8 ? __mmask8(0xff) : __mmask8((1u << (n - i)) - 1);
    __m512i v = _mm512_maskz_loadu_epi64(live, keys + i);
    __m512i w = _mm512_sub_epi64(sixtyFour, _mm512_lzcnt_epi64(v));
    __m512i frac = _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_sub_epi64(w, three)), three);
    __m512i b = _mm512_or_si512(_mm512_slli_epi64(w, 2), frac);
    b = _mm512_mask_mov_epi64(b, _mm512_cmplt_epu64_mask(v, four), v);
    if (flip) b = _mm512_sub_epi64(top, b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(buckets + i), _mm512_cvtepi64_epi16(b));
  }
}

// How many of buckets[0, n) are below x, 32 at a time.
SIGHTLINE_TARGET_AVX512
uint32_t countBelow512(const uint16_t* buckets, uint32_t n, uint32_t x) {
  const __m512i vx = _mm512_set1_epi16(int16_t(x));
  uint32_t count = 0, i = 0;
  for (; i + 32 <= n; i += 32)
    count += uint32_t(__builtin_popcount(_mm512_cmplt_epu16_mask(_mm512_loadu_si512(buckets + i), vx)));
  if (i < n) {
    __mmask32 live = __mmask32((1ull << (n - i)) - 1);
    count += uint32_t(
        __builtin_popcount(_mm512_mask_cmplt_epu16_mask(live, _mm512_maskz_loadu_epi16(live, buckets + i), vx)));
  }
  return count;
}

// The threshold bucket by binary search: 9 counts cover the 260 buckets. With a hint, the search
// first gallops from it (steps 1, 2, 4, ...) to a range that holds the answer, then halves that.
SIGHTLINE_TARGET_AVX512
uint32_t thresholdBucket512(const uint16_t* buckets, uint32_t n, uint32_t take, uint32_t hint) {
  // The smallest B in [lo, hi] with countBelow(B + 1) >= take; hi qualifies (every bucket < kBuckets).
  uint32_t lo = 0, hi = kBuckets - 1;
  if (hint < kBuckets) {
    // countBelow(0) = 0 < take: B >= x exactly when countBelow(x) < take.
    if (countBelow512(buckets, n, hint) < take) {  // B >= hint: up from hint
      lo = hint;
      for (uint32_t step = 1;;) {
        const uint32_t probe = std::min(lo + step - 1, hi);  // does B <= probe?
        if (countBelow512(buckets, n, probe + 1) >= take) {
          hi = probe;
          break;
        }
        lo = probe + 1;
        if (lo >= hi) break;
        step *= 2;
      }
    } else {  // B < hint: down from hint - 1
      hi = hint - 1;
      for (uint32_t step = 1;;) {
        const uint32_t probe = hi >= step ? hi - step + 1 : 0;  // does B >= probe?
        if (probe == 0 || countBelow512(buckets, n, probe) < take) {
          lo = probe;
          break;
        }
        hi = probe - 1;
        step *= 2;
      }
    }
  }
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (countBelow512(buckets, n, mid + 1) >= take) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

// The same splits 16 (buckets) or 8 (keys) positions at a time: compare to a mask, compress the
// positions, store them whole and advance by the mask's population. Masked loads for the tail.
SIGHTLINE_TARGET_AVX512
Split splitBuckets512(const uint16_t* buckets, uint32_t n, uint16_t B, uint32_t* below, uint32_t* at) {
  Split s{0, 0};
  const __m256i vB = _mm256_set1_epi16(int16_t(B));
  __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i sixteen = _mm512_set1_epi32(16);
  for (uint32_t i = 0; i < n; i += 16) {
    __mmask16 live = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    __m256i b = _mm256_maskz_loadu_epi16(live, buckets + i);
    __mmask16 lt = _mm256_mask_cmplt_epu16_mask(live, b, vB), eq = _mm256_mask_cmpeq_epu16_mask(live, b, vB);
    _mm512_storeu_si512(below + s.below, _mm512_maskz_compress_epi32(lt, pos));
    _mm512_storeu_si512(at + s.at, _mm512_maskz_compress_epi32(eq, pos));
    s.below += uint32_t(__builtin_popcount(lt)), s.at += uint32_t(__builtin_popcount(eq));
    pos = _mm512_add_epi32(pos, sixteen);
  }
  return s;
}

SIGHTLINE_TARGET_AVX512
Split splitBand512(const uint64_t* keys, uint32_t n, uint64_t lo, uint64_t hi, uint32_t* below, uint32_t* band) {
  Split s{0, 0};
  const __m512i vlo = _mm512_set1_epi64(int64_t(lo)), vhi = _mm512_set1_epi64(int64_t(hi));
  __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i eight = _mm256_set1_epi32(8);
  for (uint32_t i = 0; i < n; i += 8) {
    __mmask8 live = n - i >= 8 ? __mmask8(0xff) : __mmask8((1u << (n - i)) - 1);
    __m512i k = _mm512_maskz_loadu_epi64(live, keys + i);
    __mmask8 lt = _mm512_mask_cmplt_epu64_mask(live, k, vlo);
    __mmask8 in = _mm512_mask_cmple_epu64_mask(_mm512_mask_cmpge_epu64_mask(live, k, vlo), k, vhi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(below + s.below), _mm256_maskz_compress_epi32(lt, pos));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(band + s.at), _mm256_maskz_compress_epi32(in, pos));
    s.below += uint32_t(__builtin_popcount(lt)), s.at += uint32_t(__builtin_popcount(in));
    pos = _mm256_add_epi32(pos, eight);
  }
  return s;
}
#pragma GCC diagnostic pop
#endif

}  // namespace

void logBuckets(const uint64_t* keys, uint32_t n, bool flip, uint16_t* buckets) {
#if SIGHTLINE_AVX512
  if (simdEnabled()) return logBuckets512(keys, n, flip, buckets);
#endif
  logBucketsPortable(keys, n, flip, buckets);
}

uint32_t thresholdBucket(const uint16_t* buckets, uint32_t n, uint32_t take, uint32_t hint) {
#if SIGHTLINE_AVX512
  if (simdEnabled()) return thresholdBucket512(buckets, n, take, hint);
#endif
  (void)hint;  // the portable search counts every bucket at once
  return thresholdBucketPortable(buckets, n, take);
}

Split splitBuckets(const uint16_t* buckets, uint32_t n, uint16_t B, uint32_t* below, uint32_t* at) {
#if SIGHTLINE_AVX512
  if (simdEnabled()) return splitBuckets512(buckets, n, B, below, at);
#endif
  return splitBucketsPortable(buckets, n, B, below, at);
}

Split splitBand(const uint64_t* keys, uint32_t n, uint64_t lo, uint64_t hi, uint32_t* below, uint32_t* band) {
#if SIGHTLINE_AVX512
  if (simdEnabled()) return splitBand512(keys, n, lo, hi, below, band);
#endif
  return splitBandPortable(keys, n, lo, hi, below, band);
}

}  // namespace sightline
