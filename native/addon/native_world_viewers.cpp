// NativeWorld: adding, removing and changing viewers, and the changes to them queued while a pass
// runs (applied in call order when it ends).
#include "native_world.h"

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "codec.h"

namespace sightline::addon {

namespace {
// A number argument that must be an integer in [lo, hi]: ERR_SIGHTLINE_INVALID_VIEWER_OPTION
// naming `name` and `unit` otherwise.
uint32_t viewerOption(Napi::Env env, double v, const char* name, double lo, double hi, const char* unit) {
  if (!(v >= lo && v <= hi) || v != double(uint32_t(v)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_VIEWER_OPTION",
                     std::string(name) + " must be an integer between " + num(lo) + " and " + num(hi) + unit +
                         ", received " + num(v));
  return uint32_t(v);
}
}  // namespace

// addViewer(id, payloadBytes, sendPeriod, acks, viewRadiusRaw, groups, self, teleportRaw)
Napi::Value NativeWorld::AddViewer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  double payload = numberArg(info, 1, "payloadBytes"), period = numberArg(info, 2, "sendPeriod");
  const Config& c = world_->config();
  uint32_t minPayload = c.minPayloadBytes;
  viewerOption(env, payload, "payloadBytes", minPayload, kMaxPayloadBytes, "");
  viewerOption(env, period, "sendPeriod", 1, 65535, " ticks");
  bool acks = info.Length() > 3 && info[3].IsBoolean() && info[3].As<Napi::Boolean>().Value();
  double radius = info.Length() > 4 && info[4].IsNumber() ? info[4].As<Napi::Number>().DoubleValue() : 0;
  if (radius != 0) viewerOption(env, radius, "viewRadius (raw)", 1, double(c.viewRadiusRaw), " raw units");
  const uint32_t groups = info.Length() > 5 ? groupsArg(info, 5, "groups") : ~0u;
  const bool self = info.Length() > 6 && info[6].IsBoolean() && info[6].As<Napi::Boolean>().Value();
  const double teleport = info.Length() > 7 && info[7].IsNumber() ? info[7].As<Napi::Number>().DoubleValue() : 0;
  if (teleport != 0) viewerOption(env, teleport, "teleportDistance (raw)", 1, double(c.regionRaw), " raw units");
  ViewerOptions opts{uint32_t(payload), uint32_t(period), acks, int64_t(radius), groups, self, int64_t(teleport)};
  if (!running_) {
    // The pool threads' scratch first (it changes nothing the world holds), so that a world's
    // first tick does not allocate and first touch it.
    guarded(env, [&] { world_->reserveScratch(pool_->size()); world_->addViewer(id, opts); return 0; });
    reportMemorySoon(env);
    return env.Undefined();
  }
  guarded(env, [&] { return world_->entities().checkedSlot(id); });
  if (effectiveViewer(id) != nullptr)
    throw codedError(env, "ERR_SIGHTLINE_VIEWER_EXISTS",
                     "entity " + std::to_string(id) + " is already a viewer (one viewer per avatar)");
  guarded(env, [&] { World::checkOutputRoom(pendingOutputBytes() + opts.payloadBytes); return 0; });
  // Everything the add allocates is allocated now (the viewer, room in the world's lists and in
  // the queue), so that applying it when the pass ends cannot fail; out of memory here refuses it.
  guarded(env, [&] {
    std::unique_ptr<Viewer> v = world_->makeViewer(id, opts, /*avatarChecked=*/true, /*outputChecked=*/true);
    world_->reserveViewerAdds(pendingAdds_ + 1);
    pending_.reserve(pending_.size() + 1);
    Viewer* raw = v.get();
    pendingViewers_.try_emplace(id, nullptr).first->second = raw;  // the last step that may throw
    pending_.push_back(PendingOp{PendingOp::Add, id, std::move(v), {}});  // within capacity
    return 0;
  });
  ++pendingAdds_;
  pendingOutputDelta_ += opts.payloadBytes;
  ++pendingCountDelta_;
  return env.Undefined();
}

// The viewers' payload bytes together once the changes queued during this pass are applied.
uint64_t NativeWorld::pendingOutputBytes() const { return uint64_t(int64_t(world_->outputBytes()) + pendingOutputDelta_); }

Napi::Value NativeWorld::RemoveViewer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  if (!running_) {
    guarded(env, [&] { world_->removeViewer(id); return 0; });
    reportMemorySoon(env);
    return env.Undefined();
  }
  Viewer* v = effectiveViewer(id);
  if (v == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  const uint32_t payload = v->asked.payloadBytes;
  guarded(env, [&] {
    pending_.reserve(pending_.size() + 1);
    pendingViewers_.try_emplace(id, nullptr).first->second = nullptr;  // the last step that may throw
    pending_.push_back(PendingOp{PendingOp::Remove, id, nullptr, {}});  // within capacity
    return 0;
  });
  pendingOutputDelta_ -= payload;
  --pendingCountDelta_;
  return env.Undefined();
}

// changeViewer(id, what, sendPeriod, payloadBytes, viewRadiusRaw, groups, boostFactor, boostIds):
// the settings named in `what` (ViewerChange::Field bits); during a pass checked now and applied
// when it ends.
Napi::Value NativeWorld::ChangeViewer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  const uint32_t what = uint32_t(numberArg(info, 1, "what"));
  const Config& c = world_->config();
  ViewerChange change;
  change.what = what;
  if (what & ViewerChange::kSendPeriod)
    change.to.sendPeriod = viewerOption(env, numberArg(info, 2, "sendPeriod"), "sendPeriod", 1, 65535, " ticks");
  if (what & ViewerChange::kPayloadBytes)
    change.to.payloadBytes = viewerOption(env, numberArg(info, 3, "payloadBytes"), "payloadBytes", c.minPayloadBytes,
                                          kMaxPayloadBytes, "");
  if (what & ViewerChange::kViewRadius)
    change.to.viewRadiusRaw = viewerOption(env, numberArg(info, 4, "viewRadius"), "viewRadius (raw)", 1,
                                           double(c.viewRadiusRaw), " raw units");
  if (what & ViewerChange::kGroups) change.to.groups = groupsArg(info, 5, "groups");
  if (what & ViewerChange::kBoost) {
    change.to.boostFactor = viewerOption(env, numberArg(info, 6, "boost factor"), "boost factor", 1, kMaxBoostFactor, "");
    if (info.Length() <= 7 || !info[7].IsTypedArray() || info[7].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "the boost set must be a Uint32Array of entity ids");
    Napi::Uint32Array ids = info[7].As<Napi::Uint32Array>();
    if (ids.ElementLength() > kMaxBoosted)
      throw codedError(env, "ERR_SIGHTLINE_INVALID_VIEWER_OPTION", "a boost set holds at most " + std::to_string(kMaxBoosted) +
                                                                       " entities, received " + std::to_string(ids.ElementLength()));
    guarded(env, [&] { change.boost.assign(ids.Data(), ids.Data() + ids.ElementLength()); return 0; });
  }
  Viewer* v = running_ ? effectiveViewer(id) : (world_->hasViewer(id) ? &world_->viewerMutable(id) : nullptr);
  if (v == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  const uint32_t payloadBefore = v->asked.payloadBytes;
  if (!running_) {
    guarded(env, [&] {
      world_->prepareViewerChange(*v, change, world_->outputBytes());
      world_->applyViewerChange(*v, change);
      return 0;
    });
    reportMemorySoon(env);
    return env.Undefined();
  }
  guarded(env, [&] {
    pending_.reserve(pending_.size() + 1);  // first: prepareViewerChange records what it checked
    world_->prepareViewerChange(*v, change, pendingOutputBytes());
    pending_.push_back(PendingOp{PendingOp::Change, id, nullptr, std::move(change)});
    return 0;
  });
  pendingOutputDelta_ += int64_t(v->asked.payloadBytes) - int64_t(payloadBefore);
  return env.Undefined();
}

namespace {
// A typed array argument of the given type and, unless `length` is SIZE_MAX, that many elements:
// ERR_SIGHTLINE_INVALID_ARGUMENT naming `name` otherwise.
template <typename T>
T typedArg(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type type, const char* name, const char* typeName,
           size_t length) {
  if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != type)
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_ARGUMENT", std::string(name) + " must be a " + typeName);
  T a = info[i].As<T>();
  if (length != SIZE_MAX && a.ElementLength() != length)
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_ARGUMENT",
                     std::string(name) + " must have one element a viewer (" + std::to_string(length) + "), received " +
                         std::to_string(a.ElementLength()));
  return a;
}
}  // namespace

