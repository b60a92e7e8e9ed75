// Fixed-point positions: raw Int32 with 10 fractional bits (1 m = 1024 raw units).
// The one place in C++ that converts between meters and raw units.
#pragma once
#include <cstdint>
#include <cmath>

namespace sightline {

constexpr int kFracBits = 10;
constexpr int32_t kRawPerMeter = 1 << kFracBits;  // 1024

// Meters -> raw, rounded to nearest (ties away from zero, as std::llround).
inline int64_t metersToRaw(double meters) { return std::llround(meters * kRawPerMeter); }
inline double rawToMeters(int64_t raw) { return static_cast<double>(raw) / kRawPerMeter; }

// Product of two fixed-point values, widened to 64 bits before the shift.
inline int32_t fixedMul(int32_t a, int32_t b) {
  return static_cast<int32_t>((static_cast<int64_t>(a) * b) >> kFracBits);
}

// Squared 2D distance between raw positions; 64-bit, never overflows for |d| < 2^31.
inline uint64_t distSq2(int64_t dx, int64_t dy) {
  return static_cast<uint64_t>(dx * dx) + static_cast<uint64_t>(dy * dy);
}

inline bool isPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
// ilog2(0) = 0. Branch-free: bit 0 changes the leading bit of no v but 0.
inline int ilog2(uint64_t v) { return 63 - __builtin_clzll(v | 1); }
inline int ceilLog2(uint64_t v) { return v <= 1 ? 0 : 64 - __builtin_clzll(v - 1); }

}  // namespace sightline
