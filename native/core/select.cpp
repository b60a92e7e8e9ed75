#include "select.h"

#include "simd.h"

#if SIGHTLINE_AVX512
#include <immintrin.h>
#endif

namespace sightline {

namespace {

Split splitBucketsPortable(const uint16_t* buckets, uint32_t n, uint16_t B, uint32_t* below, uint32_t* at) {
  Split s{0, 0};
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t b = buckets[i];
    below[s.below] = i;
    s.below += b < B;
    at[s.at] = i;
    s.at += b == B;
  }
  return s;
}

Split splitBandPortable(const uint64_t* keys, uint32_t n, uint64_t lo, uint64_t hi, uint32_t* below, uint32_t* band) {
  Split s{0, 0};
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t k = keys[i];
    below[s.below] = i;
    s.below += k < lo;
    band[s.at] = i;
    s.at += (k >= lo) & (k <= hi);
  }
  return s;
}

#if SIGHTLINE_AVX512
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
#endif

}  // namespace

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
