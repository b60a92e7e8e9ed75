// Node-API glue: converts arguments, converts core errors to coded JavaScript errors, runs the pass
// off the JavaScript thread. No engine logic lives here.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "config.h"
#include "errors.h"
#include "gather.h"
#include "simd.h"
#include "subscription.h"
#include "thread_pool.h"
#include "world.h"

using namespace sightline;

// Set to 1 by the profile-guided build (binding.gyp's sightline_pgo=use; scripts/build-pgo.mjs).
#ifndef SIGHTLINE_PGO
#define SIGHTLINE_PGO 0
#endif

namespace {

// ---------------------------------------------------------------------------------------------
// Per-environment state: thread pools (one per thread count, shared by that environment's worlds)
// and the count of passes in flight. Pools are joined in an environment cleanup hook, after any
// pass still running has finished, so worker_threads can come and go.
struct AddonData {
  std::mutex m;
  std::condition_variable idle;
  int inFlight = 0;
  // One pool per thread count, shared by the worlds that use it and freed with the last of them.
  std::map<unsigned, std::weak_ptr<ThreadPool>> pools;

  std::shared_ptr<ThreadPool> pool(unsigned threads) {
    unsigned n = resolveThreadCount(threads, std::thread::hardware_concurrency());
    std::lock_guard<std::mutex> lock(m);
    for (auto it = pools.begin(); it != pools.end();) it = it->second.expired() ? pools.erase(it) : std::next(it);
    std::shared_ptr<ThreadPool> p = pools[n].lock();
    if (!p) {
      p = std::make_shared<ThreadPool>(n);
      pools[n] = p;
    }
    return p;
  }
  void begin() {
    std::lock_guard<std::mutex> lock(m);
    ++inFlight;
  }
  void end() {
    std::lock_guard<std::mutex> lock(m);
    if (--inFlight == 0) idle.notify_all();
  }
  static void cleanup(void* arg) {
    auto* self = static_cast<AddonData*>(arg);
    std::unique_lock<std::mutex> lock(self->m);
    self->idle.wait(lock, [&] { return self->inFlight == 0; });
    auto pools = std::move(self->pools);
    lock.unlock();
    // Join the workers now; the worlds still holding a pool are finalized later in the teardown.
    for (auto& [n, weak] : pools)
      if (auto p = weak.lock()) p->shutdown();
  }
};

Napi::Error codedError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

std::string num(double v) { return formatNumber(v); }

// What a non-number argument was, for messages.
std::string kindOf(const Napi::Value& v) {
  if (v.IsUndefined()) return "undefined";
  if (v.IsNull()) return "null";
  if (v.IsString()) return "a string";
  if (v.IsBoolean()) return "a boolean";
  if (v.IsArray()) return "an array";
  if (v.IsFunction()) return "a function";
  if (v.IsObject()) return "an object";
  if (v.IsSymbol()) return "a symbol";
#if NAPI_VERSION > 5
  if (v.IsBigInt()) return "a bigint";
#endif
  return "a non-number";
}

[[noreturn]] void rethrow(Napi::Env env, const CoreError& e) { throw codedError(env, e.code(), e.what()); }

template <typename F>
auto guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CoreError& e) {
    rethrow(env, e);
  } catch (const std::bad_alloc&) {
    throw codedError(env, "ERR_SIGHTLINE_OUT_OF_MEMORY", "sightline could not allocate memory");
  }
}

double numberArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_ARGUMENT",
                     std::string(name) + " must be a number, received " +
                         (info.Length() <= i ? std::string("nothing") : kindOf(info[i])));
  return info[i].As<Napi::Number>().DoubleValue();
}

uint32_t idArg(const Napi::CallbackInfo& info, size_t i) {
  double v = numberArg(info, i, "entity id");
  if (!(v >= 0 && v <= 4294967295.0) || v != static_cast<double>(static_cast<uint32_t>(v)))
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_ENTITY",
                     "entity id must be an integer between 0 and 4294967295, received " + num(v));
  return static_cast<uint32_t>(v);
}

int32_t rawArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  double v = numberArg(info, i, name);
  if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != static_cast<double>(static_cast<int64_t>(v)))
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_POSITION",
                     std::string(name) + " must be an integer raw coordinate within Int32, received " +
                         num(v));
  return static_cast<int32_t>(v);
}

