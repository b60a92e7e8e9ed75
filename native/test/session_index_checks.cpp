// The session table's indexes (net/flat_index.h, net/session_table.cpp) against the obvious model:
// random adds and removes, each lookup compared with a std::map of what is live. FlatIndex is also
// driven with hashes chosen to collide and to wrap past the end of its array, where the backward
// shift of erase() has to keep every entry reachable. Linked into build/sanitize and build/tsan.
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "check.h"
#include "flat_index.h"
#include "session_table.h"

using namespace sightline;
using namespace sightline::net;

namespace {

// FlatIndex alone: keys are (hash, slot) pairs; hashes from a handful of values so runs collide,
// some near the array's end (16 places for capacity 8) so runs wrap, two with the same low 32 bits.
void flatIndexAgainstModel() {
  std::mt19937 rng(20261202);
  const uint32_t capacity = 8;
  const uint64_t hashes[] = {15, 31, 14, 0, 1, 47, 0x100000000ull + 15, 7};
  unsigned mismatches = 0, ops = 0;
  for (int round = 0; round < 200; ++round) {
    FlatIndex index(capacity);
    std::map<uint32_t, uint64_t> live;  // slot -> hash
    for (int step = 0; step < 400; ++step, ++ops) {
      const uint32_t slot = rng() % capacity;
      auto it = live.find(slot);
      if (it == live.end()) {
        const uint64_t h = hashes[rng() % 8];
        index.insert(h, slot);
        live.emplace(slot, h);
      } else {
        if (!index.erase(it->second, slot)) ++mismatches;
        live.erase(it);
      }
      for (uint32_t s = 0; s < capacity; ++s) {
        auto l = live.find(s);
        for (uint64_t h : hashes) {
          const int64_t got = index.find(h, [&](uint32_t c) { return c == s; });
          // The index keeps a hash's low 32 bits: the caller's match() tells apart keys that share them.
          const bool want = l != live.end() && uint32_t(l->second) == uint32_t(h);
          if ((got >= 0) != want || (want && got != int64_t(s))) ++mismatches;
        }
      }
    }
  }
  CHECK(mismatches == 0, "flat index: %u lookups disagree with the model in %u operations", mismatches, ops);
  std::printf("flat index: %u random inserts and erases on colliding, wrapping hashes, every lookup as the model\n", ops);
}

Endpoint peerAt(uint32_t i) {
  Endpoint e;
  if (i % 3 == 0) {
    char text[64];
    std::snprintf(text, sizeof text, "fd00::%x:%x", i >> 16, i & 0xffff);
    Endpoint::parse(text, uint16_t(1000 + i % 7), AF_INET6, e);
  } else {
    char text[32];
    std::snprintf(text, sizeof text, "10.0.%u.%u", (i >> 8) & 255, i & 255);
    Endpoint::parse(text, uint16_t(40000 + i % 5), AF_INET, e);
  }
  return e;
}

// SessionTable: random adds and removes of viewers at addresses (IPv4 and IPv6, some refused as
// taken), findViewer, findPeer and size compared with a model after every operation.
void sessionTableAgainstModel() {
  std::mt19937 rng(7);
  const uint32_t capacity = 64;
  SessionTable table(capacity, 1);
  std::map<uint32_t, uint32_t> model;  // viewer -> peer number
  const uint8_t token[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  unsigned mismatches = 0, ops = 0;
  for (int step = 0; step < 20000; ++step, ++ops) {
    const uint32_t viewer = rng() % 96, peer = rng() % 96;
    if (rng() % 2) {
      const auto r = table.add(viewer, peerAt(peer), token, 0);
      bool peerTaken = false;
      for (auto& [v, p] : model) peerTaken |= p == peer;
      const auto want = model.count(viewer)           ? SessionTable::AddResult::ViewerTaken
                        : peerTaken                   ? SessionTable::AddResult::PeerTaken
                        : model.size() == capacity    ? SessionTable::AddResult::Full
                                                      : SessionTable::AddResult::Added;
      if (r != want) ++mismatches;
      if (r == SessionTable::AddResult::Added) model.emplace(viewer, peer);
    } else {
      if (table.remove(viewer) != (model.erase(viewer) == 1)) ++mismatches;
    }
    if (table.size() != model.size()) ++mismatches;
    std::lock_guard<std::mutex> lock(table.mutex());
    for (uint32_t v = 0; v < 96; ++v) {
      Session* s = table.findViewer(v);
      auto m = model.find(v);
      if ((s != nullptr) != (m != model.end()) || (s && !(s->peer == peerAt(m->second)))) ++mismatches;
    }
    for (uint32_t p = 0; p < 96; ++p) {
      Session* s = table.findPeer(peerAt(p));
      auto m = std::find_if(model.begin(), model.end(), [&](auto& kv) { return kv.second == p; });
      if ((s != nullptr) != (m != model.end()) || (s && s->viewer != m->first)) ++mismatches;
    }
  }
  table.clear();
  std::lock_guard<std::mutex> lock(table.mutex());
  bool anyLeft = false;
  for (uint32_t v = 0; v < 96; ++v) anyLeft |= table.findViewer(v) != nullptr || table.findPeer(peerAt(v)) != nullptr;
  CHECK(mismatches == 0 && !anyLeft, "session table: %u disagreements with the model in %u operations%s", mismatches,
        ops, anyLeft ? ", sessions left after clear()" : "");
  std::printf("session table: %u random adds and removes, lookups by viewer and by peer as the model\n", ops);
}

}  // namespace

void sessionIndexChecks() {
  flatIndexAgainstModel();
  sessionTableAgainstModel();
}
