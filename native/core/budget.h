// Budget: how a packet's bytes are shared. state bytes = payload - header - event reserve in use;
// despawn records take at most half of them; update slots = remaining state bytes / record size
// (the configuration's recordBytes: 12 plus its fields' bytes).
#pragma once
#include <cstdint>

#include "config.h"

namespace sightline {

struct Budget {
  uint32_t stateBytes;
  uint32_t maxDespawns;
};

inline Budget packetBudget(uint32_t payloadBytes, uint32_t eventBytesInUse) {
  uint32_t state = payloadBytes - kHeaderBytes - eventBytesInUse;
  return Budget{state, (state / 2) / kDespawnRecordBytes};
}

inline uint32_t updateSlots(const Budget& b, uint32_t despawns, uint32_t recordBytes) {
  return (b.stateBytes - despawns * kDespawnRecordBytes) / recordBytes;
}

}  // namespace sightline