ConfigInput configFromObject(Napi::Env env, const Napi::Value& value) {
  ConfigInput in;
  if (value.IsUndefined()) return in;
  if (!value.IsObject()) throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "config input must be an object");
  Napi::Object o = value.As<Napi::Object>();
  // An ordinary object (Object.prototype.toString says so): an array, a Map, a Date or a boxed
  // number keeps its data elsewhere than in own fields, which would then be silently ignored.
  Napi::Function tag = env.Global().Get("Object").As<Napi::Object>().Get("prototype").As<Napi::Object>().Get("toString").As<Napi::Function>();
  const std::string kind = tag.Call(o, {}).As<Napi::String>().Utf8Value();
  if (kind != "[object Object]")
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "config input must be an ordinary object, not " + kind);
  // Own properties only: a field inherited through the prototype chain is refused.
  auto own = [&](const char* key) {
    if (o.HasOwnProperty(key)) return true;
    if (o.Has(key))
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT",
                       std::string(key) + " must be an own property of the config input, not inherited");
    return false;
  };
  auto num = [&](const char* key, double& field) {
    if (!own(key)) return;
    Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return;
    if (!v.IsNumber())
      throw codedError(env, "ERR_SIGHTLINE_CONFIG_NOT_FINITE", std::string(key) + " must be a finite number");
    field = v.As<Napi::Number>().DoubleValue();
  };
  num("regionSize", in.regionSize);
  num("verticalExtent", in.verticalExtent);
  num("viewRadius", in.viewRadius);
  num("maxSpeed", in.maxSpeed);
  num("tickHz", in.tickHz);
  num("cellSize", in.cellSize);
  num("payloadBytes", in.payloadBytes);
  num("eventReserveBytes", in.eventReserveBytes);
  num("walkCap", in.walkCap);
  num("ghostCap", in.ghostCap);
  num("graceTicks", in.graceTicks);
  num("denseCellThreshold", in.denseCellThreshold);
  num("subGridDivisions", in.subGridDivisions);
  num("newDrift", in.newDrift);
  Napi::Value w = own("bandWeights") ? o.Get("bandWeights") : env.Undefined();
  if (!w.IsUndefined() && !w.IsNull()) {
    // An array or a typed array (a BigInt64Array's entries are not numbers: refused below).
    if (!w.IsArray() && !w.IsTypedArray())
      throw codedError(env, "ERR_SIGHTLINE_CONFIG_OUT_OF_RANGE", "bandWeights must be an array or typed array of 64 integers");
    Napi::Object a = w.As<Napi::Object>();
    const size_t length = w.IsArray() ? w.As<Napi::Array>().Length() : w.As<Napi::TypedArray>().ElementLength();
    for (uint32_t i = 0; i < length; ++i) {
      Napi::Value e = a.Get(i);
      if (!e.IsNumber())
        throw codedError(env, "ERR_SIGHTLINE_CONFIG_NOT_FINITE", "bandWeights[" + std::to_string(i) + "] must be a number");
      in.bandWeights.push_back(e.As<Napi::Number>().DoubleValue());
    }
  }
  return in;
}

Napi::Object configToObject(Napi::Env env, const Config& c) {
  Napi::Object o = Napi::Object::New(env);
  auto set = [&](const char* k, double v) { o.Set(k, Napi::Number::New(env, v)); };
  set("regionRaw", double(c.regionRaw));
  set("regionShift", c.regionShift);
  set("verticalRaw", double(c.verticalRaw));
  set("zBits", c.zBits);
  set("viewRadiusRaw", double(c.viewRadiusRaw));
  set("cellRaw", double(c.cellRaw));
  set("cellShift", c.cellShift);
  set("cellsPerAxis", c.cellsPerAxis);
  set("cellCount", c.cellCount);
  set("cellRadius", c.cellRadius);
  set("maxMovePerTickRaw", double(c.maxMovePerTickRaw));
  set("payloadBytes", c.payloadBytes);
  set("eventReserveBytes", c.eventReserveBytes);
  set("slotsPerPacket", c.slotsPerPacket);
  set("walkCap", c.walkCap);
  set("ghostCap", c.ghostCap);
  set("ghostTableCapacity", c.ghostTableCapacity);
  set("graceTicks", c.graceTicks);
  set("denseCellThreshold", c.denseCellThreshold);
  set("subGridDivisions", c.subGridDivisions);
  set("subShift", c.subShift);
  set("newDriftRaw", c.newDrift);
  set("quantShift", c.quantShift);
  set("protocolHash", c.protocolHash);
  Napi::Array w = Napi::Array::New(env, kBandCount);
  for (int b = 0; b < kBandCount; ++b) w.Set(uint32_t(b), Napi::Number::New(env, c.bandWeights[b]));
  o.Set("bandWeights", w);
  return o;
}

Napi::Value BuildConfig(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ConfigInput in = configFromObject(env, info.Length() > 0 ? info[0] : env.Undefined());
  return guarded(env, [&] { return configToObject(env, buildConfig(in)); });
}

// Subscription helpers, reachable from TypeScript for tests and tools.
Napi::Value boxToValue(Napi::Env env, const Subscription& b) {
  if (b.empty()) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("x0", b.x0), o.Set("x1", b.x1), o.Set("y0", b.y0), o.Set("y1", b.y1);
  return o;
}

Subscription boxArg(const Napi::CallbackInfo& info, size_t i) {
  Subscription b;
  if (info.Length() <= i || info[i].IsNull() || info[i].IsUndefined()) return b;
  Napi::Object o = info[i].As<Napi::Object>();
  b.x0 = o.Get("x0").As<Napi::Number>().Int32Value(), b.x1 = o.Get("x1").As<Napi::Number>().Int32Value();
  b.y0 = o.Get("y0").As<Napi::Number>().Int32Value(), b.y1 = o.Get("y1").As<Napi::Number>().Int32Value();
  return b;
}

// cellOf(raw, cellShift): floor(raw / 2^cellShift).
Napi::Value CellOf(const Napi::CallbackInfo& info) {
  double raw = numberArg(info, 0, "raw"), shift = numberArg(info, 1, "cellShift");
  return Napi::Number::New(info.Env(), double(cellOf(int64_t(raw), int(shift))));
}

