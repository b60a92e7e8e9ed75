// NativeWorld: spawn, despawn, slots, liveness, the position views and the odometer.
#include "native_world.h"

#include <string>

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

// setGroups(id, groups u32): from the next tick's snapshot on.
Napi::Value NativeWorld::SetGroups(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  uint32_t groups = groupsArg(info, 1, "groups");
  guarded(info.Env(), [&] { world_->entities().setGroups(id, groups); return 0; });
  return info.Env().Undefined();
}

// setPriority(id, weight 1..16): from the next tick's snapshot on.
Napi::Value NativeWorld::SetPriority(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  double w = numberArg(info, 1, "weight");
  if (!(w >= 1 && w <= EntityStore::kMaxWeight) || w != double(uint32_t(w)))
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_PRIORITY",
                     "a priority weight must be an integer from 1 to " + std::to_string(EntityStore::kMaxWeight) +
                         ", received " + num(w));
  guarded(info.Env(), [&] { world_->entities().setWeight(id, uint32_t(w)); return 0; });
  return info.Env().Undefined();
}

// entityInterest(id) -> [groups, weight] as last set.
Napi::Value NativeWorld::EntityInterest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = idArg(info, 0);
  uint32_t slot = guarded(env, [&] { return world_->entities().checkedSlot(id); });
  Napi::Array a = Napi::Array::New(env, 2);
  a.Set(uint32_t(0), Napi::Number::New(env, world_->entities().groups()[slot]));
  a.Set(uint32_t(1), Napi::Number::New(env, world_->entities().weights()[slot]));
  return a;
}

Napi::Value NativeWorld::Fields(const Napi::CallbackInfo& info) { return fields_.Value(); }

Napi::Value NativeWorld::Odometer(const Napi::CallbackInfo& info) {
  uint32_t id = idArg(info, 0);
  uint32_t slot = guarded(info.Env(), [&] { return world_->entities().checkedSlot(id); });
  return Napi::Number::New(info.Env(), world_->entities().travelled(slot));
}

}  // namespace sightline::addon
