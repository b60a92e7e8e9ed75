// Entity storage: struct of arrays indexed by slot. Positions are raw fixed point (Int32, 1 m = 1024)
// and are written in place by the game through typed-array views; everything else is engine-owned.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "attributes.h"
#include "config.h"

namespace sightline {

// EntityId = slot | generation << kSlotBits. A reused slot gets the next generation, so a stale id
// never answers for the new occupant (until the 12-bit generation wraps after 4,096 reuses of one
// slot). Freed slots are reused oldest first, and only while EntityStore::kReuseAfter of them wait
// or the store has no fresh slot left: a despawned id stays refused for at least
// 4,096 x min(kReuseAfter, capacity - live) further despawns (16.7 million when capacity allows).
constexpr int kSlotBits = 20;
constexpr uint32_t kMaxCapacity = 1u << kSlotBits;
constexpr uint32_t kSlotMask = kMaxCapacity - 1;
constexpr uint32_t kGenerationMask = 0xfffu;

inline uint32_t slotOfId(uint32_t id) { return id & kSlotMask; }
inline uint32_t generationOfId(uint32_t id) { return id >> kSlotBits; }
inline uint32_t makeId(uint32_t slot, uint32_t gen) { return slot | ((gen & kGenerationMask) << kSlotBits); }

// What a store keeps beyond positions, from the configuration.
struct StoreSchema {
  std::vector<FieldSpec> fields;  // fast fields (their values live here by slot, written by the game)
  uint32_t attributeBytes = 0;    // 0: no attributes
  uint32_t stateDrift = 0;        // raw units a kind or attribute change adds to the odometer (newDrift)
  static StoreSchema of(const Config& c) { return StoreSchema{c.fields, c.attributeBytes, c.newDrift}; }
};

class EntityStore {
 public:
  explicit EntityStore(uint32_t capacity, const StoreSchema& schema = {});

  // Positions default to engine-owned memory. useMemory() points them at memory owned elsewhere
  // (the addon's fallback when the runtime refuses external ArrayBuffers); the caller keeps it alive.
  void useMemory(int32_t* x, int32_t* y, int32_t* z);
  // Keeps the engine-owned position memory alive (null after useMemory): a view over it holds
  // one, so it stays valid after the store is gone.
  std::shared_ptr<void> memoryOwner() const { return owned_; }

  // Fast fields: fieldCount() Int32 arrays of capacity() values by slot, one block (field k at
  // fieldValues() + k * capacity()), written in place by the game. A value outside 0 to 2^bits - 1
  // is clamped when a tick reads it. useFieldMemory moves them into memory owned elsewhere (the
  // addon's fallback, as useMemory); fieldMemoryOwner keeps the engine-owned block alive.
  uint32_t fieldCount() const { return uint32_t(fieldSpecs_.size()); }
  int32_t* fieldValues() { return fieldValues_; }
  const int32_t* fieldValues() const { return fieldValues_; }
  void useFieldMemory(int32_t* block);
  std::shared_ptr<void> fieldMemoryOwner() const { return fieldOwned_; }
  // Each live slot's fields as the last advanceOdometer packed them (bits at each field's offset).
  const uint64_t* packedFields() const { return packedFields_.data(); }

  uint32_t capacity() const { return capacity_; }
  uint32_t liveCount() const { return liveCount_; }
  uint32_t highWater() const { return highWater_; }  // slots [0, highWater) have been used
  // Freed slots held back from reuse while fresh ones remain: highWater() stays within
  // liveCount() + kReuseAfter.
  static constexpr uint32_t kReuseAfter = 4096;

  // Throws ERR_SIGHTLINE_WORLD_FULL when every slot is live. kind: the entity's kind (u16).
  uint32_t spawn(int32_t x, int32_t y, int32_t z, uint16_t kind = 0);
  // Kinds: a u16 per entity. A change adds stateDrift to the odometer at the next tick (as a new
  // sighting scores), and the tick records the odometer then as the entity's kind mark (kindMark):
  // a ghost last sent before it has not been sent the new kind. Throw like checkedSlot.
  void setKind(uint32_t id, uint16_t kind);
  uint16_t kindOf(uint32_t slot) const { return kind_[slot]; }
  const uint16_t* kinds() const { return kind_.data(); }
  // Attributes (attributeBytes > 0): setAttributes copies the bytes and returns the new version; a
  // change marks the odometer as a kind change does (attributeMark). Throws like checkedSlot, and
  // ERR_SIGHTLINE_ATTRIBUTES_DISABLED, ERR_SIGHTLINE_ATTRIBUTES_TOO_LARGE; changes nothing then.
  uint32_t setAttributes(uint32_t id, const uint8_t* data, uint32_t length);
  AttributeStore& attributes() { return attributes_; }
  const AttributeStore& attributes() const { return attributes_; }
  // Per slot, the odometer total when its kind and its attributes last changed (the spawn's total
  // until then): written by advanceOdometer only, so a pass may read them.
  const uint32_t* kindMarks() const { return kindMark_.data(); }
  const uint32_t* attributeMarks() const { return attributeMark_.data(); }
  // Live entities whose kind or attributes changed since they spawned (the pass checks a ghost's
  // mark against those marks only while some have).
  uint32_t stateChangedLive() const { return stateChangedLive_; }
  // Whether an entity was ever given a kind other than 0, or the store has attributes: from then
  // on each tick's snapshot keeps the kinds, first-sighting sizes and marks (never changes back).
  bool stateInUse() const { return kindsUsed_ || attributes_.enabled(); }
  // Throws ERR_SIGHTLINE_STALE_ENTITY / ERR_SIGHTLINE_INVALID_ENTITY; changes nothing then.
  void despawn(uint32_t id);
  // The slot of a live id; throws like despawn.
  uint32_t checkedSlot(uint32_t id) const;
  bool isLive(uint32_t id) const;

