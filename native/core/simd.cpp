#include "simd.h"

#include <cstdlib>
#include <cstring>

namespace sightline {

namespace {

bool detect() {
#if SIGHTLINE_AVX512
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
#else
  return false;
#endif
}

bool offByEnvironment() {
  const char* v = std::getenv("SIGHTLINE_SIMD");
  return v && (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0);
}

const bool kCpu = detect();
bool enabled = kCpu && !offByEnvironment();

}  // namespace

bool cpuHasAvx512() { return kCpu; }
bool simdEnabled() { return enabled; }
void setSimd(bool on) { enabled = on && kCpu; }

}  // namespace sightline
