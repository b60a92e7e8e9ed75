// Ghost table: one per viewer, the server's record of what that viewer's client holds (its ghosts).
// Entries live in a dense array (iteration, eviction) with an open-addressing index by entity id
// (linear probing, backward-shift deletion: no tombstones, deterministic). Fixed capacity, sized
// when the viewer is added: the pass never allocates.
//
// Entry states:
//  - live: the client holds it; `mark` is the odometer total when it was last sent; `lastSeen` is
//    the viewer's pass (mod 2^16) on which it was last eligible (a candidate within the ghost cap)
//    or announced. A live ghost past the cap but still a candidate is scored and may be sent
//    (its mark advances), without a stamp: the grace window keeps it from flickering at the edge
//    of the cap, and it is kept up to date while it lasts.
//  - departing: not eligible for more passes than the grace window allows, so evicted; queued as a
//    despawn record. The client still holds it until that record is written. If it becomes
//    eligible again first, it is revived: no despawn, no respawn.
// An entry is removed when its despawn record is written. For a viewer with acknowledgements the
// packet's log slot remembers the despawn, which goes out again should that packet be found lost
// (AckLog::resend) unless the entity has been announced again by then (a new entry).
// An entry flagged unheld (see GhostFlags) is departing, or live but not yet announced again.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "arena.h"
#include "entities.h"

namespace sightline {

enum GhostState : uint8_t { kLive = 0, kDeparting = 1 };
enum GhostFlags : uint8_t {
  kQueued = 1,  // present in the despawn queue
  kUnheld = 2,  // acks: the packet that announced it was lost for certain; the client most likely
                // does not hold it, so it is announced again (as new) when eligible
  kBoosted = 4,  // in the viewer's boost set: its score is multiplied by the viewer's boost factor
                 // (a flag, so that scoring looks the set up only for entries off the common path)
};

struct GhostEntry {
  uint32_t id;
  uint32_t mark;      // odometer total at last send (raw units, wrapping)
  uint16_t lastSeen;  // the viewer's pass (mod 2^16) it was last eligible or announced on
  uint8_t state;      // GhostState
  uint8_t flags;      // kQueued | kUnheld | kBoosted
};
static_assert(sizeof(GhostEntry) == 12, "ghost entries are 12 bytes");

// Acknowledgement state of a ghost (viewers with acknowledgements only).
struct GhostAck {
  uint32_t ackedMark;  // the newest mark the client has acknowledged
  uint32_t born;       // the viewer's pass (Viewer::passes) whose packet announced this entry: records
                       // of earlier packets are not its. A pass count, not a 16-bit sequence, so a
                       // ghost held for more than 32,768 packets still tells them apart.
  uint16_t inflight;   // packets carrying an update of it, not yet acknowledged or lost
  uint8_t confirmed;   // some packet carrying it was acknowledged: the client holds it
};

// Attribute state of a ghost (worlds with attributes only): 8 bytes, apart from the entry, which the
// pass's hot loops read 16 at a time.
struct GhostAttribute {
  uint32_t acked;     // the newest version a packet the client acknowledged carried (0: none)
  uint16_t lastPass;  // the viewer's pass (mod 2^16) that last sent its attributes (the one before its
                      // announcement until then)
  uint8_t queued;     // in the table's attribute queue
  uint8_t unused;
};
static_assert(sizeof(GhostAttribute) == 8, "ghost attribute state is 8 bytes");

// The last position sent (raw), as the client decodes it: quantized, z clamped to the vertical
// extent. Read by tools and tests.
struct GhostPosition { int32_t x, y, z; };

class GhostTable {
 public:
  // trackPositions: also keep the last position sent of every ghost (for tools and tests; it adds
  // a write per record to the pass).
  // trackAcks: keep a GhostAck per entry (viewers whose client acknowledges packets).
  // trackAttributes: keep a GhostAttribute per entry and an attribute queue (worlds with attributes).
  // arena: where the table's storage (one block) comes from; null: the heap.
  GhostTable(uint32_t capacity, bool trackPositions, bool trackAcks = false, BlockArena* arena = nullptr,
             bool trackAttributes = false);
  GhostTable(GhostTable&& other) noexcept;
  GhostTable(const GhostTable&) = delete;
  GhostTable& operator=(const GhostTable&) = delete;
  GhostTable& operator=(GhostTable&&) = delete;
  ~GhostTable();
  bool tracksPositions() const { return positions_ != nullptr; }
  bool tracksAcks() const { return acks_ != nullptr; }
  GhostAck& ackAt(uint32_t i) { return acks_[i]; }
  bool tracksAttributes() const { return attributes_ != nullptr; }
  GhostAttribute& attributeAt(uint32_t i) { return attributes_[i]; }