  // Odometer: each live slot adds |dx|+|dy|+|dz| (raw) since the previous tick, wrapping at 2^32,
  // the weight of every field whose (clamped) value changed since then, and stateDrift when its
  // kind or attributes changed, all times its priority weight (setWeight; 1 by default) as of the
  // tick: the priority accumulator's growth, so a viewer's score of a held ghost (drift x band
  // weight) carries the entity's weight without a multiply per candidate. A weight change applies
  // to the growth from the next tick on, not to the drift already accumulated. A slot's first
  // tick after spawning adds 0. Then the attributes set
  // since the last tick are synced to the pass side. The total runs on across a slot's incarnations, and
  // each spawn adds kSpawnOdometerStep to it: a ghost that a viewer still holds of the slot's
  // previous incarnation, whose id the new one repeats once the 12-bit generation wraps, then
  // scores as moved (by at least that step) and is sent at its new position.
  void advanceOdometer();
  // Raw units (about 512 m). Odd, so no count of spawns below 2^32 adds a multiple of 2^32 (no
  // drift of 0); the 4,096 spawns of one generation wrap add 2^31 + 4,096.
  static constexpr uint32_t kSpawnOdometerStep = (1u << 19) + 1;
  // The odometer's advance since the entity in `slot` spawned: raw units travelled and field and
  // state changes, times the priority weight (wrapping at 2^32).
  uint32_t travelled(uint32_t slot) const { return odometer_[slot] - odometerBase_[slot]; }

  // Visibility groups (a 32-bit mask; default every group, ~0u) and priority weight (1 to
  // kMaxWeight; default 1) of an entity, by slot. An entity is a candidate of a viewer only where
  // their groups meet (entity & viewer != 0); its score is multiplied by its weight for every
  // viewer: its odometer grows by the weight times its change (advanceOdometer), and a first
  // sighting's newDrift is multiplied by it. Read by the snapshot once per tick. setGroups/setWeight throw like checkedSlot
  // (ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_ENTITY) and, for a weight out of range,
  // ERR_SIGHTLINE_INVALID_PRIORITY; they change nothing then.
  static constexpr uint32_t kMaxWeight = 16;
  void setGroups(uint32_t id, uint32_t groups);
  void setWeight(uint32_t id, uint32_t weight);
  const uint32_t* groups() const { return groups_.data(); }
  bool groupsEverSet() const { return groupsEverSet_; }
  const uint8_t* weights() const { return weights_.data(); }
  // Whether setWeight was ever called: until then every weight is 1 (despawn resets it to 1 too).
  bool weightsEverSet() const { return weightsEverSet_; }

  int32_t* x() { return x_; }
  int32_t* y() { return y_; }
  int32_t* z() { return z_; }
  const int32_t* x() const { return x_; }
  const int32_t* y() const { return y_; }
  const int32_t* z() const { return z_; }
  const uint32_t* odometer() const { return odometer_.data(); }
  const uint8_t* alive() const { return alive_.data(); }
  uint32_t idOfSlot(uint32_t slot) const { return makeId(slot, generation_[slot]); }
  // Bytes of the store's arrays (the positions too, while the store owns them).
  uint64_t memoryBytes() const;

 private:
  uint32_t capacity_;
  std::shared_ptr<int32_t[]> owned_;  // shared with views over it (see memoryOwner)
  int32_t* x_;
  int32_t* y_;
  int32_t* z_;
  std::vector<int32_t> prev_;  // previous tick's x, y, z interleaved (3 per slot)
  std::vector<uint32_t> odometer_;
  std::vector<uint32_t> odometerBase_;  // odometer_ when the slot's entity spawned
  std::vector<uint16_t> generation_;
  std::vector<uint8_t> alive_;
  std::vector<uint32_t> groups_;
  std::vector<uint8_t> weights_;
  std::vector<uint8_t> wrapped_;  // per slot: its generation has wrapped (every generation was issued)
  std::vector<uint8_t> fresh_;
  std::vector<uint32_t> freeRing_;  // FIFO of freed slots (see kReuseAfter)
  std::vector<FieldSpec> fieldSpecs_;
  std::shared_ptr<int32_t[]> fieldOwned_;  // the engine-owned field block (see fieldMemoryOwner)
  int32_t* fieldValues_ = nullptr;
  std::vector<uint64_t> packedFields_;  // per slot: the fields packed by the last advanceOdometer
  std::vector<uint64_t> packScratch_;   // per slot: this tick's packing
  void packFields();
  // Kinds and attributes.
  enum StateFlags : uint8_t { kKindChange = 1, kAttributeChange = 2, kChangedSinceSpawn = 4 };
  uint32_t stateDrift_;
  std::vector<uint16_t> kind_;
  std::vector<uint8_t> stateFlags_;
  std::vector<uint32_t> kindMark_, attributeMark_;
  uint32_t stateChangedLive_ = 0;
  bool kindsUsed_ = false;
  AttributeStore attributes_;
  uint32_t freeHead_ = 0, freeCount_ = 0;
  uint32_t highWater_ = 0;
  uint32_t liveCount_ = 0;
  bool groupsEverSet_ = false;
  bool weightsEverSet_ = false;
};

}  // namespace sightline
