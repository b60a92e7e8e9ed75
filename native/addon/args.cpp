// Argument conversion (args.h).
#include "args.h"

#include "coded_error.h"
#include "config.h"

namespace sightline::addon {

std::string num(double v) { return formatNumber(v); }

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

uint32_t groupsArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  double v = numberArg(info, i, name);
  if (!(v >= 0 && v <= 4294967295.0) || v != static_cast<double>(static_cast<uint32_t>(v)))
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_ARGUMENT",
                     std::string(name) + " must be an integer mask from 0 to 4294967295, received " + num(v));
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

uint16_t kindArg(const Napi::CallbackInfo& info, size_t i) {
  double v = numberArg(info, i, "kind");
  if (!(v >= 0 && v <= 65535) || v != double(uint16_t(v)))
    throw codedError(info.Env(), "ERR_SIGHTLINE_INVALID_KIND", "kind must be an integer from 0 to 65535, received " + num(v));
  return uint16_t(v);
}

}  // namespace sightline::addon