// changeViewers(ids: Uint32Array, what: Uint8Array, sendPeriod, payloadBytes, viewRadiusRaw:
// Float64Array): viewer ids[i] gets the settings named in what[i] (kSendPeriod | kPayloadBytes |
// kViewRadius), as changeViewer would, for i in order. Checked as a whole before anything changes:
// a throw leaves every viewer as it was. During a pass checked now and applied when it ends.
Napi::Value NativeWorld::ChangeViewers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint32Array ids = typedArg<Napi::Uint32Array>(info, 0, napi_uint32_array, "viewers", "Uint32Array", SIZE_MAX);
  const size_t n = ids.ElementLength();
  Napi::Uint8Array what = typedArg<Napi::Uint8Array>(info, 1, napi_uint8_array, "what", "Uint8Array", n);
  Napi::Float64Array period = typedArg<Napi::Float64Array>(info, 2, napi_float64_array, "sendPeriod", "Float64Array", n);
  Napi::Float64Array payload = typedArg<Napi::Float64Array>(info, 3, napi_float64_array, "payloadBytes", "Float64Array", n);
  Napi::Float64Array radius = typedArg<Napi::Float64Array>(info, 4, napi_float64_array, "viewRadius", "Float64Array", n);
  const Config& c = world_->config();
  constexpr uint32_t kFields = ViewerChange::kSendPeriod | ViewerChange::kPayloadBytes | ViewerChange::kViewRadius;
  std::vector<ViewerChange> changes;
  std::vector<Viewer*> viewers;
  guarded(env, [&] { changes.resize(n); viewers.resize(n); return 0; });
  // The arguments, each viewer's and each value's, before anything changes.
  // A value's check without building its name unless it fails (this loop runs once a viewer).
  auto value = [&](double v, size_t i, const char* name, double lo, double hi, const char* unit) {
    if (v >= lo && v <= hi && v == double(uint32_t(v))) return uint32_t(v);
    return viewerOption(env, v, (std::string(name) + "[" + std::to_string(i) + "]").c_str(), lo, hi, unit);
  };
  const double minPayload = c.minPayloadBytes;  // with fields or attributes more than header, reserve and a 12-byte record
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = what[i];
    if (w & ~kFields)
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT",
                       "what[" + std::to_string(i) + "] names settings this call does not change: " + std::to_string(w));
    ViewerChange& change = changes[i];
    change.what = w;
    if (w & ViewerChange::kSendPeriod) change.to.sendPeriod = value(period[i], i, "sendPeriod", 1, 65535, " ticks");
    if (w & ViewerChange::kPayloadBytes) change.to.payloadBytes = value(payload[i], i, "payloadBytes", minPayload, kMaxPayloadBytes, "");
    if (w & ViewerChange::kViewRadius)
      change.to.viewRadiusRaw = value(radius[i], i, "viewRadius (raw)", 1, double(c.viewRadiusRaw), " raw units");
    const uint32_t id = ids[i];
    Viewer* v = running_ ? effectiveViewer(id) : (world_->hasViewer(id) ? &world_->viewerMutable(id) : nullptr);
    if (v == nullptr)
      throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER",
                       "entity " + std::to_string(id) + " (viewers[" + std::to_string(i) + "]) is not a viewer");
    viewers[i] = v;
  }
  // Prepared in order (what each asks is checked against the settings the ones before it leave,
  // the output room against the payloads together so far), and the settings asked for put back
  // when one throws, so that nothing changes.
  std::vector<std::pair<ViewerSettings, uint32_t>> before;
  const uint64_t start = running_ ? pendingOutputBytes() : world_->outputBytes();
  uint64_t total = start;
  guarded(env, [&] {
    before.reserve(n);
    if (running_) pending_.reserve(pending_.size() + n);
    return 0;
  });
  guarded(env, [&] {
    try {
      for (size_t i = 0; i < n; ++i) {
        Viewer& v = *viewers[i];
        before.emplace_back(v.asked, v.askedLogUpdates);  // within capacity
        const uint32_t was = v.asked.payloadBytes;
        world_->prepareViewerChange(v, changes[i], total);
        total = total - was + v.asked.payloadBytes;
      }
    } catch (...) {
      for (size_t j = before.size(); j-- > 0;) viewers[j]->asked = before[j].first, viewers[j]->askedLogUpdates = before[j].second;
      throw;
    }
    return 0;
  });
  if (!running_) {
    for (size_t i = 0; i < n; ++i) world_->applyViewerChange(*viewers[i], changes[i]);
    reportMemorySoon(env);
    return env.Undefined();
  }
  for (size_t i = 0; i < n; ++i) pending_.push_back(PendingOp{PendingOp::Change, ids[i], nullptr, std::move(changes[i])});  // within capacity
  pendingOutputDelta_ += int64_t(total) - int64_t(start);
  return env.Undefined();
}

