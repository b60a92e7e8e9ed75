// NativeWorld: adding and removing viewers, and the changes to them queued while a pass runs.
#include "native_world.h"

#include <exception>
#include <string>

#include "args.h"
#include "codec.h"

namespace sightline::addon {

Napi::Value NativeWorld::AddViewer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  double payload = numberArg(info, 1, "payloadBytes"), period = numberArg(info, 2, "sendPeriod");
  const Config& c = world_->config();
  uint32_t minPayload = c.minPayloadBytes;
  if (!(payload >= minPayload && payload <= kMaxPayloadBytes) || payload != double(uint32_t(payload)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                     "payloadBytes must be an integer between " + std::to_string(minPayload) + " and " +
                         std::to_string(kMaxPayloadBytes) + ", received " + num(payload));
  if (!(period >= 1 && period <= 65535) || period != double(uint32_t(period)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                     "sendPeriod must be an integer between 1 and 65535 ticks, received " + num(period));
  bool acks = info.Length() > 3 && info[3].IsBoolean() && info[3].As<Napi::Boolean>().Value();
  ViewerOptions opts{uint32_t(payload), uint32_t(period), acks};
  if (!running_) {
    guarded(env, [&] { world_->addViewer(id, opts); return 0; });
    return env.Undefined();
  }
  guarded(env, [&] { return world_->entities().checkedSlot(id); });
  if (effectiveHasViewer(id))
    throw codedError(env, "ERR_SIGHTLINE_VIEWER_EXISTS",
                     "entity " + std::to_string(id) + " is already a viewer (one viewer per avatar)");
  guarded(env, [&] { World::checkOutputRoom(pendingOutputBytes() + opts.payloadBytes); return 0; });
  // Everything the add allocates is allocated now (the viewer and room in the world's lists), so
  // that applying it when the pass ends cannot fail; out of memory here refuses the add.
  guarded(env, [&] {
    std::unique_ptr<Viewer> v = world_->makeViewer(id, opts, /*avatarChecked=*/true, /*outputChecked=*/true);
    uint32_t adds = 1;
    for (const PendingOp& op : pending_) adds += op.kind == PendingOp::Add;
    world_->reserveViewerAdds(adds);
    pending_.push_back(PendingOp{PendingOp::Add, id, opts, std::move(v)});
    return 0;
  });
  return env.Undefined();
}

// The viewers' payload bytes together once the changes queued during this pass are applied.
uint64_t NativeWorld::pendingOutputBytes() const {
  uint64_t total = world_->outputBytes();
  for (size_t i = 0; i < pending_.size(); ++i) {
    const PendingOp& op = pending_[i];
    if (op.kind == PendingOp::Add) {
      total += op.opts.payloadBytes;
    } else if (op.kind == PendingOp::Remove) {
      // The viewer removed: the latest add of it queued before, else the world's (a removal is
      // checked when asked for, so one of them exists).
      size_t j = i;
      while (j > 0 && !(pending_[j - 1].id == op.id && pending_[j - 1].kind == PendingOp::Add)) --j;
      total -= j > 0 ? pending_[j - 1].opts.payloadBytes : world_->viewer(op.id).payloadBytes;
    }
  }
  return total;
}

Napi::Value NativeWorld::RemoveViewer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  if (!running_) {
    guarded(env, [&] { world_->removeViewer(id); return 0; });
    return env.Undefined();
  }
  if (!effectiveHasViewer(id))
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  guarded(env, [&] { pending_.push_back(PendingOp{PendingOp::Remove, id, {}, nullptr}); return 0; });
  return env.Undefined();
}

Napi::Value NativeWorld::HasViewer(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  return Napi::Boolean::New(info.Env(), effectiveHasViewer(id));
}

// Viewers once the pending changes are applied (each pending change was validated when asked for).
Napi::Value NativeWorld::ViewerCount(const Napi::CallbackInfo& info) {
  double n = double(world_->viewerCount());
  for (const PendingOp& op : pending_) n += op.kind == PendingOp::Add ? 1 : op.kind == PendingOp::Remove ? -1 : 0;
  return Napi::Number::New(info.Env(), n);
}

// viewerIds(): every viewer's avatar id, in service order.
Napi::Value NativeWorld::ViewerIds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint32Array a = Napi::Uint32Array::New(env, world_->viewerCount());
  for (size_t i = 0; i < world_->viewerCount(); ++i) a[i] = world_->viewerAt(i).avatarId;
  return a;
}

// Applies the changes queued during the pass, in order. None allocates: an add's viewer and room
// were made when it was asked for, a removal frees. So none fails, and an add whose avatar was despawned meanwhile is applied all the same
// (the next tick skips it).
void NativeWorld::applyPending(Napi::Env env) {
  std::vector<PendingOp> ops;
  ops.swap(pending_);
  for (PendingOp& op : ops) {
    try {
      if (op.kind == PendingOp::Add) world_->adoptViewer(std::move(op.viewer));
      else world_->removeViewer(op.id);
    } catch (const std::exception&) {
      // Unreachable (each change was validated in full when asked for); the others still apply.
    }
  }
}

// Whether viewer `id` (one once the pending changes are applied) acknowledges packets.
bool NativeWorld::effectiveAcks(uint32_t id) const {
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
    if (it->id == id && it->kind == PendingOp::Add) return it->opts.acks;
  return world_->hasViewer(id) && world_->viewer(id).ackLog != nullptr;
}

// Whether `id` is a viewer once the pending changes are applied.
bool NativeWorld::effectiveHasViewer(uint32_t id) const {
  bool has = world_->hasViewer(id);
  for (const PendingOp& op : pending_)
    if (op.id == id) has = op.kind == PendingOp::Add;
  return has;
}

}  // namespace sightline::addon
