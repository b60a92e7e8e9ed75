// What the sanitizer binaries' checks share: the tally, and CHECK(cond, format, ...), which counts
// a check and prints a failure with its file and line.
#pragma once

#include <cstdio>

namespace sightline::test {
inline int failures = 0, checks = 0;
}  // namespace sightline::test

#define CHECK(cond, ...)                                             \
  do {                                                               \
    ++::sightline::test::checks;                                     \
    if (!(cond)) {                                                   \
      ++::sightline::test::failures;                                 \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);      \
      std::fprintf(stderr, __VA_ARGS__);                             \
      std::fprintf(stderr, "\n");                                    \
    }                                                                \
  } while (0)
