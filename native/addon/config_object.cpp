// Config object conversion (config_object.h).
#include "config_object.h"

#include <string>

#include "coded_error.h"

namespace sightline::addon {

namespace {

// The authored fields, read as lib/state-config.ts readFields reads them: an array (undefined or
// null: none) of ordinary objects whose own keys are among name, bits, min, max and weight, name a
// string, the others numbers (min, max and weight may be absent or undefined).
std::vector<FieldInput> fieldsFromValue(Napi::Env env, const Napi::Value& value, const Napi::Function& tag) {
  std::vector<FieldInput> out;
  if (value.IsUndefined() || value.IsNull()) return out;
  auto bad = [&](const std::string& what) { return codedError(env, "ERR_SIGHTLINE_CONFIG_FIELD_INVALID", what); };
  if (!value.IsArray()) throw bad("fields must be an array of { name, bits, min?, max?, weight? }");
  Napi::Array a = value.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const std::string at = "fields[" + std::to_string(i) + "]";
    Napi::Value e = a.Get(i);
    if (!e.IsObject() || e.IsArray() || tag.Call(e, {}).As<Napi::String>().Utf8Value() != "[object Object]")
      throw bad(at + " must be an object { name, bits, min?, max?, weight? }");
    Napi::Object f = e.As<Napi::Object>();
    napi_value names;
    if (napi_get_all_property_names(env, f, napi_key_own_only, static_cast<napi_key_filter>(napi_key_enumerable | napi_key_skip_symbols),
                                    napi_key_numbers_to_strings, &names) != napi_ok)
      throw Napi::Error::New(env);
    Napi::Array keys(env, names);
    for (uint32_t k = 0; k < keys.Length(); ++k) {
      const std::string key = keys.Get(k).As<Napi::String>().Utf8Value();
      if (key != "name" && key != "bits" && key != "min" && key != "max" && key != "weight")
        throw bad(at + " has an unknown key \"" + key + "\"; valid keys are name, bits, min, max, weight");
    }
    auto get = [&](const char* k) { return f.HasOwnProperty(k) ? f.Get(k) : env.Undefined(); };
    FieldInput fi;
    Napi::Value name = get("name");
    if (!name.IsString()) throw bad(at + ".name must be a string");
    fi.name = name.As<Napi::String>().Utf8Value();
    Napi::Value bits = get("bits");
    if (!bits.IsNumber()) throw bad(at + ".bits must be a number");
    fi.bits = bits.As<Napi::Number>().DoubleValue();
    for (auto [k, slot] : {std::pair{"min", &fi.min}, std::pair{"max", &fi.max}, std::pair{"weight", &fi.weight}}) {
      Napi::Value v = get(k);
      if (v.IsUndefined()) continue;
      if (!v.IsNumber()) throw bad(at + "." + k + " must be a number");
      *slot = v.As<Napi::Number>().DoubleValue();
    }
    out.push_back(std::move(fi));
  }
  return out;
}

}  // namespace

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
  num("attributeBytes", in.attributeBytes);
  num("attributeRepeatPasses", in.attributeRepeatPasses);
  num("attributeShare", in.attributeShare);
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
  in.fields = fieldsFromValue(env, own("fields") ? o.Get("fields") : env.Undefined(), tag);
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
  set("fieldBits", c.fieldBits);
  set("fieldBytes", c.fieldBytes);
  set("recordBytes", c.recordBytes);
  set("minPayloadBytes", c.minPayloadBytes);
  set("attributeBytes", c.attributeBytes);
  set("attributeRepeatPasses", c.attributeRepeatPasses);
  set("attributeShareQ16", c.attributeShareQ16);
  Napi::Array fields = Napi::Array::New(env, c.fields.size());
  for (size_t i = 0; i < c.fields.size(); ++i) {
    const FieldSpec& f = c.fields[i];
    Napi::Object fo = Napi::Object::New(env);
    fo.Set("name", Napi::String::New(env, f.name));
    fo.Set("bits", Napi::Number::New(env, f.bits));
    fo.Set("offset", Napi::Number::New(env, f.offset));
    fo.Set("min", Napi::Number::New(env, f.min));
    fo.Set("max", Napi::Number::New(env, f.max));
    fo.Set("weight", Napi::Number::New(env, f.weight));
    fo.Set("weightRaw", Napi::Number::New(env, f.weightRaw));
    fields.Set(uint32_t(i), fo);
  }
  o.Set("fields", fields);
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