// servedSettingsOf(ids: Uint32Array, out: Float64Array of 3 × ids.length): out[3i .. 3i+2] =
// payloadBytes, sendPeriod, viewRadius (raw) of viewer ids[i], as servedSettingsInto gives them.
// A throw (an id not a viewer) may leave part of `out` written.
Napi::Value NativeWorld::ServedSettingsOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint32Array ids = typedArg<Napi::Uint32Array>(info, 0, napi_uint32_array, "viewers", "Uint32Array", SIZE_MAX);
  const size_t n = ids.ElementLength();
  Napi::Float64Array out = typedArg<Napi::Float64Array>(info, 1, napi_float64_array, "out", "Float64Array", SIZE_MAX);
  if (out.ElementLength() < 3 * n)
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "servedSettingsOf needs a Float64Array of 3 elements a viewer");
  for (size_t i = 0; i < n; ++i) {
    const uint32_t id = ids[i];
    const Viewer* v = running_ ? effectiveViewer(id) : (world_->hasViewer(id) ? &world_->viewer(id) : nullptr);
    if (v == nullptr)
      throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
    out[3 * i] = v->asked.payloadBytes;
    out[3 * i + 1] = v->asked.sendPeriod;
    out[3 * i + 2] = double(v->asked.viewRadiusRaw);
  }
  return env.Undefined();
}

