#include "entities.h"

#include <cstdlib>
#include <string>

#include "errors.h"

namespace sightline {

EntityStore::EntityStore(uint32_t capacity)
    : capacity_(capacity),
      owned_(std::make_shared<int32_t[]>(size_t{3} * capacity)),
      x_(owned_.get()),
      y_(owned_.get() + capacity),
      z_(owned_.get() + size_t{2} * capacity),
      prev_(size_t{3} * capacity),
      odometer_(capacity),
      odometerBase_(capacity),
      generation_(capacity),
      alive_(capacity),
      groups_(capacity, ~0u),
      weights_(capacity, 1),
      wrapped_(capacity),
      fresh_(capacity),
      freeRing_(capacity) {
  if (capacity == 0 || capacity > kMaxCapacity)
    throw CoreError("ERR_SIGHTLINE_INVALID_CAPACITY", "capacity must be between 1 and " +
                                                          std::to_string(kMaxCapacity) + ", received " +
                                                          std::to_string(capacity));
}

void EntityStore::useMemory(int32_t* x, int32_t* y, int32_t* z) {
  for (uint32_t i = 0; i < capacity_; ++i) x[i] = x_[i], y[i] = y_[i], z[i] = z_[i];
  x_ = x, y_ = y, z_ = z;
  owned_.reset();
}

uint32_t EntityStore::spawn(int32_t x, int32_t y, int32_t z) {
  uint32_t slot;
  // A freed slot comes back only once kReuseAfter others wait (or no fresh slot is left), oldest
  // first: a slot is reused at most once per kReuseAfter despawns.
  if (freeCount_ > 0 && (freeCount_ >= kReuseAfter || highWater_ >= capacity_)) {
    slot = freeRing_[freeHead_];
    freeHead_ = (freeHead_ + 1) % capacity_;
    --freeCount_;
  } else if (highWater_ < capacity_) {
    slot = highWater_++;
  } else {
    throw CoreError("ERR_SIGHTLINE_WORLD_FULL",
                    "cannot spawn: all " + std::to_string(capacity_) + " entity slots are live (raise capacity)");
  }
  x_[slot] = x, y_[slot] = y, z_[slot] = z;
  alive_[slot] = 1;
  fresh_[slot] = 1;
  groups_[slot] = ~0u;
  weights_[slot] = 1;
  odometer_[slot] += kSpawnOdometerStep;  // wraps by design
  odometerBase_[slot] = odometer_[slot];
  ++liveCount_;
  return makeId(slot, generation_[slot]);
}

uint32_t EntityStore::checkedSlot(uint32_t id) const {
  uint32_t slot = slotOfId(id);
  if (slot >= highWater_)
    throw CoreError("ERR_SIGHTLINE_INVALID_ENTITY", "entity id " + std::to_string(id) + " was never spawned");
  // A generation the slot has not reached yet was never issued (unless the slot wrapped).
  const uint32_t gen = generationOfId(id), next = generation_[slot] + (alive_[slot] ? 1u : 0u);
  if (!wrapped_[slot] && gen >= next)
    throw CoreError("ERR_SIGHTLINE_INVALID_ENTITY", "entity id " + std::to_string(id) + " was never spawned (slot " +
                                                        std::to_string(slot) + " has issued generations 0 to " +
                                                        std::to_string(next - 1) + " only)");
  if (!alive_[slot] || generation_[slot] != gen)
    throw CoreError("ERR_SIGHTLINE_STALE_ENTITY", "entity id " + std::to_string(id) +
                                                      " is stale: it was despawned (slot " + std::to_string(slot) +
                                                      " now answers to " +
                                                      (alive_[slot] ? std::to_string(idOfSlot(slot)) : "no id") + ")");
  return slot;
}

bool EntityStore::isLive(uint32_t id) const {
  uint32_t slot = slotOfId(id);
  return slot < highWater_ && alive_[slot] && generation_[slot] == generationOfId(id);
}

void EntityStore::despawn(uint32_t id) {
  uint32_t slot = checkedSlot(id);
  alive_[slot] = 0;
  generation_[slot] = static_cast<uint16_t>((generation_[slot] + 1) & kGenerationMask);
  if (generation_[slot] == 0) wrapped_[slot] = 1;
  freeRing_[(freeHead_ + freeCount_) % capacity_] = slot;
  ++freeCount_;
  --liveCount_;
}

void EntityStore::setGroups(uint32_t id, uint32_t groups) {
  groups_[checkedSlot(id)] = groups;
  groupsEverSet_ = true;
}

void EntityStore::setWeight(uint32_t id, uint32_t weight) {
  const uint32_t slot = checkedSlot(id);
  if (weight < 1 || weight > kMaxWeight)
    throw CoreError("ERR_SIGHTLINE_INVALID_PRIORITY", "a priority weight must be an integer from 1 to " +
                                                          std::to_string(kMaxWeight) + ", received " + std::to_string(weight));
  weights_[slot] = uint8_t(weight);
}

uint64_t EntityStore::memoryBytes() const {
  const uint64_t perSlot = sizeof(int32_t) * 3 /* prev_ */ + sizeof(uint32_t) * 4 /* odometer, base, free ring, groups */ +
                           sizeof(uint16_t) + 4 /* alive, wrapped, fresh, weight */ + (owned_ ? sizeof(int32_t) * 3 : 0);
  return uint64_t{capacity_} * perSlot;
}

void EntityStore::advanceOdometer() {
  int32_t* prev = prev_.data();
  for (uint32_t s = 0; s < highWater_; ++s) {
    if (!alive_[s]) continue;
    int32_t* p = prev + size_t{3} * s;
    if (fresh_[s]) {
      fresh_[s] = 0;
    } else {
      uint64_t d = static_cast<uint64_t>(std::llabs(int64_t{x_[s]} - p[0])) +
                   static_cast<uint64_t>(std::llabs(int64_t{y_[s]} - p[1])) +
                   static_cast<uint64_t>(std::llabs(int64_t{z_[s]} - p[2]));
      odometer_[s] += static_cast<uint32_t>(d);  // wraps by design: drift is a wrapping difference
    }
    p[0] = x_[s], p[1] = y_[s], p[2] = z_[s];
  }
}

}  // namespace sightline
