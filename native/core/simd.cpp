#include "simd.h"

#include <cstdlib>
#include <cctype>
#include <string>

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

// SIGHTLINE_SIMD=off (or 0, false, no; any case, surrounding blanks ignored) turns the vector
// kernels off.
bool offByEnvironment() {
  const char* v = std::getenv("SIGHTLINE_SIMD");
  if (!v) return false;
  std::string s(v);
  const size_t first = s.find_first_not_of(" \t\r\n"), last = s.find_last_not_of(" \t\r\n");
  s = first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s == "off" || s == "0" || s == "false" || s == "no";
}

const bool kCpu = detect();
bool enabled = kCpu && !offByEnvironment();

}  // namespace

bool cpuHasAvx512() { return kCpu; }
bool simdEnabled() { return enabled; }
void setSimd(bool on) { enabled = on && kCpu; }

}  // namespace sightline
