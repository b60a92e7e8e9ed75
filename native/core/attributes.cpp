#include "attributes.h"

#include "codec.h"

namespace sightline {

AttributeStore::AttributeStore(uint32_t capacity, uint32_t maxBytes)
    : maxBytes_(maxBytes), stride_((kEntryHeaderBytes + maxBytes + 15) / 16 * 16) {
  if (maxBytes == 0) return;  // no attributes: nothing allocated
  live_.resize(size_t(capacity) * maxBytes), pass_.resize(size_t(capacity) * stride_);
  liveVersion_.resize(capacity);
  liveOwner_.assign(capacity, kNoOwner);
  for (uint32_t s = 0; s < capacity; ++s) putU32(pass_.data() + size_t(s) * stride_, kNoOwner);
  liveLen_.resize(capacity);
  passCost_.resize(capacity);
  dirty_.resize(capacity), dirtyFlag_.resize(capacity);
}

uint32_t AttributeStore::set(uint32_t slot, const uint8_t* data, uint32_t len) {
  if (len > 0) std::memcpy(live_.data() + size_t(slot) * maxBytes_, data, len);
  liveLen_[slot] = uint8_t(len);
  uint32_t v = liveVersion_[slot] + 1;
  if (v == 0) v = 1;  // 0 means "none yet": the wrap goes on from 1
  liveVersion_[slot] = v;
  mark(slot);
  return v;
}

void AttributeStore::clear(uint32_t slot, uint32_t owner) {
  liveLen_[slot] = 0, liveVersion_[slot] = 0, liveOwner_[slot] = owner;
  mark(slot);
}

void AttributeStore::sync() {
  for (uint32_t k = 0; k < dirtyCount_; ++k) {
    const uint32_t s = dirty_[k];
    uint8_t* e = pass_.data() + size_t(s) * stride_;
    putU32(e, liveOwner_[s]), putU32(e + 4, liveVersion_[s]), e[8] = liveLen_[s];
    std::memcpy(e + kEntryHeaderBytes, live_.data() + size_t(s) * maxBytes_, liveLen_[s]);
    passCost_[s] = uint16_t(liveVersion_[s] != 0 ? kEntryHeaderBytes + liveLen_[s] : 0);
    dirtyFlag_[s] = 0;
  }
  dirtyCount_ = 0;
}

}  // namespace sightline
