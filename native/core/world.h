// Over 500 lines as one file: the engine's one World, its state and its documented operations in one declaration.
// World: one region's entities, snapshot, viewers and the replication pass.
//
// A tick is two calls:
//   prepareTick(n) caller's thread: odometer, snapshot, per-viewer skip checks, output layout.
//   runPass(pool)  any thread: the per-viewer pass, in parallel, reading only the snapshot and each
//                  viewer's own state; it does not allocate, lock (beyond the pool's dispatch) or
//                  call out. Output bytes are a pure function of (snapshot, viewer states).
// Between prepareTick and the end of runPass the caller must not add or remove viewers; entity
// positions and spawns/despawns are free to change (the pass reads the snapshot only).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "arena.h"
#include "codec.h"
#include "config.h"
#include "entities.h"
#include "events.h"
#include "gather.h"
#include "ghost.h"
#include "select.h"
#include "snapshot.h"
#include "subscription.h"
#include "thread_pool.h"

namespace sightline {

enum class ViewerStatus : uint8_t { Due = 0, NotDue = 1, AvatarGone = 2, OutsideRegion = 3 };

struct ViewerOptions {
  uint32_t payloadBytes;  // 0 = config.payloadBytes
  uint32_t sendPeriod = 1;
  bool acks = false;      // the client acknowledges packets (World::acknowledge)
  int64_t viewRadiusRaw = 0;  // 0 = config.viewRadiusRaw; else 1 to config.viewRadiusRaw
  uint32_t groups = ~0u;      // visibility groups
  bool self = false;          // its packets carry its avatar's own record (Viewer::self)
  int64_t teleportRaw = 0;    // 0: off; else a move of its avatar further than this in one tick is a teleport
};

// A viewer's settings that may change while it is served (World::changeViewer).
struct ViewerSettings {
  uint32_t payloadBytes = 0;
  uint32_t sendPeriod = 1;
  int64_t viewRadiusRaw = 0;
  uint32_t groups = ~0u;       // visibility groups: it sees the entities whose groups meet these
  uint32_t boostFactor = 1;    // 1 to kMaxBoostFactor: the score of each entity in its boost set is multiplied by it
};
// A viewer's boost set (party members) holds at most this many entity ids; its factor at most
// kMaxBoostFactor (so weight x boost <= 256).
constexpr uint32_t kMaxBoosted = 64;
constexpr uint32_t kMaxBoostFactor = 16;

// Packets in flight to a viewer whose client acknowledges: for each, the updates (id, mark) and
// despawn ids it carried. 64 packets; a slot reused before its packet was resolved is taken as
// lost once the client has acknowledged anything, else as assumed delivered (what a viewer
// without acknowledgements assumes of every packet): nothing it carried counts as confirmed, its
// despawns are not sent again, and its events stay unacknowledged. When the first acknowledgement
// comes, the ghosts known only from such packets are announced again (see World::acknowledge).
struct AckLog {
  static constexpr uint32_t kPackets = 64;
  // An acknowledgement at least this many sequences newer that leaves a packet out makes it
  // probably lost: its records get their priority back (a resend costs a slot at worst).
  static constexpr uint32_t kReorderTolerance = 3;
  // Left out by an acknowledgement more than this many sequences newer (past the ack bits): lost
  // for certain, provided the client drops packets that old. Its new ghosts are forgotten and its
  // despawns resent.
  static constexpr uint32_t kAckWindow = 32;
  enum Outcome : uint8_t { Delivered, ProbablyLost, Lost, Assumed };
  // ringCapacity: the most despawns waiting to be sent again, and the most despawns of packets
  // assumed delivered kept for the first acknowledgement (the ghost table's capacity).
  // maxAttributes: the most attribute entries a packet carries (0 without attributes).
  AckLog(uint32_t maxUpdates, uint32_t maxDespawns, uint32_t ringCapacity, uint32_t maxAttributes = 0)
      : maxUpdates(maxUpdates),
        maxDespawns(maxDespawns),
        maxAttributes(maxAttributes),
        updateIds(size_t{kPackets} * maxUpdates),
        updateMarks(size_t{kPackets} * maxUpdates),
        updateFlags(size_t{kPackets} * maxUpdates),
        despawnIds(size_t{kPackets} * maxDespawns),
        attributeIds(size_t{kPackets} * maxAttributes),
        attributeVersions(size_t{kPackets} * maxAttributes),
        resend(ringCapacity),
        unconfirmedDespawns(ringCapacity) {}
  // A FIFO of entity ids with a fixed capacity.
  struct IdRing {
    explicit IdRing(uint32_t capacity) : ids(capacity) {}
    std::vector<uint32_t> ids;
    uint32_t head = 0, count = 0;
    uint32_t at(uint32_t k) const { return ids[(head + k) % ids.size()]; }
    bool contains(uint32_t id) const {
      for (uint32_t k = 0; k < count; ++k)
        if (at(k) == id) return true;
      return false;
    }
    // Appends id; when full, the oldest makes room (dropOldest) or id is not kept. Returns whether
    // one was lost.
    bool push(uint32_t id, bool dropOldest) {
      if (ids.empty()) return true;
      bool lost = false;
      if (count == ids.size()) {
        if (!dropOldest) return true;
        pop();
        lost = true;
      }
      ids[(head + count++) % ids.size()] = id;
      return lost;
    }
    uint32_t pop() {
      const uint32_t id = ids[head];
      head = uint32_t((head + 1) % ids.size()), --count;
      return id;
    }
  };
  struct Packet {
    uint32_t pass = 0;  // the viewer's pass that wrote it (Viewer::passes)
    uint16_t sequence = 0;
    uint16_t updates = 0;
    uint16_t despawns = 0;
    uint16_t attributes = 0;  // attribute entries (their ids and versions in attributeIds / attributeVersions)
    uint16_t firstEvent = 0;
    uint8_t events = 0;
    uint8_t used = 0;
    uint8_t probablyLost = 0;  // its records already had their priority back
  };
  uint32_t maxUpdates, maxDespawns, maxAttributes;
  Packet packets[kPackets];
  std::vector<uint32_t> updateIds, updateMarks;
  // Per update record: kKindSent when the packet carried the entity's kind with it.
  static constexpr uint8_t kKindSent = 1;
  std::vector<uint8_t> updateFlags;
  std::vector<uint32_t> despawnIds;
  std::vector<uint32_t> attributeIds, attributeVersions;
  // Despawns to send again, oldest first: ids whose despawn record went out in a packet found lost.
  // A ghost entry is removed when its despawn record is written (as for a viewer without
  // acknowledgements), so a despawn in flight takes no room in the table; its packet's log slot
  // remembers it. An id waits here once (two lost despawns of one entity, between which it was
  // announced again, need one record: a packet never names an entity twice); beyond the ring's
  // capacity, lost despawns are not sent again (counted in despawnsNotResent).
  IdRing resend;
  // Despawns of packets assumed delivered while the client had acknowledged nothing (it may not
  // have been listening yet): sent again at its first acknowledgement, the newest ringCapacity
  // (older ones are counted in despawnsNotResent).
  IdRing unconfirmedDespawns;
  uint64_t despawnsNotResent = 0;
  void queueResend(uint32_t id) {
    if (!resend.contains(id) && resend.push(id, false)) ++despawnsNotResent;
  }
  // Packets resolved each way; probablyLost counts packets whose records got their priority back
  // (some of them are acknowledged later and counted in acked too).
  // expired: packets 64 sequences old that no acknowledgement resolved, from a client that had
  // acknowledged before (taken as lost, and counted in lost too).
  uint64_t acked = 0, lost = 0, assumed = 0, probablyLost = 0, expired = 0;
  bool acknowledging = false;  // some acknowledgement was applied
};

// A change of some of a viewer's settings: the fields named in `what` (ViewerChange::Field).
// prepareViewerChange checks it and makes what applying it needs; applyViewerChange applies it.
struct ViewerChange {
  enum Field : uint32_t { kSendPeriod = 1, kPayloadBytes = 2, kViewRadius = 4, kGroups = 8, kBoost = 16 };
  uint32_t what = 0;
  ViewerSettings to;
  std::vector<uint32_t> boost;  // kBoost: the boost set's entity ids (to.boostFactor their factor)
  // kPayloadBytes on a viewer with acknowledgements whose log has no room for packets this large:
  // the larger log's arrays (AckLog::updateIds, updateMarks, despawnIds, for logUpdates updates
  // and logDespawns despawns a packet), made by prepareViewerChange; applying the change moves the
  // logged packets into them.
  uint32_t logUpdates = 0, logDespawns = 0;
  std::vector<uint32_t> logIds, logMarks, logDespawnIds;
  std::vector<uint8_t> logFlags;
  uint32_t logAttributes = 0;  // the larger attribute log, with attributes (0: unchanged)
  std::vector<uint32_t> logAttributeIds, logAttributeVersions;
};

struct Viewer {
  // attributeBytes: the configuration's (0: no attributes, no attribute state kept).
  Viewer(uint32_t avatar, uint32_t payload, uint32_t period, uint32_t phase, uint32_t ghostCapacity,
         bool trackPositions, bool acks, uint32_t eventReserveBytes, BlockArena* ghostArena, uint32_t attributeBytes = 0)
      : avatarId(avatar),
        payloadBytes(payload),
        sendPeriod(period),
        phase(phase),
        ghosts(ghostCapacity, trackPositions, acks, ghostArena, attributeBytes > 0) {
    if (acks)
      ackLog = std::make_unique<AckLog>(payload / kRecordBytes, payload / kDespawnRecordBytes, ghostCapacity,
                                        attributeBytes > 0 ? payload / kAttributeHeaderBytes : 0);
    if (acks && eventReserveBytes > kEventSectionBytes + kEventHeaderBytes)
      events = std::make_unique<EventQueue>(eventReserveBytes - kEventSectionBytes - kEventHeaderBytes);
  }
  uint32_t avatarId;
  uint32_t payloadBytes;
  uint32_t sendPeriod;
  uint32_t phase;
  uint32_t phaseSeed = 0;  // the viewer's place in the spread of phases: phase = phaseSeed % sendPeriod
  // The view radius (raw, 1 to config.viewRadiusRaw), its square, and the cell radius of the
  // subscription box that covers it (ceil(radius / cellRaw), at most config.cellRadius).
  int64_t viewRadiusRaw = 0;
  uint64_t viewRadiusSq = 0;
  uint32_t cellRadius = 0;
  // The settings as the caller last asked for them, changes queued during a pass included (what
  // the next change is checked against). The caller's thread alone reads and writes it; the pass
  // never does.
  ViewerSettings asked;
  std::vector<uint32_t> askedBoost;
  uint32_t askedLogUpdates = 0;  // the packet room of the acknowledgement log once queued changes apply
  // Visibility groups, and the boost set (entity ids, sorted) with its factor.
  uint32_t groups = ~0u;
  uint32_t boostFactor = 1;
  std::vector<uint32_t> boost;
  // Groups checks: set when the viewer's groups changed (every ghost is checked at its next pass);
  // the tick of its last pass (entities whose groups changed since are checked, from the world's
  // groups log); set by prepareTick: the log range to check [groupsFrom, groupsTo), or a check of
  // every ghost (groupsScan).
  bool groupsChanged = false;
  bool groupsScan = false;
  uint32_t lastServedTick = 0;
  uint64_t groupsFrom = 0, groupsTo = 0;
  uint32_t passes = 0;  // passes served
  // Self record (ViewerOptions::self): the avatar's own update record leads the updates of a
  // packet whenever the avatar moved (its odometer differs from selfMark, the odometer when last
  // sent) or selfPending (never sent, or the packet that carried it was found lost).
  bool self = false;
  bool selfPending = true;
  uint32_t selfMark = 0;
  // Teleports: a move of the avatar further than teleportRaw in one tick (0: never), or
  // World::teleportViewer, makes its next pass a teleport: every ghost outside the view radius of
  // the new place departs at once, ahead of the other despawns. teleportAsked is the caller's
  // thread's (set by teleportViewer, or by startTick on seeing the move, kept until the viewer is
  // served); teleporting is what startTick hands this tick's pass. lastX, lastY: the avatar's
  // position at the last tick (hasLast: there was one).
  int64_t teleportRaw = 0;
  bool teleportAsked = false, teleporting = false, hasLast = false;
  int32_t lastX = 0, lastY = 0;
  // The squared distance of the ghostCap-th nearest candidate on the last pass that had more (0:
  // none yet): where the next pass looks for its threshold first (see keepSmallestNear).
  uint64_t eligibleHint = 0;
  // The threshold bucket of the last pass's choice of updates (a flipped log bucket of the score;
  // kBuckets: none yet): where the next one's search starts (see thresholdBucket).
  uint16_t scoreBucketHint = kBuckets;
  uint16_t sequence = 0;
  // Kind records that did not fit the last packet (their ghosts' marks were set back, so they go
  // again): the next packet keeps room for them.
  uint16_t kindBacklog = 0;
  // Where the next pass's look for attributes due again (viewers without acknowledgements) starts:
  // a ghost table index, taken modulo its size.
  uint32_t attributeCursor = 0;
  // passes and sequence as of the last prepareTick: what the caller's thread may read while a
  // pass runs (the pass advances the two above).
  uint32_t passesBeforePass = 0;
  uint16_t sequenceBeforePass = 0;
  uint32_t ghostsBeforePass = 0;  // ghosts.size(): how much of the table the pass prefetches (another
                                  // thread may be changing the table itself when it does)
  bool hasBox = false;
  Subscription box;
  GhostTable ghosts;
  std::unique_ptr<AckLog> ackLog;  // null unless the client acknowledges
  std::unique_ptr<EventQueue> events;  // null unless acks and an event reserve
  // Set by prepareTick for the current tick.
  ViewerStatus status = ViewerStatus::NotDue;
  int32_t vx = 0, vy = 0;
  size_t outOffset = 0;
  uint32_t outLength = 0;
};

// One of the two output buffers.
struct OutputBlock {
  // Zeroed (every page touched, so the pass that first writes it does not pay the page faults);
  // on huge pages where the system allows (allocateLarge). Their first touch costs more where the
  // kernel compacts memory on a fault of advised memory (transparent_hugepage/defrag = madvise, the
  // default: 24 MB took 46 ms against 18 ms on small pages in one measurement), which is one reason
  // addViewer grows these ahead (World::growOutput), at set-up rather than in a tick.
  explicit OutputBlock(size_t n)
      : data(static_cast<uint8_t*>(allocateLarge((n + 63) & ~size_t{63})), Release{(n + 63) & ~size_t{63}}), size(n) {
    std::memset(data.get(), 0, n);
  }
  struct Release {
    size_t bytes;
    void operator()(uint8_t* p) const noexcept { releaseLarge(p, bytes); }
  };
  std::unique_ptr<uint8_t[], Release> data;
  size_t size;
};

// Counters for one tick. Sums over viewers; per-worker copies are merged after the pass.
struct TickStats {
  uint64_t served = 0, skippedNotDue = 0, skippedAvatarGone = 0, skippedOutsideRegion = 0;
  uint64_t candidates = 0, examined = 0, eligible = 0, records = 0, newGhosts = 0, despawns = 0;
  uint64_t bytes = 0, ghostTableFull = 0, subscriptionChanges = 0, events = 0, eventBytes = 0;
  uint64_t pressureEvictions = 0;  // ghosts evicted before their grace window ran out: the table was full
  uint64_t hiddenDepartures = 0;   // ghosts departed at once: their groups no longer meet the viewer's
  uint64_t selfRecords = 0;        // self records sent (ViewerOptions::self)
  uint64_t teleports = 0;          // passes of viewers that teleported
  uint64_t teleportDepartures = 0;  // ghosts departed at once: outside the radius of the new place
  uint64_t kinds = 0;               // kind records sent
  uint64_t attributes = 0, attributeBytes = 0;  // attribute entries sent, and the attributes sections' bytes
  void add(const TickStats& o);
};

class World {
 public:
  // recordGhostPositions: ghost tables also keep the last position sent (see GhostTable).
  World(const Config& config, uint32_t capacity, bool recordGhostPositions = false);
  bool recordsGhostPositions() const { return recordGhostPositions_; }