  uint32_t size() const { return size_; }
  uint32_t capacity() const { return capacity_; }
  bool full() const { return size_ >= capacity_; }

  // Asks the cache for the first `entries` entries (issued a viewer ahead of its pass, with the
  // size the table had before the pass: the thread serving its viewer may be changing it). The
  // pass reads them in order through a GhostLookup, not through the index.
  void prefetch(uint32_t entries) const {
    const char* b = reinterpret_cast<const char*>(entries_);
    // Into L2 (prefetcht1): the table is read in order once its pass starts, and prefetches into
    // L1 stalled on its fill buffers (measured slower).
    for (std::size_t off = 0; off < std::size_t(entries) * sizeof(GhostEntry); off += 64) __builtin_prefetch(b + off, 0, 2);
  }

  // Asks the cache for the attribute states of entries [from, from + count) (trackAttributes).
  void prefetchAttributes(uint32_t from, uint32_t count) const {
    const char* b = reinterpret_cast<const char*>(attributes_ + from);
    const char* end = reinterpret_cast<const char*>(attributes_ + from + count);
    for (; b < end; b += 64) __builtin_prefetch(b, 1, 3);
    if (count > 0) __builtin_prefetch(end - 1, 1, 3);
  }

  // Asks the cache for the front of the attribute queue (trackAttributes).
  void prefetchAttributeQueue() const {
    if (aCount_ > 0) __builtin_prefetch(attributeQueue_ + aHead_, 0, 3);
  }

  // Asks the cache for the index slot where id's probe starts: a pass that will insert or remove id
  // issues it early, since the index is cold (touched only by inserts and removals).
  void prefetchIndex(uint32_t id) const { __builtin_prefetch(index_ + hash(id), 1, 3); }

  // Index of the entry for id, or -1.
  int32_t find(uint32_t id) const {
    uint32_t h = hash(id);
    for (;;) {
      uint16_t v = index_[h];
      if (v == kEmpty) return -1;
      if (entries_[v].id == id) return v;
      h = (h + 1) & indexMask_;
    }
  }
  // Inserts a live entry seen on pass `pass`; the caller checks full() first. Returns its index
  // (== size() before).
  uint32_t insert(uint32_t id, uint32_t mark, uint16_t pass);
  // Removes entry i: the last entry moves into index i.
  void remove(uint32_t i);
  // The entries, in index order, that are live and were last eligible or sent more than `grace`
  // passes before `pass` (uint16 arithmetic: pass - 1 - lastSeen > grace): their indices go to
  // out (room for size() + 16), their count is returned. Reads the entries 16 at a time where the
  // CPU has vectors.
  uint32_t stale(uint16_t pass, uint32_t grace, uint32_t* out) const;
  // Drops the attribute queue's ids that no queued entry answers to (kept in order; at most one id
  // per entry stays).
  void compactAttributeQueue();

  GhostEntry& at(uint32_t i) { return entries_[i]; }
  const GhostEntry& at(uint32_t i) const { return entries_[i]; }
  GhostPosition& positionAt(uint32_t i) { return positions_[i]; }
  const GhostPosition& positionAt(uint32_t i) const { return positions_[i]; }

  // Despawn queue (FIFO of entity ids), bounded by capacity because an entry is queued at most once.
  uint32_t queueSize() const { return qCount_; }
  void enqueue(uint32_t id) { queue_[(qHead_ + qCount_++) % capacity_] = id; }
  uint32_t queueFront() const { return queue_[qHead_]; }
  void dequeue() { qHead_ = (qHead_ + 1) % capacity_, --qCount_; }
  // Puts id at the front: its despawn goes out before those queued earlier.
  void enqueueFront(uint32_t id) {
    qHead_ = (qHead_ + capacity_ - 1) % capacity_, ++qCount_;
    queue_[qHead_] = id;
  }
  // Moves the front to the back (a despawn that did not fit this packet keeps its order).
  void requeueFront() { uint32_t id = queueFront(); dequeue(); enqueue(id); }

