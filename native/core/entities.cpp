#include "entities.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "errors.h"

namespace sightline {

EntityStore::EntityStore(uint32_t capacity, const StoreSchema& schema)
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
      freeRing_(capacity),
      fieldSpecs_(schema.fields),
      stateDrift_(schema.stateDrift),
      kind_(capacity),
      stateFlags_(capacity),
      kindMark_(capacity),
      attributeMark_(capacity),
      attributes_(capacity, schema.attributeBytes) {
  const std::vector<FieldSpec>& fields = schema.fields;
  if (capacity == 0 || capacity > kMaxCapacity)
    throw CoreError("ERR_SIGHTLINE_INVALID_CAPACITY", "capacity must be between 1 and " +
                                                          std::to_string(kMaxCapacity) + ", received " +
                                                          std::to_string(capacity));
  if (!fields.empty()) {
    fieldOwned_ = std::make_shared<int32_t[]>(fields.size() * size_t{capacity});
    fieldValues_ = fieldOwned_.get();
    packedFields_.resize(capacity), packScratch_.resize(capacity);
  }
}

void EntityStore::useFieldMemory(int32_t* block) {
  std::copy(fieldValues_, fieldValues_ + fieldSpecs_.size() * size_t{capacity_}, block);
  fieldValues_ = block;
  fieldOwned_.reset();
}

// Packs every used slot's fields into packScratch_, field by field (loops the compiler vectorizes).
void EntityStore::packFields() {
  uint64_t* out = packScratch_.data();
  std::fill(out, out + highWater_, uint64_t{0});
  for (size_t k = 0; k < fieldSpecs_.size(); ++k) {
    const int32_t* v = fieldValues_ + k * size_t{capacity_};
    const int32_t top = int32_t((uint32_t{1} << fieldSpecs_[k].bits) - 1);
    const uint32_t at = fieldSpecs_[k].offset;
    for (uint32_t s = 0; s < highWater_; ++s) out[s] |= uint64_t(uint32_t(std::clamp(v[s], 0, top))) << at;
  }
}

void EntityStore::useMemory(int32_t* x, int32_t* y, int32_t* z) {
  for (uint32_t i = 0; i < capacity_; ++i) x[i] = x_[i], y[i] = y_[i], z[i] = z_[i];
  x_ = x, y_ = y, z_ = z;
  owned_.reset();
}

uint32_t EntityStore::spawn(int32_t x, int32_t y, int32_t z, uint16_t kind) {
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
  for (size_t k = 0; k < fieldSpecs_.size(); ++k) fieldValues_[k * size_t{capacity_} + slot] = 0;
  alive_[slot] = 1;
  fresh_[slot] = 1;
  groups_[slot] = ~0u;
  weights_[slot] = 1;
  odometer_[slot] += kSpawnOdometerStep;  // wraps by design
  odometerBase_[slot] = odometer_[slot];
  kind_[slot] = kind;
  kindsUsed_ |= kind != 0;
  stateFlags_[slot] = 0;  // the marks are set by the slot's first tick (a pass may read the old ones)
  if (attributes_.enabled()) attributes_.clear(slot, makeId(slot, generation_[slot]));
  ++liveCount_;
  return makeId(slot, generation_[slot]);
}

void EntityStore::setKind(uint32_t id, uint16_t kind) {
  const uint32_t slot = checkedSlot(id);
  if (kind_[slot] == kind) return;
  kindsUsed_ |= kind != 0;
  kind_[slot] = kind;
  stateFlags_[slot] |= kKindChange;
}

uint32_t EntityStore::setAttributes(uint32_t id, const uint8_t* data, uint32_t length) {
  if (!attributes_.enabled())
    throw CoreError("ERR_SIGHTLINE_ATTRIBUTES_DISABLED",
                    "this world has no attributes: its configuration's attributeBytes is 0 (set it to the longest attribute string, up to 255)");
  if (length > attributes_.maxBytes())
    throw CoreError("ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE", "attributes must be at most attributeBytes (" +
                                                              std::to_string(attributes_.maxBytes()) + ") bytes, received " +
                                                              std::to_string(length));
  const uint32_t slot = checkedSlot(id);
  stateFlags_[slot] |= kAttributeChange;
  return attributes_.set(slot, data, length);
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
  if (stateFlags_[slot] & kChangedSinceSpawn) --stateChangedLive_;
  stateFlags_[slot] = 0;
  if (attributes_.enabled()) attributes_.clear(slot, AttributeStore::kNoOwner);
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
  weightsEverSet_ = true;
}

uint64_t EntityStore::memoryBytes() const {
  const uint64_t perSlot = sizeof(int32_t) * 3 /* prev_ */ + sizeof(uint32_t) * 4 /* odometer, base, free ring, groups */ +
                           sizeof(uint16_t) + 4 /* alive, wrapped, fresh, weight */ + (owned_ ? sizeof(int32_t) * 3 : 0) +
                           sizeof(uint16_t) + 1 + 2 * sizeof(uint32_t) /* kind, state flags, kind and attribute marks */ +
                           (fieldSpecs_.empty() ? 0 : 2 * sizeof(uint64_t) + (fieldOwned_ ? sizeof(int32_t) * fieldSpecs_.size() : 0));
  return uint64_t{capacity_} * perSlot + attributes_.memoryBytes();
}

void EntityStore::advanceOdometer() {
  int32_t* prev = prev_.data();
  if (!fieldSpecs_.empty()) {
    // Fields: a change of a field's value since the previous tick adds its weight (a fresh slot's
    // values are only recorded).
    packFields();
    const uint64_t* now = packScratch_.data();
    uint64_t* last = packedFields_.data();
    for (uint32_t s = 0; s < highWater_; ++s) {
      if (!alive_[s]) continue;
      const uint64_t changed = now[s] ^ last[s];
      last[s] = now[s];
      if (changed == 0 || fresh_[s]) continue;
      for (const FieldSpec& f : fieldSpecs_)
        if ((changed >> f.offset) & ((uint64_t{1} << f.bits) - 1)) odometer_[s] += f.weightRaw * uint32_t{weights_[s]};  // wraps by design
    }
  }
  for (uint32_t s = 0; s < highWater_; ++s) {
    if (!alive_[s]) continue;
    int32_t* p = prev + size_t{3} * s;
    if (fresh_[s]) {
      fresh_[s] = 0;
      // A new entity's kind and attributes go with its first sighting: their marks are the spawn's.
      kindMark_[s] = attributeMark_[s] = odometer_[s];
      stateFlags_[s] = 0;
    } else {
      if (const uint8_t f = stateFlags_[s]; f & (kKindChange | kAttributeChange)) [[unlikely]] {
        // A changed kind or changed attributes score as a new sighting does; the marks say since
        // when a ghost sent before holds the old ones.
        odometer_[s] += stateDrift_ * uint32_t{weights_[s]};
        if (f & kKindChange) kindMark_[s] = odometer_[s];
        if (f & kAttributeChange) attributeMark_[s] = odometer_[s];
        if (!(f & kChangedSinceSpawn)) ++stateChangedLive_;
        stateFlags_[s] = kChangedSinceSpawn;
      }
      uint64_t d = static_cast<uint64_t>(std::llabs(int64_t{x_[s]} - p[0])) +
                   static_cast<uint64_t>(std::llabs(int64_t{y_[s]} - p[1])) +
                   static_cast<uint64_t>(std::llabs(int64_t{z_[s]} - p[2]));
      // Times the priority weight (1 until one is set): the accumulator's growth per tick.
      odometer_[s] += static_cast<uint32_t>(d) * uint32_t{weights_[s]};  // wraps by design: drift is a wrapping difference
    }
    p[0] = x_[s], p[1] = y_[s], p[2] = z_[s];
  }
  if (attributes_.enabled()) attributes_.sync();
}

}  // namespace sightline
