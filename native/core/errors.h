// Core errors: a stable code (ERR_SIGHTLINE_...) and a message naming the value and what is valid.
// The addon converts these to JavaScript errors carrying `code`.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace sightline {

class CoreError : public std::runtime_error {
 public:
  CoreError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// A received number as JavaScript would print it, for messages: 1200, 1200.5, 0.1, -1, 1e+300,
// NaN, Infinity. Integers below 2^53 in full; others in the shortest form that reads back the same.
inline std::string formatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char t[40];
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    std::snprintf(t, sizeof t, "%.0f", v);
    return t;
  }
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(t, sizeof t, "%.*g", p, v);
    if (std::strtod(t, nullptr) == v) return t;
  }
  return t;
}

}  // namespace sightline
