// NativeWorld's class definition, construction (entity memory shared with JavaScript), close(), and
// the checks its methods share.
#include "native_world.h"

#include <algorithm>
#include <string>
#include <system_error>

#include "args.h"
#include "buffers.h"
#include "config_object.h"

namespace sightline::addon {

Napi::Function NativeWorld::Init(Napi::Env env) {
  return DefineClass(env, "NativeWorld",
                     {
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Spawn>>("spawn"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Despawn>>("despawn"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SlotOf>>("slotOf"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::IsLive>>("isLive"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Positions>>("positions"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Fields>>("fields"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Odometer>>("odometer"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SetGroups>>("setGroups"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SetPriority>>("setPriority"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::EntityInterest>>("entityInterest"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SetKind>>("setKind"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::KindOf>>("kindOf"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SetAttributes>>("setAttributes"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Attributes>>("attributes"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::AddViewer>>("addViewer"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::RemoveViewer>>("removeViewer"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ChangeViewer>>("changeViewer"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ViewerSettingsOf>>("viewerSettings"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ServedSettingsInto>>("servedSettingsInto"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ChangeViewers>>("changeViewers"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ServedSettingsOf>>("servedSettingsOf"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::HasViewer>>("hasViewer"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::TeleportViewer>>("teleportViewer"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Acknowledge>>("acknowledge"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::AckStats>>("ackStats"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Emit>>("emit"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Holders>>("holders"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ViewerIds>>("viewerIds"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::EventStats>>("eventStats"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::ViewerCount>>("viewerCount"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Tick>>("tick"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::RebuildSnapshot>>("rebuildSnapshot"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SnapshotInfo>>("snapshotInfo"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Gather>>("gather"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Ghosts>>("ghosts"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::Info>>("info"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::SetCaps>>("setCaps"),
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::OutputViews>>("outputViews"),
#if SIGHTLINE_NATIVE_UDP
                         InstanceMethod<&NativeWorld::Open<&NativeWorld::AttachTransport>>("attachTransport"),
#endif
                         InstanceMethod<&NativeWorld::Close>("close"),
                     });
}

NativeWorld::NativeWorld(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeWorld>(info) {
  Napi::Env env = info.Env();
  data_ = env.GetInstanceData<AddonData>();
  ConfigInput in = configFromObject(env, info.Length() > 0 ? info[0] : env.Undefined());
  double capacity = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : 65536;
  double threads = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().DoubleValue() : 0;
  bool tryExternal = !(info.Length() > 3 && info[3].IsBoolean() && !info[3].As<Napi::Boolean>().Value());
  bool recordGhostPositions = info.Length() > 4 && info[4].IsBoolean() && info[4].As<Napi::Boolean>().Value();
  if (!(capacity >= 1 && capacity <= kMaxCapacity) || capacity != double(uint32_t(capacity)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_CAPACITY",
                     "capacity must be an integer between 1 and " + std::to_string(kMaxCapacity) +
                         ", received " + num(capacity));
  if (!(threads >= 0 && threads <= 256) || threads != double(uint32_t(threads)))
    throw codedError(env, "ERR_SIGHTLINE_INVALID_THREADS",
                     "threads must be an integer between 0 (all cores) and 256, received " + num(threads));
  threads_ = uint32_t(threads);
  guarded(env, [&] {
    Config c = buildConfig(in);
    world_ = std::make_unique<World>(c, uint32_t(capacity), recordGhostPositions);
    return 0;
  });
  try {
    pool_ = data_->pool(threads_);
  } catch (const std::system_error& e) {
    throw codedError(env, "ERR_SIGHTLINE_THREADS_UNAVAILABLE",
                     "could not start " + std::to_string(threads_) + " pass threads: " + e.what());
  }

  // Entity positions: external ArrayBuffers over engine memory, or V8 buffers the engine adopts.
  EntityStore& st = world_->entities();
  size_t bytes = size_t(st.capacity()) * sizeof(int32_t);
  Napi::Object pos = Napi::Object::New(env);
  Napi::Value ax, ay, az;
  if (tryExternal) {
    std::shared_ptr<void> owner = st.memoryOwner();
    ax = externalBuffer(env, st.x(), bytes, owner);
    if (!ax.IsEmpty()) ay = externalBuffer(env, st.y(), bytes, owner), az = externalBuffer(env, st.z(), bytes, owner);
  }
  external_ = !ax.IsEmpty() && !ay.IsEmpty() && !az.IsEmpty();
  if (!external_) {
    Napi::ArrayBuffer bx = Napi::ArrayBuffer::New(env, bytes), by = Napi::ArrayBuffer::New(env, bytes),
                     bz = Napi::ArrayBuffer::New(env, bytes);
    st.useMemory(static_cast<int32_t*>(bx.Data()), static_cast<int32_t*>(by.Data()),
                 static_cast<int32_t*>(bz.Data()));
    ax = bx, ay = by, az = bz;
    adopted_[0] = Napi::Persistent(bx), adopted_[1] = Napi::Persistent(by), adopted_[2] = Napi::Persistent(bz);
  }
  pos.Set("x", Napi::Int32Array::New(env, st.capacity(), ax.As<Napi::ArrayBuffer>(), 0));
  pos.Set("y", Napi::Int32Array::New(env, st.capacity(), ay.As<Napi::ArrayBuffer>(), 0));
  pos.Set("z", Napi::Int32Array::New(env, st.capacity(), az.As<Napi::ArrayBuffer>(), 0));
  pos.Set("external", Napi::Boolean::New(env, external_));
  positions_ = Napi::Persistent(pos);

  // Fast fields: one block of fieldCount x capacity Int32 values, an Int32Array per field over it,
  // external like the positions (or adopted, in the fallback).
  Napi::Object fields = Napi::Object::New(env);
  if (st.fieldCount() > 0) {
    const size_t fieldBytes = size_t(st.fieldCount()) * bytes;
    Napi::Value block;
    if (external_) block = externalBuffer(env, st.fieldValues(), fieldBytes, st.fieldMemoryOwner());
    if (block.IsEmpty()) {
      Napi::ArrayBuffer b = Napi::ArrayBuffer::New(env, fieldBytes);
      st.useFieldMemory(static_cast<int32_t*>(b.Data()));
      adopted_[3] = Napi::Persistent(b);
      block = b;
    }
    const auto& specs = world_->config().fields;
    for (size_t k = 0; k < specs.size(); ++k)
      fields.Set(specs[k].name, Napi::Int32Array::New(env, st.capacity(), block.As<Napi::ArrayBuffer>(), k * bytes));
  }
  fields_ = Napi::Persistent(fields);
  reportMemory(env);
}

// A World collected without close(): what was reported goes back.
NativeWorld::~NativeWorld() { releaseMemoryReport(Env()); }

void NativeWorld::reportMemory(Napi::Env env) {
  if (!world_) return;
  unreported_ = 0;
  const int64_t now = int64_t(world_->memoryBytes());
  if (now == reportedBytes_) return;
  int64_t total = 0;
  if (napi_adjust_external_memory(env, now - reportedBytes_, &total) == napi_ok) reportedBytes_ = now;
}

// Each tick reports in full; between ticks a report follows every max(64, viewers / 16) viewer
// changes, so a world dropped without close() has at most that many viewers' memory unreported,
// and a change costs O(16) viewers' sums on average instead of O(viewers).
void NativeWorld::reportMemorySoon(Napi::Env env) {
  if (!world_) return;
  if (++unreported_ >= std::max<uint64_t>(64, world_->viewerCount() / 16)) reportMemory(env);
}

void NativeWorld::releaseMemoryReport(Napi::Env env) {
  if (reportedBytes_ == 0) return;
  int64_t total = 0;
  napi_adjust_external_memory(env, -reportedBytes_, &total);
  reportedBytes_ = 0;
}

// close(): releases the engine (entities, viewers and ghost tables, snapshot) now rather than
// when the object is collected. Memory JavaScript still holds views of (positions, the packets'
// buffers) goes with the last view. Not while a tick runs; idempotent.
Napi::Value NativeWorld::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!world_) return env.Undefined();
  requireIdle(env, "close()");
  releaseMemoryReport(env);
  pending_.clear();
  pendingViewers_.clear();
  pendingAdds_ = 0, pendingOutputDelta_ = 0, pendingCountDelta_ = 0;
  for (Slot& slot : out_) slot = Slot{};
  positions_.Reset();
  fields_.Reset();
  for (auto& a : adopted_) a.Reset();
#if SIGHTLINE_NATIVE_UDP
  if (transport_) transport_->setAttached(false);
  transport_.reset();
#endif
  world_.reset();
  pool_.reset();
  return env.Undefined();
}

// The adopted position buffers (externalBuffers false) hold the engine's entity memory: one
// detached (moved to another owner) takes it away, and the engine may no longer touch it. The
// package marks them untransferable, so postMessage and structuredClone copy them instead.
void NativeWorld::requirePositions(Napi::Env env) {
  for (auto& a : adopted_)
    if (!a.IsEmpty() && a.Value().IsDetached())
      throw codedError(env, "ERR_SIGHTLINE_POSITIONS_DETACHED",
                       "the world's position buffers (externalBuffers: false) were detached, and the entity memory "
                       "with them: this world can no longer be used");
}

void NativeWorld::requireIdle(Napi::Env env, const char* what) {
  if (running_)
    throw codedError(env, "ERR_SIGHTLINE_TICK_IN_PROGRESS",
                     std::string(what) + " cannot run while a tick's pass is running; await the tick first");
}

}  // namespace sightline::addon