// viewerSettings(id) -> { payloadBytes, sendPeriod, viewRadius (raw) }: as last asked for,
// changes queued during a pass included.
Napi::Value NativeWorld::ViewerSettingsOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  const Viewer* v = running_ ? effectiveViewer(id) : (world_->hasViewer(id) ? &world_->viewer(id) : nullptr);
  if (v == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  Napi::Object o = Napi::Object::New(env);
  o.Set("payloadBytes", Napi::Number::New(env, v->asked.payloadBytes));
  o.Set("sendPeriod", Napi::Number::New(env, v->asked.sendPeriod));
  o.Set("viewRadius", Napi::Number::New(env, double(v->asked.viewRadiusRaw)));
  o.Set("acks", Napi::Boolean::New(env, v->ackLog != nullptr));
  o.Set("groups", Napi::Number::New(env, v->asked.groups));
  o.Set("boostFactor", Napi::Number::New(env, v->asked.boostFactor));
  Napi::Uint32Array boost = Napi::Uint32Array::New(env, v->askedBoost.size());
  for (size_t i = 0; i < v->askedBoost.size(); ++i) boost[i] = v->askedBoost[i];
  o.Set("boost", boost);
  return o;
}

// servedSettingsInto(id, out: Float64Array of 3 or more) -> undefined: out[0..2] = payloadBytes,
// sendPeriod, viewRadius (raw), as viewerSettings gives them, with nothing allocated (load
// shedding reads every viewer's settings at each of its level changes).
Napi::Value NativeWorld::ServedSettingsInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[1].As<Napi::Float64Array>().ElementLength() < 3)
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "servedSettingsInto needs a Float64Array of at least 3 elements");
  const Viewer* v = running_ ? effectiveViewer(id) : (world_->hasViewer(id) ? &world_->viewer(id) : nullptr);
  if (v == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  Napi::Float64Array out = info[1].As<Napi::Float64Array>();
  out[0] = v->asked.payloadBytes;
  out[1] = v->asked.sendPeriod;
  out[2] = double(v->asked.viewRadiusRaw);
  return env.Undefined();
}