  const Config& config() const { return config_; }
  EntityStore& entities() { return store_; }
  const EntityStore& entities() const { return store_; }
  const Snapshot& snapshot() const { return snapshot_; }
  uint32_t tick() const { return tick_; }

  // Viewers are identified by their avatar's entity id. Throws ERR_SIGHTLINE_VIEWER_EXISTS,
  // ERR_SIGHTLINE_STALE_ENTITY, ERR_SIGHTLINE_INVALID_VIEWER_OPTION, ERR_SIGHTLINE_OUTPUT_FULL (see
  // checkOutputRoom). avatarChecked: the avatar was
  // found live when the caller asked (an add deferred past a pass whose avatar has been despawned
  // since: the viewer is added all the same and skipped, as if added before the despawn).
  // Strong guarantee: a throw (std::bad_alloc included) leaves the world as it was.
  void addViewer(uint32_t avatarId, ViewerOptions opts, bool avatarChecked = false);
  // addViewer in three steps, for an add asked for while a pass runs and applied after it:
  // makeViewer checks the options and builds the viewer (its ghost table, acknowledgement log and
  // event queue: everything it allocates), not yet in the world; reserveViewerAdds(k) makes room
  // for k more viewers in the world's lists (safe while a pass runs: it changes nothing the pass
  // reads); adoptViewer (not during a pass) puts one in, and neither allocates nor throws when room
  // was reserved. Does not check that the avatar is not a viewer already.
  // outputChecked: the caller checked the output room itself (against the changes it queued).
  std::unique_ptr<Viewer> makeViewer(uint32_t avatarId, ViewerOptions opts, bool avatarChecked = false,
                                     bool outputChecked = false);
  void reserveViewerAdds(uint32_t k);
  void adoptViewer(std::unique_ptr<Viewer> v) noexcept;
  // Throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
  void removeViewer(uint32_t avatarId);
  // Makes the viewer's next pass a teleport (Viewer::teleporting). Safe while a pass runs (the
  // pass does not read what it writes). Throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
  void teleportViewer(uint32_t avatarId) { viewerMutable(avatarId).teleportAsked = true; }
  // Changes a viewer's settings (not during a pass): prepareViewerChange then applyViewerChange.
  // Takes effect at the viewer's next pass; its sequence numbers, ghost table and acknowledgement
  // log carry on. Throws like prepareViewerChange, and ERR_SIGHTLINE_UNKNOWN_VIEWER.
  void changeViewer(uint32_t avatarId, ViewerChange c);
  // Checks change `c` against viewer v's settings as asked (Viewer::asked) and makes what applying
  // it needs (a larger acknowledgement log); records it in v.asked. outputTotal: the viewers'
  // payloadBytes together as asked (outputBytes() plus the changes queued since). Safe while a
  // pass runs: it writes only v.asked, which the pass does not read. Throws
  // ERR_SIGHTLINE_INVALID_VIEWER_OPTION, ERR_SIGHTLINE_OUTPUT_FULL; a throw changes nothing.
  void prepareViewerChange(Viewer& v, ViewerChange& c, uint64_t outputTotal) const;
  // Applies a prepared change (not during a pass); neither allocates nor throws.
  void applyViewerChange(Viewer& v, ViewerChange& c) noexcept;
  // The checks of viewer options shared by makeViewer and prepareViewerChange.
  void checkPayloadBytes(uint32_t payload) const;
  static void checkSendPeriod(uint32_t period);
  void checkViewRadius(int64_t raw) const;
  // The viewers' payload bytes together: one output buffer's size.
  uint64_t outputBytes() const { return outputBytes_; }
  // The memory this world holds, bytes: entities, snapshot, viewers (ghost tables, logs, event
  // queues), output buffers, the pass threads' scratch. The sizes of its big allocations added
  // up (what a garbage collector is told about: the addon reports it to V8), not a measurement.
  uint64_t memoryBytes() const;
  // An output buffer holds every viewer's payloadBytes, and packets are located in it by 32-bit
  // offsets (and a JavaScript buffer over it may hold at most 4 GiB): the viewers' payload bytes
  // together stay within kMaxOutputBytes. Throws ERR_SIGHTLINE_OUTPUT_FULL unless `total` does.
  static constexpr uint64_t kMaxOutputBytes = (uint64_t{1} << 32) - (uint64_t{1} << 16);
  static void checkOutputRoom(uint64_t total);
  bool hasViewer(uint32_t avatarId) const { return viewerIndex_.count(avatarId) != 0; }
  // Applies a client's acknowledgement: `ack` = newest packet sequence received, bit i of ackBits =
  // sequence ack - 1 - i received. Acknowledged packets advance the ghosts' acknowledged marks;
  // lost ones give their records their priority back, re-announce ghosts the client never got and
  // resend despawns. Not during a pass. Throws ERR_SIGHTLINE_UNKNOWN_VIEWER,
  // ERR_SIGHTLINE_ACKS_DISABLED.
  void acknowledge(uint32_t avatarId, uint16_t ack, uint32_t ackBits);
  // acks[0, n) applied as n acknowledge() calls in that order would apply them, in parallel on the
  // pool: one viewer's acknowledgements change that viewer only, so each viewer's are applied in
  // order on one thread (ack_batch.cpp). outcome[i] says what acknowledge() would have done with
  // acks[i]: applied, refused as unused (ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_ACKS_DISABLED)
  // or refused as invalid (ERR_SIGHTLINE_INVALID_ACK). Not during a pass; allocates nothing.
  struct AckInput {
    uint32_t viewer;
    uint16_t ack;
    uint32_t ackBits;
  };
  enum class AckOutcome : uint8_t { Applied = 0, Unused = 1, Invalid = 2 };
  void acknowledgeAll(const AckInput* acks, size_t n, AckOutcome* outcome, ThreadPool& pool);
  // The checks acknowledge() makes of `ack`, against the packets sent before the current pass:
  // for the caller's thread while a pass runs. Throws ERR_SIGHTLINE_UNKNOWN_VIEWER,
  // ERR_SIGHTLINE_INVALID_ACK.
  void checkAckDuringPass(uint32_t avatarId, uint16_t ack) const;
  // Queues an event for one viewer (added with acks; the config has an event reserve). Not during
  // a pass. Throws ERR_SIGHTLINE_UNKNOWN_VIEWER, ERR_SIGHTLINE_EVENTS_DISABLED,
  // ERR_SIGHTLINE_EVENT_TOO_LARGE, ERR_SIGHTLINE_EVENT_QUEUE_FULL (counted in the viewer's dropped
  // events when countDrop: a drop the caller does not report to its own caller).
  void emit(uint32_t avatarId, const uint8_t* data, uint32_t length, bool countDrop = true);
  // Whether viewer i could take an event now (events enabled and room in its queue).
  Viewer& viewerAtMutable(size_t i) { return *viewers_[i]; }
  size_t viewerCount() const { return viewers_.size(); }
  const Viewer& viewerAt(size_t i) const { return *viewers_[i]; }
  const Viewer& viewer(uint32_t avatarId) const;
  // viewer(), writable. Throws ERR_SIGHTLINE_UNKNOWN_VIEWER.
  Viewer& viewerMutable(uint32_t avatarId);

