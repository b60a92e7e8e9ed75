// Config object conversion (config_object.h).
#include "config_object.h"

#include <string>

#include "coded_error.h"

namespace sightline::addon {

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

}  // namespace sightline::addon
