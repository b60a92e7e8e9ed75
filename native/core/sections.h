// The kinds and attributes sections of one packet (docs/wire-format.md), gathered while a pass
// chooses them and written after the update records. Entries go into a worker's scratch first:
// the pass decides kinds and attributes while it writes the records, and the sections follow them.
#pragma once
#include <cstdint>
#include <cstring>

#include "codec.h"
#include "config.h"

namespace sightline {

class PacketSections {
 public:
  // kinds: room for the packet's kind records (6 bytes each); attributes: room for its attributes
  // section's entries (null without attributes).
  PacketSections(uint8_t* kinds, uint8_t* attributes) : kinds_(kinds), attributes_(attributes) {}

  // The bytes the two sections take so far, their counts included.
  uint32_t bytes() const { return kindBytes() + attributeBytes(); }
  uint32_t kindBytes() const { return kindCount_ ? kSectionCountBytes + kKindRecordBytes * kindCount_ : 0; }
  uint32_t attributeBytes() const { return attributeCount_ ? kSectionCountBytes + attributeLength_ : 0; }
  uint32_t kindCount() const { return kindCount_; }
  uint32_t attributeCount() const { return attributeCount_; }

  // What one more kind record, or one more attribute entry of `length` bytes, adds.
  uint32_t kindCost() const { return kKindRecordBytes + (kindCount_ ? 0 : kSectionCountBytes); }
  uint32_t attributeCost(uint32_t length) const {
    return kAttributeHeaderBytes + length + (attributeCount_ ? 0 : kSectionCountBytes);
  }

  void addKind(uint32_t id, uint16_t kind) {
    uint8_t* p = kinds_ + kKindRecordBytes * kindCount_++;
    putU32(p, id);
    putU16(p + 4, kind);
  }
  // An attribute entry as the wire carries it (kAttributeHeaderBytes + its length byte's count),
  // copied in 8-byte words: entry is readable, and the section's scratch writable, up to
  // kAttributeCopySlack bytes past the entry's end (the words past it are overwritten by the next
  // entry or stay outside the packet).
  void addAttributeEntry(const uint8_t* entry) {
    const uint32_t length = kAttributeHeaderBytes + entry[8];
    uint8_t* p = attributes_ + attributeLength_;
    for (uint32_t k = 0; k < length; k += 8) std::memcpy(p + k, entry + k, 8);
    attributeLength_ += length;
    ++attributeCount_;
  }

  // Writes the sections at p (after the update records), sets their flag bits; returns the end.
  uint8_t* write(uint8_t* p, uint8_t& flags) const {
    if (kindCount_) {
      putU16(p, uint16_t(kindCount_));
      std::memcpy(p + kSectionCountBytes, kinds_, size_t{kKindRecordBytes} * kindCount_);
      p += kindBytes();
      flags |= kFlagKinds;
    }
    if (attributeCount_) {
      putU16(p, uint16_t(attributeCount_));
      std::memcpy(p + kSectionCountBytes, attributes_, attributeLength_);
      p += attributeBytes();
      flags |= kFlagAttributes;
    }
    return p;
  }

 private:
  uint8_t* kinds_;
  uint8_t* attributes_;
  uint32_t kindCount_ = 0, attributeCount_ = 0, attributeLength_ = 0;
};

}  // namespace sightline