  // Once-per-tick phases: odometer, snapshot, skip checks, output layout. Caller's thread.
  // `threads`: the size of the pool runPass will use. Two steps: reserveTick allocates everything
  // the tick needs (output buffer, snapshot arrays, per-thread scratch) and changes nothing else,
  // so a std::bad_alloc leaves the world as it was; startTick then starts the tick, allocates
  // nothing and does not throw (positions must not change between the two). runPass allocates
  // nothing either.
  void prepareTick(unsigned threads) {
    reserveTick(threads);
    startTick();
  }
  void reserveTick(unsigned threads);
  // Grows both output buffers (keeping their bytes) to hold `total` payload bytes (up to
  // kEagerOutputBytes, 64 MiB: 55,000 viewers of 1,200 bytes), so the tick that
  // first serves viewers added between ticks does not allocate and first touch megabytes of output
  // (addViewer calls it; reserveTick still grows the next tick's buffer when viewers were added
  // during a pass). Throws std::bad_alloc, with the world's packets unchanged.
  void growOutput(uint64_t total);
  static constexpr uint64_t kEagerOutputBytes = uint64_t{64} << 20;
  void startTick() noexcept;
  // The output buffer the next tick (tick() + 1) writes, once reserveTick has made it.
  const std::shared_ptr<OutputBlock>& nextOutputBuffer() const { return output_[(tick_ + 1) & 1]; }
  // Rebuilds the snapshot without advancing the tick or the odometer (tools and tests).
  void rebuildSnapshot() { snapshot_.build(store_); }
  void runPass(ThreadPool& pool);
  // Grows each pool thread's scratch to what a pass over the current entities needs.
  void reserveScratch(unsigned threads);
  // The smallest chunk of viewers the pool hands out (chunks are guided, larger while many viewers
  // remain: thread_pool.h): small enough to balance crowded viewers at the end of a pass. A pass
  // over no more viewers than this runs on the calling thread alone.
  static constexpr uint32_t kViewersPerChunk = 16;