// subscriptionBox(cx, cy, cellRadius, cellsPerAxis) -> {x0, x1, y0, y1} (inclusive) or null.
Napi::Value SubscriptionBox(const Napi::CallbackInfo& info) {
  int64_t cx = int64_t(numberArg(info, 0, "cx")), cy = int64_t(numberArg(info, 1, "cy"));
  uint32_t r = uint32_t(numberArg(info, 2, "cellRadius")), n = uint32_t(numberArg(info, 3, "cellsPerAxis"));
  return boxToValue(info.Env(), subscriptionBox(cx, cy, r, n));
}

// subscriptionDiff(prev, next) -> { entered: [x, y, ...], left: [x, y, ...] } (flat cell pairs).
Napi::Value SubscriptionDiff(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Subscription prev = boxArg(info, 0), next = boxArg(info, 1);
  std::vector<int32_t> entered, left;
  subscriptionDiff(
      prev, next, [&](int32_t x, int32_t y) { entered.push_back(x), entered.push_back(y); },
      [&](int32_t x, int32_t y) { left.push_back(x), left.push_back(y); });
  auto arr = [&](const std::vector<int32_t>& v) {
    Napi::Int32Array a = Napi::Int32Array::New(env, v.size());
    for (size_t i = 0; i < v.size(); ++i) a[i] = v[i];
    return a;
  };
  Napi::Object o = Napi::Object::New(env);
  o.Set("entered", arr(entered)), o.Set("left", arr(left));
  return o;
}

// An ArrayBuffer over native memory: external where the runtime allows it, else empty (the caller
// falls back to a V8-allocated buffer). The buffer holds `owner` until it is collected, so the
// memory outlives the World while JavaScript can still reach it.
Napi::Value externalBuffer(Napi::Env env, void* data, size_t bytes, const std::shared_ptr<void>& owner) {
  napi_value ab;
  // The finalizer releases the hint. Node calls it itself when it refuses the buffer for its size
  // (after which the hint is gone), but not when the runtime allows no external buffers at all:
  // `finalized` tells the two apart.
  struct Hint {
    std::shared_ptr<void> owner;
    std::shared_ptr<bool> finalized;
  };
  auto finalized = std::make_shared<bool>(false);
  auto* hint = new Hint{owner, finalized};
  napi_status st = napi_create_external_arraybuffer(
      env, data, bytes,
      [](napi_env, void*, void* h) {
        auto* hh = static_cast<Hint*>(h);
        *hh->finalized = true;
        delete hh;
      },
      hint, &ab);
  if (st != napi_ok) {
    if (!*finalized) delete hint;
    const napi_extended_error_info* info = nullptr;
    napi_get_last_error_info(env, &info);
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value ignored;
      napi_get_and_clear_last_exception(env, &ignored);
    }
    return Napi::Value();
  }
  return Napi::Value(env, ab);
}

class NativeWorld;

// The fields of a tick's metadata (finishTick), in order: the tick, the packets, the generation of
// the output views, then the stats. Exported as `tickMetaFields`; the package checks its own list
// against it when it loads.
constexpr const char* kTickMetaFields[] = {
    "tick", "count", "views", "served", "skippedNotDue", "skippedAvatarGone", "skippedOutsideRegion", "candidates",
    "examined", "eligible", "records", "newGhosts", "despawns", "bytes", "ghostTableFull", "pressureEvictions",
    "subscriptionChanges", "events", "eventBytes", "entities", "outsideRegion", "denseCells", "odometerMicros",
    "snapshotMicros", "passMicros",
};

// ---------------------------------------------------------------------------------------------
class PassWorker : public Napi::AsyncWorker {
 public:
  PassWorker(Napi::Env env, NativeWorld* owner, Napi::Object self, World& world, std::shared_ptr<ThreadPool> pool,
             AddonData* data)
      : Napi::AsyncWorker(env, "sightline.pass"),
        deferred_(Napi::Promise::Deferred::New(env)),
        owner_(owner),
        world_(world),
        pool_(std::move(pool)),
        data_(data) {
    self_ = Napi::Persistent(self);
  }
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      world_.runPass(*pool_);
    } catch (const CoreError& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::exception& e) {
      code_ = "ERR_SIGHTLINE_INTERNAL";
      SetError(e.what());
    }
    // The pool is no longer in use: an environment cleanup may join it from here on.
    data_->end();
  }
  void OnOK() override;
  void OnError(const Napi::Error& e) override;

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference self_;
  NativeWorld* owner_;
  World& world_;
  std::shared_ptr<ThreadPool> pool_;
  AddonData* data_;
  std::string code_;
};

