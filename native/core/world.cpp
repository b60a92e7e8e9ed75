// Over 500 lines as one file: the World's operations (entities, viewers, acknowledgements, the tick's two calls) over the state world.h declares; the pass, snapshot and ghosts are in their own files.
#include "world.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "budget.h"
#include "codec.h"
#include "errors.h"
#include "select.h"

namespace sightline {

namespace {
double microsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

void TickStats::add(const TickStats& o) {
  served += o.served, skippedNotDue += o.skippedNotDue, skippedAvatarGone += o.skippedAvatarGone;
  skippedOutsideRegion += o.skippedOutsideRegion, candidates += o.candidates, examined += o.examined;
  eligible += o.eligible, records += o.records, newGhosts += o.newGhosts, despawns += o.despawns;
  bytes += o.bytes, ghostTableFull += o.ghostTableFull, subscriptionChanges += o.subscriptionChanges;
  events += o.events, eventBytes += o.eventBytes, pressureEvictions += o.pressureEvictions;
  hiddenDepartures += o.hiddenDepartures, selfRecords += o.selfRecords, teleports += o.teleports;
  teleportDepartures += o.teleportDepartures;
  kinds += o.kinds, attributes += o.attributes, attributeBytes += o.attributeBytes;
}

World::World(const Config& config, uint32_t capacity, bool recordGhostPositions)
    : config_(config),
      store_(capacity, StoreSchema::of(config_)),
      snapshot_(config_),
      recordGhostPositions_(recordGhostPositions),
      walkCap_(config.walkCap),
      ghostCap_(config.ghostCap) {}

void World::setCaps(uint32_t walkCap, uint32_t ghostCap) {
  if (walkCap < 1 || walkCap > config_.walkCap)
    throw CoreError("ERR_SIGHTLINE_INVALID_ARGUMENT", "walkCap must be an integer from 1 to the config's walkCap (" +
                                                          std::to_string(config_.walkCap) + "), received " + std::to_string(walkCap));
  if (ghostCap < 1 || ghostCap > config_.ghostCap)
    throw CoreError("ERR_SIGHTLINE_INVALID_ARGUMENT", "ghostCap must be an integer from 1 to the config's ghostCap (" +
                                                          std::to_string(config_.ghostCap) + "), received " + std::to_string(ghostCap));
  walkCap_ = walkCap, ghostCap_ = ghostCap;
}

void World::addViewer(uint32_t avatarId, ViewerOptions opts, bool avatarChecked) {
  if (!avatarChecked) store_.checkedSlot(avatarId);
  if (viewerIndex_.count(avatarId))
    throw CoreError("ERR_SIGHTLINE_VIEWER_EXISTS",
                    "entity " + std::to_string(avatarId) + " is already a viewer (one viewer per avatar)");
  std::unique_ptr<Viewer> v = makeViewer(avatarId, opts, /*avatarChecked=*/true);
  reserveViewerAdds(1);
  adoptViewer(std::move(v));
}

void World::checkPayloadBytes(uint32_t payload) const {
  if (payload < config_.minPayloadBytes || payload > kMaxPayloadBytes)
    throw CoreError("ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                    "payloadBytes must be between " + std::to_string(config_.minPayloadBytes) +
                        " and " + std::to_string(kMaxPayloadBytes) + ", received " + std::to_string(payload));
}

void World::checkSendPeriod(uint32_t period) {
  if (period < 1 || period > 65535)
    throw CoreError("ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                    "sendPeriod must be between 1 and 65535 ticks, received " + std::to_string(period));
}

void World::checkViewRadius(int64_t raw) const {
  if (raw < 1 || raw > config_.viewRadiusRaw)
    throw CoreError("ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                    "viewRadius must be from 1 raw unit (1/1024 m) to the config's viewRadius (" +
                        std::to_string(config_.viewRadiusRaw) + " raw), received " + std::to_string(raw) + " raw");
}

namespace {
// A viewer's radius and the cell radius of the box that covers it (as config.cpp derives the
// config's: ceil(radius / cellRaw)).
void setViewRadius(Viewer& v, int64_t raw, const Config& c) {
  v.viewRadiusRaw = raw;
  v.viewRadiusSq = uint64_t(raw) * uint64_t(raw);
  v.cellRadius = uint32_t((raw + c.cellRaw - 1) / c.cellRaw);
}
}  // namespace

std::unique_ptr<Viewer> World::makeViewer(uint32_t avatarId, ViewerOptions opts, bool avatarChecked, bool outputChecked) {
  if (!avatarChecked) store_.checkedSlot(avatarId);
  uint32_t payload = opts.payloadBytes == 0 ? config_.payloadBytes : opts.payloadBytes;
  checkPayloadBytes(payload);
  checkSendPeriod(opts.sendPeriod);
  const int64_t radius = opts.viewRadiusRaw == 0 ? config_.viewRadiusRaw : opts.viewRadiusRaw;
  checkViewRadius(radius);
  if (opts.teleportRaw < 0 || opts.teleportRaw > config_.regionRaw)
    throw CoreError("ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                    "teleportDistance must be from 1 raw unit (1/1024 m) to the region's size (" + std::to_string(config_.regionRaw) +
                        " raw), or 0 (off), received " + std::to_string(opts.teleportRaw) + " raw");
  if (!outputChecked) checkOutputRoom(outputBytes_ + payload);
  auto v = std::make_unique<Viewer>(avatarId, payload, opts.sendPeriod, 0, config_.ghostTableCapacity, recordGhostPositions_,
                                    opts.acks, config_.eventReserveBytes, &ghostArena_, config_.attributeBytes);
  setViewRadius(*v, radius, config_);
  v->groups = opts.groups;
  v->self = opts.self;
  v->teleportRaw = opts.teleportRaw;
  v->asked = ViewerSettings{payload, opts.sendPeriod, radius, opts.groups, 1};
  v->askedLogUpdates = v->ackLog ? v->ackLog->maxUpdates : 0;
  return v;
}

void World::changeViewer(uint32_t avatarId, ViewerChange c) {
  Viewer& v = viewerMutable(avatarId);
  prepareViewerChange(v, c, outputBytes_);
  applyViewerChange(v, c);
}

void World::prepareViewerChange(Viewer& v, ViewerChange& c, uint64_t outputTotal) const {
  ViewerSettings to = v.asked;
  if (c.what & ViewerChange::kSendPeriod) checkSendPeriod(c.to.sendPeriod), to.sendPeriod = c.to.sendPeriod;
  if (c.what & ViewerChange::kViewRadius) checkViewRadius(c.to.viewRadiusRaw), to.viewRadiusRaw = c.to.viewRadiusRaw;
  if (c.what & ViewerChange::kGroups) to.groups = c.to.groups;
  std::vector<uint32_t> boost;
  if (c.what & ViewerChange::kBoost) {
    if (c.boost.size() > kMaxBoosted)
      throw CoreError("ERR_SIGHTLINE_INVALID_VIEWER_OPTION", "a boost set holds at most " + std::to_string(kMaxBoosted) +
                                                                 " entities, received " + std::to_string(c.boost.size()));
    if (c.to.boostFactor < 1 || c.to.boostFactor > kMaxBoostFactor)
      throw CoreError("ERR_SIGHTLINE_INVALID_VIEWER_OPTION", "a boost factor must be an integer from 1 to " +
                                                                 std::to_string(kMaxBoostFactor) + ", received " +
                                                                 std::to_string(c.to.boostFactor));
    // Sorted, without repeats: the set, whatever order it was given in. A factor of 1 boosts
    // nothing: the set is empty then.
    if (c.to.boostFactor == 1) c.boost.clear();
    std::sort(c.boost.begin(), c.boost.end());
    c.boost.erase(std::unique(c.boost.begin(), c.boost.end()), c.boost.end());
    boost = c.boost;  // v.askedBoost's new contents, made before anything changes
    to.boostFactor = c.to.boostFactor;
  }
  uint32_t logUpdates = v.askedLogUpdates;
  if (c.what & ViewerChange::kPayloadBytes) {
    checkPayloadBytes(c.to.payloadBytes);
    checkOutputRoom(outputTotal - v.asked.payloadBytes + c.to.payloadBytes);
    to.payloadBytes = c.to.payloadBytes;
    // The log keeps room for the largest packets asked for so far (it never shrinks: packets
    // logged before a smaller payload still hold their records).
    if (v.ackLog && c.to.payloadBytes / kRecordBytes > logUpdates) {
      c.logUpdates = c.to.payloadBytes / kRecordBytes, c.logDespawns = c.to.payloadBytes / kDespawnRecordBytes;
      c.logIds.resize(size_t{AckLog::kPackets} * c.logUpdates);
      c.logMarks.resize(size_t{AckLog::kPackets} * c.logUpdates);
      c.logFlags.resize(size_t{AckLog::kPackets} * c.logUpdates);
      c.logDespawnIds.resize(size_t{AckLog::kPackets} * c.logDespawns);
      if (v.ackLog->maxAttributes > 0) {
        c.logAttributes = c.to.payloadBytes / kAttributeHeaderBytes;
        c.logAttributeIds.resize(size_t{AckLog::kPackets} * c.logAttributes);
        c.logAttributeVersions.resize(size_t{AckLog::kPackets} * c.logAttributes);
      }
      logUpdates = c.logUpdates;
    }
  }
  c.to = to;
  v.asked = to;
  if (c.what & ViewerChange::kBoost) v.askedBoost.swap(boost);
  v.askedLogUpdates = logUpdates;
}

void World::applyViewerChange(Viewer& v, ViewerChange& c) noexcept {
  if (c.what & ViewerChange::kSendPeriod) {
    v.sendPeriod = c.to.sendPeriod;
    v.phase = v.phaseSeed % v.sendPeriod;
  }
  if (c.what & ViewerChange::kViewRadius) {
    setViewRadius(v, c.to.viewRadiusRaw, config_);
    v.eligibleHint = 0;  // the threshold distance of the old radius says nothing of the new one
  }
  if ((c.what & ViewerChange::kGroups) && c.to.groups != v.groups) {
    v.groups = c.to.groups;
    v.groupsChanged = true;  // its next pass checks every ghost it holds
  }
  if (c.what & ViewerChange::kBoost) {
    // The entries of the old set lose their flag, those of the new one get it (a factor of 1 is
    // no boost: an empty set).
    for (uint32_t id : v.boost)
      if (int32_t e = v.ghosts.find(id); e >= 0) v.ghosts.at(uint32_t(e)).flags &= uint8_t(~kBoosted);
    if (c.to.boostFactor <= 1) c.boost.clear();
    v.boost.swap(c.boost);  // the old set goes with the change
    v.boostFactor = v.boost.empty() ? 1 : c.to.boostFactor;
    for (uint32_t id : v.boost)
      if (int32_t e = v.ghosts.find(id); e >= 0) v.ghosts.at(uint32_t(e)).flags |= kBoosted;
  }
  if (c.what & ViewerChange::kPayloadBytes) {
    outputBytes_ = outputBytes_ - v.payloadBytes + c.to.payloadBytes;
    v.payloadBytes = c.to.payloadBytes;
    if (v.ackLog && c.logUpdates > v.ackLog->maxUpdates) {
      // Every logged packet moves to the larger arrays (the old ones go with the change).
      AckLog& log = *v.ackLog;
      for (uint32_t slot = 0; slot < AckLog::kPackets; ++slot) {
        const AckLog::Packet& p = log.packets[slot];
        std::copy_n(log.updateIds.data() + size_t{slot} * log.maxUpdates, p.updates, c.logIds.data() + size_t{slot} * c.logUpdates);
        std::copy_n(log.updateMarks.data() + size_t{slot} * log.maxUpdates, p.updates, c.logMarks.data() + size_t{slot} * c.logUpdates);
        std::copy_n(log.updateFlags.data() + size_t{slot} * log.maxUpdates, p.updates, c.logFlags.data() + size_t{slot} * c.logUpdates);
        if (c.logAttributes > 0) {
          std::copy_n(log.attributeIds.data() + size_t{slot} * log.maxAttributes, p.attributes,
                      c.logAttributeIds.data() + size_t{slot} * c.logAttributes);
          std::copy_n(log.attributeVersions.data() + size_t{slot} * log.maxAttributes, p.attributes,
                      c.logAttributeVersions.data() + size_t{slot} * c.logAttributes);
        }
        std::copy_n(log.despawnIds.data() + size_t{slot} * log.maxDespawns, p.despawns,
                    c.logDespawnIds.data() + size_t{slot} * c.logDespawns);
      }
      log.updateIds.swap(c.logIds), log.updateMarks.swap(c.logMarks), log.despawnIds.swap(c.logDespawnIds);
      log.updateFlags.swap(c.logFlags);
      log.maxUpdates = c.logUpdates, log.maxDespawns = c.logDespawns;
      if (c.logAttributes > 0) {
        log.attributeIds.swap(c.logAttributeIds), log.attributeVersions.swap(c.logAttributeVersions);
        log.maxAttributes = c.logAttributes;
      }
    }
  }
}

void World::reserveViewerAdds(uint32_t k) {
  // viewers_ itself is left alone (the pass threads may be reading it): the room is made in
  // grownViewers_, which adoptViewer moves the list into when it is full.
  const size_t want = viewers_.size() + k;
  if (viewers_.capacity() < want && grownViewers_.capacity() < want)
    grownViewers_.reserve(std::max(want, 2 * viewers_.capacity()));
  viewerIndex_.reserve(want);
  while (spareIndexNodes_.size() < k) spareIndexNodes_.emplace(spareKey_++, nullptr);
}

void World::adoptViewer(std::unique_ptr<Viewer> v) noexcept {
  // Room was reserved: push_back within capacity and a node handle inserted without a rehash
  // allocate nothing.
  auto node = spareIndexNodes_.extract(spareIndexNodes_.begin());
  node.key() = v->avatarId;
  node.mapped() = v.get();
  viewerIndex_.insert(std::move(node));
  v->phaseSeed = phaseCounter_++;
  v->phase = v->phaseSeed % v->sendPeriod;
  // Sequences start at the tick number (mod 2^16): a viewer sends at most one packet a tick, so a
  // viewer removed and added again never repeats a sequence of its earlier session (within 65,536
  // ticks), and an acknowledgement from that session still in flight is refused as never sent.
  v->sequence = uint16_t(tick_);
  outputBytes_ += v->payloadBytes;
  if (viewers_.size() == viewers_.capacity()) {
    // Full: move the list into the room reserved ahead (moves of pointers within capacity), and
    // free the old array.
    for (auto& p : viewers_) grownViewers_.push_back(std::move(p));
    viewers_.swap(grownViewers_);
    std::vector<std::unique_ptr<Viewer>>().swap(grownViewers_);
  }
  viewers_.push_back(std::move(v));
}

uint64_t World::memoryBytes() const {
  uint64_t n = sizeof(World) + store_.memoryBytes() + snapshot_.memoryBytes() + ghostArena_.reserved();
  for (const auto& o : output_) n += o ? o->size : 0;
  n += vectorBytes(packetIndex_) + vectorBytes(viewers_) + vectorBytes(grownViewers_);
  n += uint64_t{viewerIndex_.size() + spareIndexNodes_.size()} * (sizeof(uint32_t) + sizeof(Viewer*) + 2 * sizeof(void*));
  for (const auto& vp : viewers_) {
    const Viewer& v = *vp;
    n += sizeof(Viewer);
    if (v.ackLog) n += sizeof(AckLog) + vectorBytes(v.ackLog->updateIds) + vectorBytes(v.ackLog->updateMarks) + vectorBytes(v.ackLog->despawnIds) +
                       vectorBytes(v.ackLog->resend.ids) + vectorBytes(v.ackLog->unconfirmedDespawns.ids) +
                       vectorBytes(v.ackLog->updateFlags) + vectorBytes(v.ackLog->attributeIds) + vectorBytes(v.ackLog->attributeVersions);
    if (v.events) n += sizeof(EventQueue) + uint64_t{kMaxQueuedEvents} * v.events->maxEventBytes();
  }
  for (const auto& sp : scratch_) {
    const Scratch& s = *sp;
    n += sizeof(Scratch) + vectorBytes(s.candD2) + vectorBytes(s.candIndex) + vectorBytes(s.candIdOdo) + vectorBytes(s.eligible) +
         vectorBytes(s.buckets) + vectorBytes(s.indices) + vectorBytes(s.scored) + vectorBytes(s.scores) + vectorBytes(s.chosen) +
         vectorBytes(s.lists) + vectorBytes(s.keys) + vectorBytes(s.kept) + vectorBytes(s.removals) + vectorBytes(s.evicted) +
         vectorBytes(s.stale) + vectorBytes(s.words) + vectorBytes(s.kindRecords) + vectorBytes(s.attributeSection) +
         s.lookup.memoryBytes();
  }
  return n;
}

void World::checkOutputRoom(uint64_t total) {
  if (total > kMaxOutputBytes)
    throw CoreError("ERR_SIGHTLINE_OUTPUT_FULL",
                    "the viewers' payloadBytes together would be " + std::to_string(total) + " bytes, more than an output buffer holds (" +
                        std::to_string(kMaxOutputBytes) + "): fewer viewers, or smaller payloads");
}

void World::removeViewer(uint32_t avatarId) {
  auto it = viewerIndex_.find(avatarId);
  if (it == viewerIndex_.end())
    throw CoreError("ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(avatarId) + " is not a viewer");
  // Serving order is kept: the viewer's place is found by a scan of pointers, and the ones after it
  // move up (a memmove); nothing else is re-indexed.
  const Viewer* gone = it->second;
  outputBytes_ -= gone->payloadBytes;
  viewerIndex_.erase(it);
  viewers_.erase(std::find_if(viewers_.begin(), viewers_.end(), [gone](const std::unique_ptr<Viewer>& p) { return p.get() == gone; }));
}

void World::resolvePacket(Viewer& v, AckLog::Packet& p, uint32_t slot, AckLog::Outcome outcome) const {
  const bool delivered = outcome == AckLog::Delivered, probably = outcome == AckLog::ProbablyLost;
  const bool assumed = outcome == AckLog::Assumed;
  AckLog& log = *v.ackLog;
  GhostTable& gt = v.ghosts;
  const uint32_t* ids = log.updateIds.data() + size_t{slot} * log.maxUpdates;
  const uint32_t* marks = log.updateMarks.data() + size_t{slot} * log.maxUpdates;
  const uint8_t* flags = log.updateFlags.data() + size_t{slot} * log.maxUpdates;
  for (uint32_t i = 0; i < p.updates; ++i) {
    if (ids[i] == v.avatarId) {
      // Its self record (never one of its ghosts: the gather leaves its avatar out). Lost, or
      // probably, and nothing newer sent since: it goes again.
      if ((outcome == AckLog::Lost || (probably && !p.probablyLost)) && marks[i] == v.selfMark) v.selfPending = true;
      continue;
    }
    int32_t e = gt.find(ids[i]);
    if (e < 0) continue;
    GhostEntry& ge = gt.at(uint32_t(e));
    GhostAck& a = gt.ackAt(uint32_t(e));
    if (p.pass < a.born) continue;  // a record of an earlier incarnation
    if (!probably && a.inflight > 0) --a.inflight;
    if (assumed) continue;
    if (delivered) {
      if (!a.confirmed || int32_t(marks[i] - a.ackedMark) > 0) a.ackedMark = marks[i];
      a.confirmed = 1;
    } else if (outcome == AckLog::Lost && !a.confirmed && a.inflight == 0) {
      // The client most likely never got it. A despawn is sent all the same (a client ignores one
      // for an entity it does not hold), so a late arrival cannot leave it on the client for good;
      // eligible again meanwhile, it is announced again as new.
      ge.flags |= kUnheld;
      if (ge.state == kLive) ge.state = kDeparting;
      if (!(ge.flags & kQueued)) ge.flags |= kQueued, gt.enqueue(ge.id);
    } else if (!p.probablyLost && ge.mark == marks[i]) {
      // Nothing newer went out: the drift since the acknowledged mark counts again. A ghost never
      // acknowledged (its announcement may be what was lost) scores as a new candidate does, plus
      // its drift since: an entity that never moves is announced again too.
      ge.mark = a.confirmed ? a.ackedMark : marks[i] - config_.newDrift;
    }
    if (!delivered && (flags[i] & AckLog::kKindSent) && !(ge.flags & kUnheld)) {
      // It carried the entity's kind: a later record did not (its ghost's mark was past the kind
      // mark then), so the mark goes back before the kind mark, and the next record sends the kind.
      const uint32_t kindMark = store_.kindMarks()[slotOfId(ids[i])];
      if (store_.isLive(ids[i]) && int32_t(ge.mark - kindMark) >= 0) ge.mark = kindMark - config_.newDrift;
    }
  }
  // Its attribute entries: acknowledged, the ghost's acknowledged version moves up; lost (or
  // probably), the ghost's attributes are queued again unless a newer or the same version was
  // acknowledged (the queue sends the newest then).
  if (!assumed && gt.tracksAttributes()) {
    const uint32_t* aIds = log.attributeIds.data() + size_t{slot} * log.maxAttributes;
    const uint32_t* aVersions = log.attributeVersions.data() + size_t{slot} * log.maxAttributes;
    for (uint32_t i = 0; i < p.attributes; ++i) {
      const int32_t e = gt.find(aIds[i]);
      if (e < 0 || p.pass < gt.ackAt(uint32_t(e)).born) continue;  // gone, or an earlier incarnation's
      GhostAttribute& ga = gt.attributeAt(uint32_t(e));
      const bool newer = ga.acked == 0 || int32_t(aVersions[i] - ga.acked) > 0;
      if (delivered) {
        if (newer) ga.acked = aVersions[i];
      } else if (newer) {
        gt.queueAttributes(uint32_t(e));
      }
    }
  }
  if (probably) {
    p.probablyLost = 1;
    ++log.probablyLost;
    return;
  }
  // Its despawns: lost, each goes out again unless the entity was announced again since (the
  // entry was removed when the despawn was written, so an entry now is a later announcement).
  const uint32_t* despawns = log.despawnIds.data() + size_t{slot} * log.maxDespawns;
  if (outcome == AckLog::Lost) {
    for (uint32_t i = 0; i < p.despawns; ++i)
      if (gt.find(despawns[i]) < 0) log.queueResend(despawns[i]);
  } else if (assumed) {
    // The ring keeps the newest: one pushed out will not be sent again (counted, as a lost despawn
    // the resend ring has no room for is).
    for (uint32_t i = 0; i < p.despawns; ++i)
      if (log.unconfirmedDespawns.push(despawns[i], true)) ++log.despawnsNotResent;
  }
  if (delivered && p.events && v.events) v.events->acknowledge(p.firstEvent, p.events);
  if (delivered) ++log.acked;
  else if (assumed) ++log.assumed;
  else ++log.lost;
  p.used = 0;
}

bool World::ackWasSent(uint16_t ack, uint16_t sequence, uint32_t passes) {
  // Sent so far: sequences [sequence - passes, sequence - 1] (all of them once passes >= 2^16).
  uint32_t back = uint16_t(uint16_t(sequence - 1) - ack);  // how many packets before the newest
  return passes != 0 && back < passes;
}

void World::checkAck(const Viewer& v, uint16_t ack, uint16_t sequence, uint32_t passes) {
  if (!ackWasSent(ack, sequence, passes))
    throw CoreError("ERR_SIGHTLINE_INVALID_ACK",
                    "ack " + std::to_string(ack) + " names a packet viewer " + std::to_string(v.avatarId) +
                        " was never sent (" +
                        (passes == 0 ? std::string("none sent yet")
                                     : "sent: " + std::to_string(std::min<uint32_t>(passes, 65536)) +
                                           " sequences up to " + std::to_string(uint16_t(sequence - 1))) +
                        ")");
}

void World::checkAckDuringPass(uint32_t avatarId, uint16_t ack) const {
  const Viewer& v = viewer(avatarId);
  checkAck(v, ack, v.sequenceBeforePass, v.passesBeforePass);
}

void World::acknowledge(uint32_t avatarId, uint16_t ack, uint32_t ackBits) {
  Viewer& v = viewerMutable(avatarId);
  if (!v.ackLog)
    throw CoreError("ERR_SIGHTLINE_ACKS_DISABLED", "viewer " + std::to_string(avatarId) +
                                                       " was added without { acks: true }; its packets are not logged");
  checkAck(v, ack, v.sequence, v.passes);
  applyAck(v, ack, ackBits);
}

void World::applyAck(Viewer& v, uint16_t ack, uint32_t ackBits) {
  AckLog& log = *v.ackLog;
  if (!log.acknowledging) {
    // The first acknowledgement. Packets resolved before it were only assumed delivered (the
    // client may not have been listening yet): a ghost that no packet still in the log carries is
    // unconfirmed for good, so it is handled as if its announcement were lost for certain. It is
    // announced again when eligible, and a despawn goes out otherwise (ignored by a client that
    // never got it).
    log.acknowledging = true;
    v.selfPending = true;  // its self record, if it has one, goes again: the client may not have had it
    GhostTable& gt = v.ghosts;
    // Their despawns go out again (the newest the ring kept), unless announced again since.
    while (log.unconfirmedDespawns.count > 0) {
      const uint32_t id = log.unconfirmedDespawns.pop();
      if (gt.find(id) < 0) log.queueResend(id);
    }
    for (uint32_t i = 0; i < gt.size(); ++i) {
      GhostEntry& ge = gt.at(i);
      const GhostAck& a = gt.ackAt(i);
      if (a.confirmed || a.inflight > 0 || (ge.flags & kUnheld)) continue;
      ge.flags |= kUnheld;
      if (ge.state == kLive) ge.state = kDeparting;
      if (!(ge.flags & kQueued)) ge.flags |= kQueued, gt.enqueue(ge.id);
    }
  }
  for (uint32_t slot = 0; slot < AckLog::kPackets; ++slot) {
    AckLog::Packet& p = log.packets[slot];
    if (!p.used) continue;
    uint32_t d = uint16_t(ack - p.sequence);
    if (d >= 0x8000) continue;  // newer than the acknowledgement
    bool received = d == 0 || (d <= AckLog::kAckWindow && ((ackBits >> (d - 1)) & 1u));
    if (received) resolvePacket(v, p, slot, AckLog::Delivered);
    else if (d > AckLog::kAckWindow) resolvePacket(v, p, slot, AckLog::Lost);
    else if (d >= AckLog::kReorderTolerance && !p.probablyLost) resolvePacket(v, p, slot, AckLog::ProbablyLost);
  }
}

void World::emit(uint32_t avatarId, const uint8_t* data, uint32_t length, bool countDrop) {
  Viewer& v = viewerMutable(avatarId);
  if (!v.events)
    throw CoreError("ERR_SIGHTLINE_EVENTS_DISABLED",
                    "viewer " + std::to_string(avatarId) +
                        " cannot take events: it needs { acks: true } and the config an eventReserveBytes above " +
                        std::to_string(kEventSectionBytes + kEventHeaderBytes) + " (it is " +
                        std::to_string(config_.eventReserveBytes) + ")");
  if (length == 0 || length > v.events->maxEventBytes())
    throw CoreError("ERR_SIGHTLINE_EVENT_TOO_LARGE", "an event must be 1 to " + std::to_string(v.events->maxEventBytes()) +
                                                         " bytes (eventReserveBytes - 5), received " +
                                                         std::to_string(length));
  if (v.events->full()) {
    if (countDrop) ++v.events->dropped;
    throw CoreError("ERR_SIGHTLINE_EVENT_QUEUE_FULL",
                    "viewer " + std::to_string(avatarId) + " already has " + std::to_string(kMaxQueuedEvents) +
                        " unacknowledged events queued; the event was not queued");
  }
  v.events->push(data, length);
  ++v.events->queued;
}

const Viewer& World::viewer(uint32_t avatarId) const {
  auto it = viewerIndex_.find(avatarId);
  if (it == viewerIndex_.end())
    throw CoreError("ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(avatarId) + " is not a viewer");
  return *it->second;
}

// The viewers are the world's own (non-const) objects: writable through a non-const world.
Viewer& World::viewerMutable(uint32_t avatarId) { return const_cast<Viewer&>(viewer(avatarId)); }

void World::reserveTick(unsigned threads) {
  // Everything the tick allocates comes first, and none of it changes what the world holds: if an
  // allocation throws (std::bad_alloc), the tick number, the odometers, the snapshot and the
  // viewers stay as they were. The output block replaced here is the one of the tick two back,
  // whose result expires as this tick starts.
  size_t outputBytes = 0;
  for (auto& vp : viewers_) outputBytes += vp->payloadBytes;
  std::shared_ptr<OutputBlock>& out = output_[(tick_ + 1) & 1];
  // A quarter to spare for viewers to come, within the most an output buffer may hold.
  if (!out || out->size < outputBytes)
    out = std::make_shared<OutputBlock>(std::max<size_t>(outputBytes, std::min<size_t>(outputBytes + outputBytes / 4 + 64, kMaxOutputBytes)));
  if (packetIndex_.size() < 3 * viewers_.size()) packetIndex_.resize(3 * viewers_.size() + 3 * viewers_.size() / 4);
  reserveScratch(threads);
  snapshot_.plan(store_);
  if (store_.groupsEverSet() && groupsLogTicks_.size() < kGroupsLog) groupsLogIds_.resize(kGroupsLog), groupsLogTicks_.resize(kGroupsLog);
}

void World::logGroupChanges() noexcept {
  const uint32_t n = snapshot_.groupsChangedCount;
  if (n == 0 || groupsLogTicks_.size() < kGroupsLog) return;  // no ring: groups were never set, so none changed
  for (uint32_t k = 0; k < n; ++k) {
    const size_t at = size_t(groupsLogEnd_ % kGroupsLog);
    if (groupsLogEnd_ >= kGroupsLog) groupsLogLostThrough_ = std::max(groupsLogLostThrough_, groupsLogTicks_[at]);
    groupsLogIds_[at] = snapshot_.groupsChanged[k];
    groupsLogTicks_[at] = tick_;
    ++groupsLogEnd_;
  }
}

// A due viewer's groups checks for this tick's pass: every ghost after a change of its own groups,
// or when the log lost entries it needed, or when the log holds more changes for it than it has
// ghosts; else the log entries since its last pass.
void World::planGroupChecks(Viewer& v) const noexcept {
  v.groupsScan = false, v.groupsFrom = v.groupsTo = groupsLogEnd_;
  if (v.lastServedTick == 0) {  // never served: it holds nothing
    v.groupsChanged = false;
    return;
  }
  if (v.groupsChanged || (groupsLogEnd_ > 0 && groupsLogLostThrough_ > v.lastServedTick)) {
    v.groupsScan = true;
    v.groupsChanged = false;
    return;
  }
  // The first entry of a tick after the last pass: ticks are non-decreasing along the ring.
  uint64_t lo = groupsLogEnd_ > kGroupsLog ? groupsLogEnd_ - kGroupsLog : 0, hi = groupsLogEnd_;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (groupsLogTicks_[size_t(mid % kGroupsLog)] > v.lastServedTick) hi = mid;
    else lo = mid + 1;
  }
  v.groupsFrom = lo;
  if (groupsLogEnd_ - lo > v.ghosts.size()) v.groupsScan = true, v.groupsFrom = groupsLogEnd_;
}

void World::startTick() noexcept {
  auto t0 = std::chrono::steady_clock::now();
  ++tick_;
  store_.advanceOdometer();
  odometerMicros = microsSince(t0);
  auto t1 = std::chrono::steady_clock::now();
  snapshot_.fill(store_);
  logGroupChanges();
  snapshotMicros = microsSince(t1);

  // Skip checks and the output layout: each viewer owns a fixed slice of payloadBytes.
  size_t offset = 0;
  const int32_t *xs = store_.x(), *ys = store_.y();
  for (auto& vp : viewers_) {
    Viewer& v = *vp;
    v.outOffset = offset;
    v.outLength = 0;
    v.passesBeforePass = v.passes, v.sequenceBeforePass = v.sequence, v.ghostsBeforePass = v.ghosts.size();
    offset += v.payloadBytes;
    if (v.teleportRaw > 0) noteMove(v);
    if ((tick_ + v.phase) % v.sendPeriod != 0) { v.status = ViewerStatus::NotDue; continue; }
    if (!store_.isLive(v.avatarId)) { v.status = ViewerStatus::AvatarGone; continue; }
    uint32_t slot = slotOfId(v.avatarId);
    int32_t x = xs[slot], y = ys[slot];
    if (x < 0 || y < 0 || x >= config_.regionRaw || y >= config_.regionRaw) {
      v.status = ViewerStatus::OutsideRegion;
      continue;
    }
    v.status = ViewerStatus::Due;
    v.vx = x, v.vy = y;
    v.teleporting = v.teleportAsked, v.teleportAsked = false;
    if (v.teleporting) v.eligibleHint = 0;  // the threshold distance of the old place says nothing of the new one
    planGroupChecks(v);
    v.lastServedTick = tick_;
  }
  outputSize_ = offset;
}

void World::reserveScratch(unsigned threads) {
  while (scratch_.size() < threads) scratch_.push_back(std::make_unique<Scratch>());
  for (auto& s : scratch_) {
    // Candidates: at most every entity (the snapshot holds at most highWater of them), then the
    // held ghosts not eligible that the pass appends (at most the table).
    // Each group of arrays is grown when its last one is short: after an allocation that threw
    // part way, the next call makes the rest (resizing those made already to the size they have).
    size_t n = size_t{store_.highWater()} + kGatherSlack + config_.ghostTableCapacity;
    if (s->indices.size() < 2 * n + 2 * kSplitSlack) {
      n += n / 4;
      s->candD2.resize(n), s->candIndex.resize(n), s->candIdOdo.resize(n), s->eligible.resize(n), s->buckets.resize(n);
      s->indices.resize(2 * n + 2 * kSplitSlack);
    }
    // Scored: the eligible candidates (ghostCap) and the held ghosts past the cap (at most the table).
    const size_t scored = size_t{config_.ghostCap} + config_.ghostTableCapacity;
    if (s->stale.size() < config_.ghostTableCapacity + 16) {
      s->scored.resize(scored), s->chosen.resize(scored);
      s->scores.resize(scored + kSplitSlack);
      s->lists.resize(2 * scored), s->keys.resize(scored + kSplitSlack);
      s->kept.resize(scored), s->words.resize(config_.ghostCap);
      s->removals.resize(config_.ghostTableCapacity), s->evicted.resize(config_.ghostTableCapacity);
      s->stale.resize(config_.ghostTableCapacity + 16);
      s->kindRecords.resize(size_t{kKindRecordBytes} * config_.ghostCap);
    }
    if (s->attributeSection.size() < kMaxPayloadBytes + kAttributeCopySlack && config_.attributeBytes > 0)
      s->attributeSection.resize(kMaxPayloadBytes + kAttributeCopySlack);
    s->lookup.reserve(store_.highWater());
    if (s->boostIds.size() < store_.highWater()) {
      size_t k = s->boostIds.size();
      s->boostIds.resize(std::min<size_t>(store_.capacity(), size_t{store_.highWater()} + store_.highWater() / 4 + 64));
      for (; k < s->boostIds.size(); ++k) s->boostIds[k] = uint32_t(k) ^ 1u;  // slot bits not k's: no id of slot k
    }
  }
}

void World::runPass(ThreadPool& pool) {
  auto t0 = std::chrono::steady_clock::now();
  reserveScratch(pool.size());  // done by prepareTick for the same thread count: nothing to allocate
  for (auto& s : scratch_) s->stats = TickStats{};
  const uint32_t n = static_cast<uint32_t>(viewers_.size());
  pool.parallelFor(n, kViewersPerChunk, [this, n](uint32_t b, uint32_t e, unsigned w) {
    Scratch& s = *scratch_[w];
    for (uint32_t i = b; i < e; ++i) {
      Viewer& v = *viewers_[i];
      // Two viewers ahead, their ghost tables; four ahead, the viewer records those addresses are in.
      if (i + 4 < n) {
        const char* ahead = reinterpret_cast<const char*>(viewers_[i + 4].get());
        for (size_t off = 0; off < sizeof(Viewer); off += 64) __builtin_prefetch(ahead + off);
      }
      if (i + 2 < n) viewers_[i + 2]->ghosts.prefetch(viewers_[i + 2]->ghostsBeforePass);
      switch (v.status) {
        case ViewerStatus::Due: serve(v, s); break;
        case ViewerStatus::NotDue: ++s.stats.skippedNotDue; break;
        case ViewerStatus::AvatarGone: ++s.stats.skippedAvatarGone; break;
        case ViewerStatus::OutsideRegion: ++s.stats.skippedOutsideRegion; break;
      }
      uint32_t* ix = packetIndex_.data() + size_t{3} * i;
      ix[0] = v.avatarId, ix[1] = uint32_t(v.outOffset), ix[2] = v.outLength;
    }
  });
  stats_ = TickStats{};
  for (size_t w = 0; w < pool.size(); ++w) stats_.add(scratch_[w]->stats);
  passMicros = microsSince(t0);
}

}  // namespace sightline