  // The walk and ghost caps the pass uses: the config's unless lowered (an overload governor's
  // lever). setCaps: walkCap from 1 to config.walkCap, ghostCap from 1 to config.ghostCap (the
  // ghost tables keep their size, 2 x config.ghostCap); not during a pass. Throws
  // ERR_SIGHTLINE_INVALID_ARGUMENT, leaving both as they were.
  void setCaps(uint32_t walkCap, uint32_t ghostCap);
  uint32_t walkCap() const { return walkCap_; }
  uint32_t ghostCap() const { return ghostCap_; }

  const TickStats& stats() const { return stats_; }
  // The tick's output: two buffers used alternately, so one tick's packets stay intact while the
  // next tick's pass runs. Each due viewer's packet is [outOffset, outOffset + outLength).
  uint8_t* output() { return output_[tick_ & 1]->data.get(); }
  size_t outputSize() const { return outputSize_; }
  // A block is replaced, never resized, when the viewers outgrow it: views over the old block keep
  // it alive through the shared pointer.
  const std::shared_ptr<OutputBlock>& outputBuffer(unsigned which) const { return output_[which & 1]; }
  // Per viewer, in viewer order: avatar id, offset, length (0 when skipped), written by the pass.
  const uint32_t* packetIndex() const { return packetIndex_.data(); }
  double odometerMicros = 0, snapshotMicros = 0, passMicros = 0;