class NativeWorld : public Napi::ObjectWrap<NativeWorld> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "NativeWorld",
                       {
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::Spawn>>("spawn"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::Despawn>>("despawn"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::SlotOf>>("slotOf"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::IsLive>>("isLive"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::Positions>>("positions"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::Odometer>>("odometer"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::AddViewer>>("addViewer"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::RemoveViewer>>("removeViewer"),
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::HasViewer>>("hasViewer"),
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
                           InstanceMethod<&NativeWorld::Open<&NativeWorld::OutputViews>>("outputViews"),
                           InstanceMethod<&NativeWorld::Close>("close"),
                       });
  }

  // Method M, on a world not closed (close() released the engine): ERR_SIGHTLINE_WORLD_CLOSED.
  template <Napi::Value (NativeWorld::*M)(const Napi::CallbackInfo&)>
  Napi::Value Open(const Napi::CallbackInfo& info) {
    if (!world_) throw codedError(info.Env(), "ERR_SIGHTLINE_WORLD_CLOSED", "this world was closed");
    return (this->*M)(info);
  }

  // close(): releases the engine (entities, viewers and ghost tables, snapshot) now rather than
  // when the object is collected. Memory JavaScript still holds views of (positions, the packets'
  // buffers) goes with the last view. Not while a tick runs; idempotent.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!world_) return env.Undefined();
    requireIdle(env, "close()");
    pending_.clear();
    for (Slot& slot : out_) slot = Slot{};
    positions_.Reset();
    for (auto& a : adopted_) a.Reset();
    world_.reset();
    pool_.reset();
    return env.Undefined();
  }

  NativeWorld(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeWorld>(info) {
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
  }

  // Called by PassWorker on the JavaScript thread when the pass is done.
  // Called on the JavaScript thread when the pass is done. Returns the tick's metadata, a
  // Float64Array in kTickMetaFields order, reused every other tick: building a result object
  // through Node-API costs tens of microseconds here (the pass has just taken both cores' caches),
  // so the package reads these numbers and builds the objects in JavaScript. The buffer and the
  // index come from outputViews() when the metadata's `views` generation says they changed.
  // The JavaScript objects the next tick's result needs, made before the tick starts (Tick), so
  // that finishing it allocates nothing: the view of the output buffer `out` (re-created only when
  // the block changed; in the fallback, a V8 buffer the packets are copied into, also when the one
  // made before was detached: it is the caller's now), the packet index for `viewers` and the
  // metadata array.
  void prepareSlot(Napi::Env env, unsigned which, const std::shared_ptr<OutputBlock>& out, size_t viewers) {
    Slot& slot = out_[which];
    if (slot.buffer.IsEmpty() || slot.data != out->data.get() || slot.size < out->size || slot.buffer.Value().IsDetached()) {
      Napi::Value ab;
      if (external_) ab = externalBuffer(env, out->data.get(), out->size, out);
      if (ab.IsEmpty()) {
        Napi::ArrayBuffer v8 = Napi::ArrayBuffer::New(env, out->size);
        ab = v8;
        slot.copy = true;
      } else {
        slot.copy = false;
      }
      slot.buffer = Napi::Persistent(ab.As<Napi::ArrayBuffer>());
      slot.data = out->data.get();
      slot.size = out->size;
      ++slot.views;
    }
    if (slot.index.IsEmpty() || slot.indexCap < viewers * 3) {
      slot.indexCap = viewers * 3 + 64;
      slot.index = Napi::Persistent(Napi::Uint32Array::New(env, slot.indexCap));
      slot.indexData = slot.index.Value().Data();
      ++slot.views;
    }
    if (slot.meta.IsEmpty()) {
      slot.meta = Napi::Persistent(Napi::Float64Array::New(env, std::size(kTickMetaFields)));
      slot.metaData = slot.meta.Value().Data();
    }
  }

  // The tick's metadata, with its packets listed in the slot prepared for it; then the viewer
  // changes queued during the pass. Allocates nothing.
  Napi::Value finishTick(Napi::Env env) {
    running_ = false;
    World& w = *world_;
    unsigned which = w.tick() & 1;
    const std::shared_ptr<OutputBlock>& out = w.outputBuffer(which);
    Slot& slot = out_[which];
    const size_t size = w.outputSize(), nv = w.viewerCount();
    if (slot.data != out->data.get() || slot.size < size || slot.indexCap < nv * 3 || slot.meta.IsEmpty()) {
      applyPending(env);  // unreachable: Tick prepared the slot for this block and these viewers
      throw std::logic_error("the output slot was not prepared for this tick");
    }
    // A buffer detached while the pass ran (ArrayBuffer.prototype.transfer, refused by untransferable
    // buffers where the runtime honours the mark): made again, the one allocation of this rare case.
    if (slot.buffer.Value().IsDetached()) {
      try {
        slot.buffer.Reset();
        prepareSlot(env, which, out, nv);
      } catch (...) {
        applyPending(env);
        throw;
      }
    }
    if (slot.copy) std::memcpy(slot.buffer.Value().Data(), out->data.get(), size);
    uint32_t* ix = slot.indexData;
    uint32_t count = 0;
    const uint32_t* all = w.packetIndex();
    const char* bytes = reinterpret_cast<const char*>(slot.copy ? slot.buffer.Value().Data() : out->data.get());
    for (size_t i = 0; i < nv; ++i) {
      const uint32_t* e = all + 3 * i;
      if (e[2] == 0) continue;
      ix[3 * count] = e[0], ix[3 * count + 1] = e[1], ix[3 * count + 2] = e[2];
      // The pool's threads wrote the packet, on other cores: its first line is asked for now, so
      // that the caller's reads find it near (measured: reading every packet's first byte took
      // 0.13-0.15 ms more for the first loop to touch them).
      __builtin_prefetch(bytes + e[1], 0, 2);
      ++count;
    }

    const TickStats& s = w.stats();
    const Snapshot& snap = w.snapshot();
    const double meta[] = {
        double(w.tick()), double(count), double(slot.views),
        double(s.served), double(s.skippedNotDue), double(s.skippedAvatarGone), double(s.skippedOutsideRegion),
        double(s.candidates), double(s.examined), double(s.eligible), double(s.records), double(s.newGhosts),
        double(s.despawns), double(s.bytes), double(s.ghostTableFull), double(s.pressureEvictions),
        double(s.subscriptionChanges), double(s.events), double(s.eventBytes), double(snap.count()),
        double(snap.outsideRegion()), double(snap.denseCells()), w.odometerMicros, w.snapshotMicros, w.passMicros,
    };
    static_assert(std::size(meta) == std::size(kTickMetaFields), "one value per field of kTickMetaFields");
    std::memcpy(slot.metaData, meta, sizeof(meta));
    applyPending(env);
    return slot.meta.Value();
  }

  // outputViews(which): { buffer, index } of output slot `which` (a tick's parity), as the last
  // finishTick of that parity left them.
  Napi::Value OutputViews(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Slot& slot = out_[info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() & 1 : 0];
    if (slot.buffer.IsEmpty() || slot.index.IsEmpty()) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    o.Set("buffer", slot.buffer.Value());
    o.Set("index", slot.index.Value());
    return o;
  }

  void failTick(Napi::Env env) {
    running_ = false;
    applyPending(env);
  }

 private:
  struct Slot {
    Napi::Reference<Napi::ArrayBuffer> buffer;
    const uint8_t* data = nullptr;
    size_t size = 0;
    bool copy = false;
    Napi::Reference<Napi::Uint32Array> index;
    uint32_t* indexData = nullptr;
    size_t indexCap = 0;
    uint32_t views = 0;  // bumped whenever buffer or index is made anew
    Napi::Reference<Napi::Float64Array> meta;
    double* metaData = nullptr;
  };
  // Viewer changes asked for while a pass runs take effect after it, in order.
  struct PendingOp {
    enum Kind : uint8_t { Add, Remove } kind;
    uint32_t id;
    ViewerOptions opts;
    std::unique_ptr<Viewer> viewer;  // Add: the viewer, built when asked for
  };

  // Applies the changes queued during the pass, in order. None allocates: an add's viewer and room
  // were made when it was asked for, a removal frees. So none fails, and an add whose avatar was despawned meanwhile is applied all the same
  // (the next tick skips it).
  void applyPending(Napi::Env env) {
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
  bool effectiveAcks(uint32_t id) const {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      if (it->id == id && it->kind == PendingOp::Add) return it->opts.acks;
    return world_->hasViewer(id) && world_->viewer(id).ackLog != nullptr;
  }

  // Whether `id` is a viewer once the pending changes are applied.
  bool effectiveHasViewer(uint32_t id) const {
    bool has = world_->hasViewer(id);
    for (const PendingOp& op : pending_)
      if (op.id == id) has = op.kind == PendingOp::Add;
    return has;
  }

  // The adopted position buffers (externalBuffers false) hold the engine's entity memory: one
  // detached (moved to another owner) takes it away, and the engine may no longer touch it. The
  // package marks them untransferable, so postMessage and structuredClone copy them instead.
  void requirePositions(Napi::Env env) {
    if (external_) return;
    for (auto& a : adopted_)
      if (a.Value().IsDetached())
        throw codedError(env, "ERR_SIGHTLINE_POSITIONS_DETACHED",
                         "the world's position buffers (externalBuffers: false) were detached, and the entity memory "
                         "with them: this world can no longer be used");
  }

  Napi::Value Spawn(const Napi::CallbackInfo& info) {
    requirePositions(info.Env());
    int32_t x = rawArg(info, 0, "x"), y = rawArg(info, 1, "y"), z = rawArg(info, 2, "z");
    return Napi::Number::New(info.Env(), guarded(info.Env(), [&] { return world_->entities().spawn(x, y, z); }));
  }
  Napi::Value Despawn(const Napi::CallbackInfo& info) {
    uint32_t id = idArg(info, 0);
    guarded(info.Env(), [&] { world_->entities().despawn(id); return 0; });
    return info.Env().Undefined();
  }
  Napi::Value SlotOf(const Napi::CallbackInfo& info) {
    uint32_t id = idArg(info, 0);
    return Napi::Number::New(info.Env(), guarded(info.Env(), [&] { return world_->entities().checkedSlot(id); }));
  }
  Napi::Value IsLive(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsNumber()) return Napi::Boolean::New(info.Env(), false);
    double v = info[0].As<Napi::Number>().DoubleValue();
    bool ok = v >= 0 && v <= 4294967295.0 && v == double(uint32_t(v)) && world_->entities().isLive(uint32_t(v));
    return Napi::Boolean::New(info.Env(), ok);
  }
  Napi::Value Positions(const Napi::CallbackInfo& info) { return positions_.Value(); }
  Napi::Value Odometer(const Napi::CallbackInfo& info) {
    uint32_t id = idArg(info, 0);
    uint32_t slot = guarded(info.Env(), [&] { return world_->entities().checkedSlot(id); });
    return Napi::Number::New(info.Env(), world_->entities().travelled(slot));
  }
  Napi::Value AddViewer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint32_t id = idArg(info, 0);
    double payload = numberArg(info, 1, "payloadBytes"), period = numberArg(info, 2, "sendPeriod");
    const Config& c = world_->config();
    uint32_t minPayload = kHeaderBytes + c.eventReserveBytes + kRecordBytes;
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
  uint64_t pendingOutputBytes() const {
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
  Napi::Value RemoveViewer(const Napi::CallbackInfo& info) {
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
  // acknowledge(viewer, ack u16, ackBits u32) -> whether the caller is to apply it after the pass:
  // when no pass runs it is applied now (false); during a pass it is only checked (true: the
  // TypeScript layer applies it when the pass ends, in call order with the events it deferred).
  Napi::Value Acknowledge(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint32_t id = idArg(info, 0);
    double ack = numberArg(info, 1, "ack"), bits = numberArg(info, 2, "ackBits");
    if (!(ack >= 0 && ack <= 65535) || ack != double(uint32_t(ack)) || !(bits >= 0 && bits <= 4294967295.0) ||
        bits != double(uint32_t(bits)))
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ACK",
                       "ack must be an integer 0..65535 and ackBits an integer 0..4294967295, received " +
                           num(ack) + " and " + num(bits));
    if (!running_) {
      guarded(env, [&] { world_->acknowledge(id, uint16_t(ack), uint32_t(bits)); return 0; });
      return Napi::Boolean::New(env, false);
    }
    if (!effectiveHasViewer(id))
      throw codedError(env, "ERR_SIGHTLINE_UNKNOWN_VIEWER", "entity " + std::to_string(id) + " is not a viewer");
    if (!effectiveAcks(id))
      throw codedError(env, "ERR_SIGHTLINE_ACKS_DISABLED",
                       "viewer " + std::to_string(id) + " was added without { acks: true }; its packets are not logged");
    // Checked now against the packets sent before this tick, as outside a tick: a viewer added
    // during it has sent none; the pass may only add newer ones, which keep the ack valid.
    bool addedDuringTick = false;
    for (const PendingOp& op : pending_) addedDuringTick |= op.id == id && op.kind == PendingOp::Add;
    if (addedDuringTick)
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ACK",
                       "ack " + std::to_string(uint32_t(ack)) + " names a packet viewer " + std::to_string(id) +
                           " was never sent (none sent yet)");
    guarded(env, [&] { world_->checkAckDuringPass(id, uint16_t(ack)); return 0; });
    return Napi::Boolean::New(env, true);
  }
  // emit(viewer, Uint8Array): queues a reliable event (not during a pass: the TypeScript layer defers).
  Napi::Value Emit(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env, "emit()");
    uint32_t id = idArg(info, 0);
    if (info.Length() < 2 || !info[1].IsTypedArray() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "an event must be a Uint8Array");
    Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
    // countDrop (default true): a full queue counts in the viewer's dropped events; false when the
    // refusal is thrown to the caller instead (a rejected call changes nothing).
    const bool countDrop = info.Length() < 3 || !info[2].IsBoolean() || info[2].As<Napi::Boolean>().Value();
    guarded(env, [&] {
      world_->emit(id, bytes.Data(), uint32_t(std::min<size_t>(bytes.ByteLength(), UINT32_MAX)), countDrop);
      return 0;
    });
    return env.Undefined();
  }
  // holders(entity): viewers whose ghost table holds the entity (their client has it).
  Napi::Value Holders(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env, "holders()");
    uint32_t id = idArg(info, 0);
    std::vector<uint32_t> out;
    for (size_t i = 0; i < world_->viewerCount(); ++i) {
      const Viewer& v = world_->viewerAt(i);
      int32_t e = v.ghosts.find(id);
      // Not a despawn in flight, nor an announcement lost for certain (unheld): the client has it.
      if (e >= 0 && !(v.ghosts.at(uint32_t(e)).flags & kUnheld))
        out.push_back(v.avatarId);
    }
    Napi::Uint32Array a = Napi::Uint32Array::New(env, out.size());
    for (size_t i = 0; i < out.size(); ++i) a[i] = out[i];
    return a;
  }
  // viewerIds(): every viewer's avatar id, in service order.
  Napi::Value ViewerIds(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Uint32Array a = Napi::Uint32Array::New(env, world_->viewerCount());
    for (size_t i = 0; i < world_->viewerCount(); ++i) a[i] = world_->viewerAt(i).avatarId;
    return a;
  }
  // eventStats(viewer): { queued, dropped, pending } or null when the viewer takes no events.
  Napi::Value EventStats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint32_t id = idArg(info, 0);
    const Viewer& v = guarded(env, [&]() -> const Viewer& { return world_->viewer(id); });
    if (!v.events) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    o.Set("queued", Napi::Number::New(env, double(v.events->queued)));
    o.Set("dropped", Napi::Number::New(env, double(v.events->dropped)));
    o.Set("pending", Napi::Number::New(env, double(v.events->size())));
    return o;
  }
  // Packets resolved for a viewer with acknowledgements: { acked, lost, assumed, probablyLost,
  // expired } (null otherwise).
  Napi::Value AckStats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint32_t id = idArg(info, 0);
    const Viewer& v = guarded(env, [&]() -> const Viewer& { return world_->viewer(id); });
    if (!v.ackLog) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    o.Set("acked", Napi::Number::New(env, double(v.ackLog->acked)));
    o.Set("lost", Napi::Number::New(env, double(v.ackLog->lost)));
    o.Set("assumed", Napi::Number::New(env, double(v.ackLog->assumed)));
    o.Set("probablyLost", Napi::Number::New(env, double(v.ackLog->probablyLost)));
    o.Set("expired", Napi::Number::New(env, double(v.ackLog->expired)));
    o.Set("despawnsNotResent", Napi::Number::New(env, double(v.ackLog->despawnsNotResent)));
    return o;
  }
  Napi::Value HasViewer(const Napi::CallbackInfo& info) {
    uint32_t id = idArg(info, 0);
    return Napi::Boolean::New(info.Env(), effectiveHasViewer(id));
  }
  // Viewers once the pending changes are applied (each pending change was validated when asked for).
  Napi::Value ViewerCount(const Napi::CallbackInfo& info) {
    double n = double(world_->viewerCount());
    for (const PendingOp& op : pending_) n += op.kind == PendingOp::Add ? 1 : op.kind == PendingOp::Remove ? -1 : 0;
    return Napi::Number::New(info.Env(), n);
  }

  Napi::Value Tick(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (running_)
      throw codedError(env, "ERR_SIGHTLINE_TICK_IN_PROGRESS",
                       "tick() was called while the previous tick's pass is still running; await it first");
    requirePositions(env);
    // Everything the tick allocates comes first: the work, the engine's buffers (reserveTick) and
    // the JavaScript objects of its result (prepareSlot). Running out of memory in any of them
    // leaves the world as it was; startTick then starts the tick and cannot fail.
    auto* worker = guarded(env, [&] { return new PassWorker(env, this, Value(), *world_, pool_, data_); });
    try {
      guarded(env, [&] { world_->reserveTick(pool_->size()); return 0; });
      try {
        prepareSlot(env, (world_->tick() + 1) & 1, world_->nextOutputBuffer(), world_->viewerCount());
      } catch (const Napi::Error& e) {
        throw codedError(env, "ERR_SIGHTLINE_OUT_OF_MEMORY", std::string("sightline could not allocate memory: ") + e.Message());
      }
    } catch (...) {
      delete worker;
      throw;
    }
    world_->startTick();
    // Queueing can throw (a worker thread being terminated): neither the running flag nor the
    // in-flight count may stay taken.
    Napi::Promise p = worker->promise();
    running_ = true;
    data_->begin();
    try {
      worker->Queue();
    } catch (...) {
      running_ = false;
      data_->end();
      delete worker;
      throw;
    }
    return p;
  }

  void requireIdle(Napi::Env env, const char* what) {
    if (running_)
      throw codedError(env, "ERR_SIGHTLINE_TICK_IN_PROGRESS",
                       std::string(what) + " cannot run while a tick's pass is running; await the tick first");
  }

  Napi::Value RebuildSnapshot(const Napi::CallbackInfo& info) {
    requireIdle(info.Env(), "rebuildSnapshot()");
    requirePositions(info.Env());
    guarded(info.Env(), [&] { world_->rebuildSnapshot(); return 0; });
    return info.Env().Undefined();
  }
  Napi::Value SnapshotInfo(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Snapshot& s = world_->snapshot();
    Napi::Object o = Napi::Object::New(env);
    o.Set("count", Napi::Number::New(env, s.count()));
    o.Set("outsideRegion", Napi::Number::New(env, s.outsideRegion()));
    o.Set("denseCells", Napi::Number::New(env, s.denseCells()));
    o.Set("maxCellOccupancy", Napi::Number::New(env, s.maxCellOccupancy()));
    return o;
  }
  // gather(xRaw, yRaw, walkCap, excludeId) on the current snapshot.
  Napi::Value Gather(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env, "gather()");
    double vx = numberArg(info, 0, "x"), vy = numberArg(info, 1, "y"), cap = numberArg(info, 2, "walkCap");
    double ex = numberArg(info, 3, "exclude");
    if (vx != double(int64_t(vx)) || vy != double(int64_t(vy)) || std::abs(vx) > 4e15 || std::abs(vy) > 4e15)
      throw codedError(env, "ERR_SIGHTLINE_INVALID_POSITION", "x and y must be integer raw coordinates");
    uint32_t walkCap = cap >= 4294967295.0 || std::isinf(cap) ? UINT32_MAX : uint32_t(std::max(cap, 1.0));
    uint32_t exclude = ex >= 0 && ex <= 4294967295.0 ? uint32_t(ex) : UINT32_MAX;
    const Snapshot& s = world_->snapshot();
    std::vector<uint64_t> outD2(s.count() + kGatherSlack);
    std::vector<uint32_t> outIndex(s.count() + kGatherSlack);
    std::vector<uint64_t> outIdOdo(s.count() + kGatherSlack);
    const Config& c = world_->config();
    GatherResult g = gather(s, int64_t(vx), int64_t(vy), c.viewRadiusSq, walkCap, exclude,
                            Candidates{outD2.data(), outIndex.data(), outIdOdo.data()});
    Napi::Uint32Array ids = Napi::Uint32Array::New(env, g.count);
    Napi::Float64Array d2 = Napi::Float64Array::New(env, g.count);
    for (uint32_t i = 0; i < g.count; ++i) ids[i] = candIdOf(outIdOdo[i]), d2[i] = double(outD2[i]);
    Napi::Object o = Napi::Object::New(env);
    o.Set("ids", ids);
    o.Set("d2", d2);
    o.Set("examined", Napi::Number::New(env, g.examined));
    return o;
  }
  // The ghost table of a viewer: what its client holds, with last-sent raw positions.
  Napi::Value Ghosts(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env, "ghosts()");
    uint32_t id = idArg(info, 0);
    const Viewer& v = guarded(env, [&]() -> const Viewer& { return world_->viewer(id); });
    const GhostTable& g = v.ghosts;
    uint32_t n = g.size();
    Napi::Uint32Array ids = Napi::Uint32Array::New(env, n);
    Napi::Uint8Array state = Napi::Uint8Array::New(env, n);
    // 3: the server believes the client does not hold it (an announcement lost for certain).
    for (uint32_t i = 0; i < n; ++i)
      ids[i] = g.at(i).id, state[i] = (g.at(i).flags & kUnheld) ? 3 : g.at(i).state;
    Napi::Object o = Napi::Object::New(env);
    o.Set("ids", ids), o.Set("state", state);
    if (g.tracksPositions()) {
      Napi::Int32Array x = Napi::Int32Array::New(env, n), y = Napi::Int32Array::New(env, n),
                       z = Napi::Int32Array::New(env, n);
      for (uint32_t i = 0; i < n; ++i) x[i] = g.positionAt(i).x, y[i] = g.positionAt(i).y, z[i] = g.positionAt(i).z;
      o.Set("x", x), o.Set("y", y), o.Set("z", z);
    } else {
      o.Set("x", env.Null()), o.Set("y", env.Null()), o.Set("z", env.Null());
    }
    o.Set("sequence", Napi::Number::New(env, v.sequence));
    o.Set("passes", Napi::Number::New(env, v.passes));
    return o;
  }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("config", configToObject(env, world_->config()));
    o.Set("capacity", Napi::Number::New(env, world_->entities().capacity()));
    o.Set("liveCount", Napi::Number::New(env, world_->entities().liveCount()));
    o.Set("threads", Napi::Number::New(env, pool_->size()));
    o.Set("tick", Napi::Number::New(env, world_->tick()));
    o.Set("externalBuffers", Napi::Boolean::New(env, external_));
    o.Set("running", Napi::Boolean::New(env, running_));
    return o;
  }

  std::unique_ptr<World> world_;
  AddonData* data_ = nullptr;
  std::shared_ptr<ThreadPool> pool_;
  unsigned threads_ = 0;
  bool external_ = false;
  bool running_ = false;
  Napi::ObjectReference positions_;
  Napi::Reference<Napi::ArrayBuffer> adopted_[3];  // externalBuffers false: the buffers holding entity memory
  Slot out_[2];
  std::vector<PendingOp> pending_;
};

