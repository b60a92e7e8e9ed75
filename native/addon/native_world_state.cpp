// NativeWorld: kinds and attributes, the state of an entity sent with its first sighting and after
// each change. Both may be set while a pass runs: the pass reads what the tick took of them.
#include "native_world.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "args.h"

namespace sightline::addon {

Napi::Value NativeWorld::SetKind(const Napi::CallbackInfo& info) {
  const uint32_t id = idArg(info, 0);
  const uint16_t kind = kindArg(info, 1);
  guarded(info.Env(), [&] { world_->entities().setKind(id, kind); return 0; });
  return info.Env().Undefined();
}

Napi::Value NativeWorld::KindOf(const Napi::CallbackInfo& info) {
  const uint32_t id = idArg(info, 0);
  const uint32_t slot = guarded(info.Env(), [&] { return world_->entities().checkedSlot(id); });
  return Napi::Number::New(info.Env(), world_->entities().kindOf(slot));
}

// setAttributes(id, bytes: Uint8Array) -> the new version.
Napi::Value NativeWorld::SetAttributes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t id = idArg(info, 0);
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw codedError(env, "ERR_SIGHTLINE_INVALID_ARGUMENT", "attributes must be a Uint8Array");
  Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
  const double version = guarded(env, [&] {
    return double(world_->entities().setAttributes(id, bytes.Data(), uint32_t(std::min<size_t>(bytes.ByteLength(), 0xffffffffu))));
  });
  return Napi::Number::New(env, version);
}

// attributes(id) -> { version, bytes } (a copy of the latest set), or null before the first.
Napi::Value NativeWorld::Attributes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t id = idArg(info, 0);
  const uint32_t slot = guarded(env, [&] { return world_->entities().checkedSlot(id); });
  const AttributeStore& a = world_->entities().attributes();
  if (!a.enabled() || a.liveVersion(slot) == 0) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("version", Napi::Number::New(env, a.liveVersion(slot)));
  const size_t length = a.liveLength(slot);
  Napi::Uint8Array bytes = Napi::Uint8Array::New(env, length);
  // Empty attributes are an empty array, whose data pointer may be null: nothing to copy.
  if (length > 0) std::memcpy(bytes.Data(), a.liveBytes(slot), length);
  o.Set("bytes", bytes);
  return o;
}

}  // namespace sightline::addon
