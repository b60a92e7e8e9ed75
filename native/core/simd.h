// Vector kernels: which ones the pass uses. On x86-64 with AVX-512 (F, DQ, VL, BW, CD) the gather and
// the selections run 8 or 16 lanes at a time; everywhere else, or with SIGHTLINE_SIMD=off in the
// environment, the portable loops run. Both give the same results bit for bit: the tests compare
// them. Chosen once from the CPU; tests may switch between passes.
#pragma once

namespace sightline {

// Whether this CPU runs the AVX-512 kernels.
bool cpuHasAvx512();
// Whether the pass uses them now: cpuHasAvx512() and not turned off (SIGHTLINE_SIMD=off, or
// setSimd(false)).
bool simdEnabled();
// Tests: false forces the portable loops; true uses the vector ones where the CPU has them. Not
// during a pass.
void setSimd(bool on);

// Defining SIGHTLINE_NO_AVX512 builds without the vector kernels (as on other CPUs and compilers).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SIGHTLINE_NO_AVX512)
#define SIGHTLINE_AVX512 1
#define SIGHTLINE_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx512cd,bmi,bmi2,popcnt")))
#else
#define SIGHTLINE_AVX512 0
#endif

}  // namespace sightline
