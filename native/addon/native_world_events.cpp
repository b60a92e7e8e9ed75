// NativeWorld: reliable events, and which viewers' clients hold an entity.
#include "native_world.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "args.h"

namespace sightline::addon {

// emit(viewer, Uint8Array): queues a reliable event (not during a pass: the TypeScript layer defers).
Napi::Value NativeWorld::Emit(const Napi::CallbackInfo& info) {
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
Napi::Value NativeWorld::Holders(const Napi::CallbackInfo& info) {
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

// eventStats(viewer): { queued, dropped, pending } or null when the viewer takes no events.
Napi::Value NativeWorld::EventStats(const Napi::CallbackInfo& info) {
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

}  // namespace sightline::addon
