// The checks sanitize.cpp's main runs from the other files of the sanitizer binaries, and what
// they share. Each check counts into the tally of check.h.
#pragma once

#include <cstdint>

namespace sightline {
class Snapshot;
namespace test {
// Snapshots in which a dense cell was divided twice as finely (its sub-cell held the walk cap):
// counted by the gather check and the randomized runs; main checks that some were.
extern uint64_t finerCells;
void countFinerCells(const Snapshot& snap);
}  // namespace test
}  // namespace sightline

// kernel_checks.cpp
void ghostLookupMatchesTheIndex();
void staleMatchesTheRule();
void selectionMatchesASort();
void snapshotPackingAgrees();
void gatherKernelsAgree();
void chooseWithRoomMatchesTheWalk();
// pool_checks.cpp
void blockArenaKeepsBlocksApart();
void threadPoolRunsEachIndexOnce();
void threadPoolKeepsWorkersOffCallerCpu();
#if SIGHTLINE_NATIVE_UDP
// net_checks.cpp: the native UDP data path.
void netChecks();
#endif