  // A candidate with a positive score (the score itself is kept apart, in Scratch::scores): its
  // gather position, its ghost entry (-1: none; entries < 32,768, since ghostTableCapacity =
  // 2 x ghostCap <= 32,768) and whether it is announced as new (fresh: no entry, or its
  // announcement was lost: unheld). 8 bytes.
  struct Scored { uint32_t order; int16_t entry; uint16_t fresh; };

 private:
  // Per-worker scratch, on its own cache lines.
  struct alignas(64) Scratch {
    std::vector<uint64_t> candD2;      // the gather's candidates (see Candidates)
    std::vector<uint32_t> candIndex;
    std::vector<uint64_t> candIdOdo;   // id | odometer << 32
    std::vector<uint32_t> eligible;    // gather positions of the eligible candidates
    std::vector<uint16_t> buckets;
    std::vector<uint32_t> indices;     // 2 per candidate
    std::vector<Scored> scored;
    std::vector<uint64_t> scores;      // scored[j]'s score
    std::vector<uint32_t> chosen;      // positions in `scored` of the updates sent
    std::vector<uint32_t> lists;       // chooseWithRoom's scratch
    std::vector<uint64_t> keys;
    std::vector<uint8_t> kept;
    std::vector<uint32_t> removals;  // ghost entries whose despawn record went out this pass
    std::vector<uint32_t> evicted;   // ids evicted this pass
    std::vector<uint32_t> stale;     // entries found stale this pass (GhostTable::stale)
    std::vector<uint16_t> words;     // lookup map words of the eligible candidates
    std::vector<uint8_t> kindRecords;       // this packet's kind records, before they are copied in
    std::vector<uint8_t> attributeSection;  // this packet's attribute entries, likewise
    GhostLookup lookup;              // slot -> entry of the viewer being served
    // Per slot: the boosted id of that slot while a viewer with a boost set is scored, else a
    // value no id of the slot can be (its slot bits differ).
    std::vector<uint32_t> boostIds;
    TickStats stats;
  };
  void serve(Viewer& v, Scratch& s);
  // The ghosts of v the viewer may no longer see (their groups, as of this snapshot, do not meet
  // v's) depart now, their despawns ahead of the others. The ghosts checked: every one after a
  // change of v's groups, else those of entities whose groups changed since v's last pass.
  void departHidden(Viewer& v, Scratch& s, const GhostLookup::Loaded& lookup) const;
  // A teleport (Viewer::teleporting): every ghost of v outside its view radius at the new place (or
  // gone from the snapshot) departs now, their despawns ahead of the others, in id order.
  void departFar(Viewer& v, Scratch& s) const;
  // Whether v's avatar moved further than v.teleportRaw since the last tick (startTick, every
  // viewer with teleportRaw set, due or not): notes a teleport for its next pass.
  void noteMove(Viewer& v) noexcept;
  uint32_t sectionFloor(uint32_t stateBytes) const;
  // Throws ERR_SIGHTLINE_INVALID_ACK unless `ack` is one of the `passes` sequences up to sequence - 1.
  static void checkAck(const Viewer& v, uint16_t ack, uint16_t sequence, uint32_t passes);
  // Whether `ack` is one of the `passes` sequences up to sequence - 1 (what checkAck checks).
  static bool ackWasSent(uint16_t ack, uint16_t sequence, uint32_t passes);
  // acknowledge() once its checks have passed.
  void applyAck(Viewer& v, uint16_t ack, uint32_t ackBits);
  void resolvePacket(Viewer& v, AckLog::Packet& p, uint32_t slot, AckLog::Outcome outcome) const;

