// World::acknowledgeAll: a batch of acknowledgements (a transport's, gathered between ticks) applied
// on the thread pool, with the effect of World::acknowledge called for each in order.
#include "world.h"

namespace sightline {

namespace {
// Below this many acknowledgements the batch is applied on the calling thread: waking the pool
// costs more than it saves (a guess: an acknowledgement costs about a microsecond, a wake-up tens).
constexpr size_t kInlineAcks = 64;

// The part of the batch a viewer's acknowledgements belong to (Fibonacci hashing of the id).
inline uint32_t partOf(uint32_t viewer, uint32_t parts) {
  return uint32_t((uint64_t(viewer * 2654435761u) * parts) >> 32);
}
}  // namespace

void World::acknowledgeAll(const AckInput* acks, size_t n, AckOutcome* outcome, ThreadPool& pool) {
  // The checks and the refusals of acknowledge(), without throwing: a refused acknowledgement
  // changes nothing there either.
  auto one = [&](size_t i) {
    const AckInput& a = acks[i];
    auto it = viewerIndex_.find(a.viewer);
    if (it == viewerIndex_.end() || !it->second->ackLog) {
      outcome[i] = AckOutcome::Unused;
      return;
    }
    Viewer& v = *it->second;
    if (!ackWasSent(a.ack, v.sequence, v.passes)) {
      outcome[i] = AckOutcome::Invalid;
      return;
    }
    applyAck(v, a.ack, a.ackBits);
    outcome[i] = AckOutcome::Applied;
  };
  const uint32_t parts = pool.size();
  if (parts <= 1 || n < kInlineAcks) {
    for (size_t i = 0; i < n; ++i) one(i);
    return;
  }
  // Each part scans the batch for its own viewers' acknowledgements, in batch order.
  pool.parallelFor(parts, 1, [&](uint32_t b, uint32_t e, unsigned) {
    for (uint32_t p = b; p < e; ++p)
      for (size_t i = 0; i < n; ++i)
        if (partOf(acks[i].viewer, parts) == p) one(i);
  });
}

}  // namespace sightline
