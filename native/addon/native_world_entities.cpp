// NativeWorld: spawn, despawn, slots, liveness, the position views and the odometer.
#include "native_world.h"

#include "args.h"

namespace sightline::addon {

Napi::Value NativeWorld::Spawn(const Napi::CallbackInfo& info) {
  requirePositions(info.Env());
  int32_t x = rawArg(info, 0, "x"), y = rawArg(info, 1, "y"), z = rawArg(info, 2, "z");
  const uint16_t kind = info.Length() > 3 && !info[3].IsUndefined() ? kindArg(info, 3) : 0;
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] { return world_->entities().spawn(x, y, z, kind); }));
}

Napi::Value NativeWorld::Despawn(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  guarded(info.Env(), [&] { world_->entities().despawn(id); return 0; });
  return info.Env().Undefined();
}

Napi::Value NativeWorld::SlotOf(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] { return world_->entities().checkedSlot(id); }));
}

Napi::Value NativeWorld::IsLive(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) return Napi::Boolean::New(info.Env(), false);
  double v = info[0].As<Napi::Number>().DoubleValue();
  bool ok = v >= 0 && v <= 4294967295.0 && v == double(uint32_t(v)) && world_->entities().isLive(uint32_t(v));
  return Napi::Boolean::New(info.Env(), ok);
}

Napi::Value NativeWorld::Positions(const Napi::CallbackInfo& info) { return positions_.Value(); }

Napi::Value NativeWorld::Fields(const Napi::CallbackInfo& info) { return fields_.Value(); }

Napi::Value NativeWorld::Odometer(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  uint32_t slot = guarded(info.Env(), [&] { return world_->entities().checkedSlot(id); });
  return Napi::Number::New(info.Env(), world_->entities().travelled(slot));
}

}  // namespace sightline::addon
