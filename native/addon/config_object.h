// Config object conversion: a JavaScript config input to the core's ConfigInput, a built Config to
// a JavaScript object, and the exported buildConfig().
#pragma once

#include <napi.h>

#include "config.h"

namespace sightline::addon {

// An ordinary object's own fields (undefined: every default); refuses anything else with a coded error.
ConfigInput configFromObject(Napi::Env env, const Napi::Value& value);

// Every derived field of `c`, as NativeConfig (lib/binding.ts) lists them.
Napi::Object configToObject(Napi::Env env, const Config& c);

// buildConfig(input) -> NativeConfig.
Napi::Value BuildConfig(const Napi::CallbackInfo& info);

}  // namespace sightline::addon