  // Attribute queue: a FIFO of entity ids whose attributes are to be sent (changed since last
  // sent, or found lost). A live entry is queued at most once (GhostAttribute::queued); an id whose
  // entry was removed meanwhile stays until it reaches the front, where its pass skips it (an entry
  // of the same id inserted since is not queued: queued is 0). The ring holds 2 x capacity; when it
  // is full, those left-over ids are dropped (compactAttributeQueue), so it never overflows.
  uint32_t attributeQueueSize() const { return aCount_; }
  uint32_t attributeFront() const { return attributeQueue_[aHead_]; }
  void attributeDequeue() { aHead_ = (aHead_ + 1) % (2 * capacity_), --aCount_; }
  // Moves the front id to the back (a departing ghost's: it may be revived).
  void attributeRequeueFront() {
    const uint32_t id = attributeFront();
    attributeDequeue();
    attributeQueue_[(aHead_ + aCount_++) % (2 * capacity_)] = id;
  }
  // Queues entry i's attributes unless they are queued already.
  void queueAttributes(uint32_t i) {
    if (attributes_[i].queued) return;
    if (aCount_ == 2 * capacity_) compactAttributeQueue();
    attributes_[i].queued = 1;
    attributeQueue_[(aHead_ + aCount_++) % (2 * capacity_)] = entries_[i].id;
  }

 private:
  static constexpr uint16_t kEmpty = 0xffff;
  uint32_t hash(uint32_t id) const { return (id * 0x9E3779B1u) >> hashShift_; }

  uint32_t capacity_;
  uint32_t size_ = 0;
  uint32_t indexMask_;
  int hashShift_;
  // One block holds every array: entries (capacity rounded up to 16, for stale()), the index,
  // the despawn queue, then positions and acknowledgement state when kept.
  BlockArena* arena_;
  void* block_ = nullptr;
  size_t blockBytes_ = 0;
  GhostEntry* entries_ = nullptr;
  uint16_t* index_ = nullptr;
  uint32_t* queue_ = nullptr;
  GhostPosition* positions_ = nullptr;
  GhostAck* acks_ = nullptr;
  GhostAttribute* attributes_ = nullptr;
  uint32_t* attributeQueue_ = nullptr;
  uint32_t qHead_ = 0, qCount_ = 0;
  uint32_t aHead_ = 0, aCount_ = 0;
};

// A worker's direct map from entity slot to one ghost table's entry index, loaded at the start of
// each viewer's pass by reading the table's entries in order. A lookup is then one load from a
// worker-local array instead of a hash probe into a table that is cold in the cache (a table is
// touched once per pass, and thousands of them do not fit in the cache). Each word carries the
// tag of the load that wrote it, so a new load retires the last one's words without clearing
// them (the map is cleared once per 65,535 loads, when the tag wraps). A slot's word names the
// last entry loaded of that slot; an id it does not match (another generation of a reused slot,
// held alongside or instead) is looked up in the table's own index: rare, and no load has to
// check for it.
class GhostLookup {
 public:
  // Slots [0, slots) may be looked up and loaded: the store's high-water mark. Not during a pass.
  void reserve(uint32_t slots) {
    if (map_.size() < slots) map_.resize(slots, 0);  // tag 0: never a current load's
  }
  // The map for one table, read through locals (the pass's stores cannot alias them).
  struct Loaded {
    const GhostTable& gt;
    const uint32_t* map;
    uint32_t tag;  // this load's tag << 16
    // The map's word for id: the index + 1 of the last entry loaded of id's slot, or 0.
    uint32_t word(uint32_t id) const {
      const uint32_t w = map[slotOfId(id)] ^ tag;  // the index + 1 when the tag is this load's
      return w < 0x10000 ? w : 0;
    }
    // Index of the entry for id in the table (unchanged since the load, but for field writes), or -1.
    int32_t find(uint32_t id) const { return resolve(word(id), id); }
    // find(id), given m = word(id) read ahead.
    int32_t resolve(uint32_t m, uint32_t id) const {
      if (m == 0) return -1;
      if (gt.at(m - 1).id == id) return int32_t(m - 1);
      return gt.find(id);
    }
  };
  // Loads the map from gt's entries. While the Loaded is used, gt's first size() entries keep
  // their ids (entries are inserted and removed only after the last lookup).
  Loaded load(const GhostTable& gt) {
    if (++tag_ == 0x10000) {
      std::fill(map_.begin(), map_.end(), 0);
      tag_ = 1;
    }
    uint32_t* map = map_.data();
    const uint32_t tag = tag_ << 16;
    for (uint32_t i = 0, n = gt.size(); i < n; ++i) map[slotOfId(gt.at(i).id)] = tag | (i + 1);  // entries < 32768
    return Loaded{gt, map, tag};
  }

  uint64_t memoryBytes() const { return uint64_t{map_.capacity()} * sizeof(uint32_t); }

 private:
  std::vector<uint32_t> map_;  // per slot: the tag of the load that wrote it << 16 | entry index + 1
  uint32_t tag_ = 0;
};

}  // namespace sightline