// teleportViewer(id): its next pass is a teleport (World::teleportViewer); during a pass too, on the
// viewer as it will be once the queued changes apply.
Napi::Value NativeWorld::TeleportViewer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  Viewer* v = effectiveViewer(id);
  if (v == nullptr)
    throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
  v->teleportAsked = true;
  return env.Undefined();
}

Napi::Value NativeWorld::HasViewer(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  return Napi::Boolean::New(info.Env(), effectiveViewer(id) != nullptr);
}

// Viewers once the pending changes are applied (each pending change was validated when asked for).
Napi::Value NativeWorld::ViewerCount(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(int64_t(world_->viewerCount()) + pendingCountDelta_));
}

// viewerIds(): every viewer's avatar id, in service order.
Napi::Value NativeWorld::ViewerIds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint32Array a = Napi::Uint32Array::New(env, world_->viewerCount());
  for (size_t i = 0; i < world_->viewerCount(); ++i) a[i] = world_->viewerAt(i).avatarId;
  return a;
}

// Applies the changes queued during the pass, in order. None allocates: an add's viewer and room
// were made when it was asked for, a change's larger log too, a removal frees. So none fails, and
// an add whose avatar was despawned meanwhile is applied all the same (the next tick skips it).
void NativeWorld::applyPending(Napi::Env env) {
  std::vector<PendingOp> ops;
  ops.swap(pending_);
  pendingViewers_.clear();
  pendingAdds_ = 0, pendingOutputDelta_ = 0, pendingCountDelta_ = 0;
  for (PendingOp& op : ops) {
    try {
      if (op.kind == PendingOp::Add) world_->adoptViewer(std::move(op.viewer));
      else if (op.kind == PendingOp::Remove) world_->removeViewer(op.id);
      else world_->applyViewerChange(world_->viewerMutable(op.id), op.change);
    } catch (const std::exception&) {
      // Unreachable (each change was validated in full when asked for); the others still apply.
    }
  }
  ops.clear();  // the viewers removed, and the arrays the changes replaced, are freed here
  reportMemory(env);
}

// The viewer `id` names once the pending changes are applied (a viewer added during the pass is
// its queued object), or null.
Viewer* NativeWorld::effectiveViewer(uint32_t id) {
  auto it = pendingViewers_.find(id);
  if (it != pendingViewers_.end()) return it->second;
  return world_->hasViewer(id) ? &world_->viewerMutable(id) : nullptr;
}

// Whether `id` names a viewer added during the pass (it has sent no packet yet).
bool NativeWorld::addedDuringPass(uint32_t id) {
  auto it = pendingViewers_.find(id);
  return it != pendingViewers_.end() && it->second != nullptr &&
         !(world_->hasViewer(id) && &world_->viewerMutable(id) == it->second);
}

}  // namespace sightline::addon