  Config config_;
  EntityStore store_;
  Snapshot snapshot_;
  BlockArena ghostArena_;  // the viewers' ghost tables (declared before them: it outlives them)
  std::vector<std::unique_ptr<Viewer>> viewers_;  // read by the pass threads: not resized during a pass
  // Where viewers_ moves when an adopted viewer finds it full: reserved ahead (reserveViewerAdds,
  // which may run during a pass and so never touches viewers_ itself).
  std::vector<std::unique_ptr<Viewer>> grownViewers_;
  std::unordered_map<uint32_t, Viewer*> viewerIndex_;  // avatar id -> its viewer (in viewers_)
  // Nodes made ahead for viewerIndex_ (reserveViewerAdds): adoptViewer moves one in, unallocated.
  std::unordered_map<uint32_t, Viewer*> spareIndexNodes_;
  uint32_t spareKey_ = 0;
  bool recordGhostPositions_;
  uint32_t walkCap_, ghostCap_;  // in use by the pass (setCaps)
  uint32_t phaseCounter_ = 0;
  uint32_t tick_ = 0;
  std::shared_ptr<OutputBlock> output_[2];
  std::vector<uint32_t> packetIndex_;
  size_t outputSize_ = 0;
  uint64_t outputBytes_ = 0;
  std::vector<std::unique_ptr<Scratch>> scratch_;
  TickStats stats_;
  // The groups log: the entities whose groups changed, with the tick of the snapshot that saw the
  // change, in a ring of kGroupsLog entries (made when groups are first set): a viewer's pass
  // checks those since its last one. end: entries ever written; lostThrough: the newest tick of an
  // entry overwritten (a viewer whose last pass was before it checks every ghost instead).
  static constexpr uint32_t kGroupsLog = 1u << 16;
  std::vector<uint32_t> groupsLogIds_, groupsLogTicks_;
  uint64_t groupsLogEnd_ = 0;
  uint32_t groupsLogLostThrough_ = 0;
  void logGroupChanges() noexcept;
  void planGroupChecks(Viewer& v) const noexcept;
};

}  // namespace sightline