// Both run on the JavaScript thread. While the environment is being torn down (a worker thread
// terminated mid-pass) JavaScript can no longer run: the calls below throw, and the tick is dropped.
void PassWorker::OnOK() {
  Napi::Env env = Env();
  try {
    deferred_.Resolve(owner_->finishTick(env));
  } catch (const std::exception& e) {
    // finishTick allocates nothing, so this is a defect, or the environment going away (then the
    // rejection below throws as well, and the tick is dropped).
    try {
      deferred_.Reject(codedError(env, "ERR_SIGHTLINE_INTERNAL", std::string("the tick could not finish: ") + e.what()).Value());
    } catch (const std::exception&) {
    }
  }
}

void PassWorker::OnError(const Napi::Error& e) {
  Napi::Env env = Env();
  try {
    owner_->failTick(env);
    Napi::Error err = codedError(env, code_.empty() ? "ERR_SIGHTLINE_INTERNAL" : code_, e.Message());
    deferred_.Reject(err.Value());
  } catch (const Napi::Error&) {
  } catch (const std::exception&) {
  }
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  env.SetInstanceData<AddonData>(data);
  napi_add_env_cleanup_hook(env, &AddonData::cleanup, data);
  exports.Set("NativeWorld", NativeWorld::Init(env));
  exports.Set("buildConfig", Napi::Function::New<BuildConfig>(env, "buildConfig"));
  exports.Set("cellOf", Napi::Function::New<CellOf>(env, "cellOf"));
  exports.Set("subscriptionBox", Napi::Function::New<SubscriptionBox>(env, "subscriptionBox"));
  exports.Set("subscriptionDiff", Napi::Function::New<SubscriptionDiff>(env, "subscriptionDiff"));
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  Napi::Array fields = Napi::Array::New(env, std::size(kTickMetaFields));
  for (uint32_t i = 0; i < std::size(kTickMetaFields); ++i) fields.Set(i, Napi::String::New(env, kTickMetaFields[i]));
  exports.Set("tickMetaFields", fields);
  exports.Set("kernels", Napi::String::New(env, simdEnabled() ? "avx512" : "portable"));
  exports.Set("profileGuided", Napi::Boolean::New(env, SIGHTLINE_PGO != 0));
  return exports;
}

}  // namespace

NODE_API_MODULE(sightline, Init)
