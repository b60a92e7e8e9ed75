// The module: registers the per-environment AddonData and its cleanup hook, and exports the
// NativeWorld class, the config and cell functions and the addon's build facts.
#include <napi.h>

#include <cstdint>
#include <iterator>

#include "addon_data.h"
#include "cells.h"
#include "config_object.h"
#include "native_swarm.h"
#include "native_udp.h"
#include "native_world.h"
#include "simd.h"
#include "tick_meta.h"

// Set to 1 by the profile-guided build (binding.gyp's sightline_pgo=use; scripts/build-pgo.mjs).
#ifndef SIGHTLINE_PGO
#define SIGHTLINE_PGO 0
#endif

namespace sightline::addon {

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
#if SIGHTLINE_NATIVE_UDP
  Napi::Function udp = NativeUdp::Init(env);
  data->udpClass = Napi::Persistent(udp);
  exports.Set("NativeUdp", udp);
  Napi::Array counterFields = Napi::Array::New(env, std::size(kUdpCounterFields));
  for (uint32_t i = 0; i < std::size(kUdpCounterFields); ++i) counterFields.Set(i, Napi::String::New(env, kUdpCounterFields[i]));
  exports.Set("udpCounterFields", counterFields);
  Napi::Array tickFields = Napi::Array::New(env, std::size(kUdpTickFields));
  for (uint32_t i = 0; i < std::size(kUdpTickFields); ++i) tickFields.Set(i, Napi::String::New(env, kUdpTickFields[i]));
  exports.Set("udpTickFields", tickFields);
  exports.Set("NativeSwarm", NativeSwarm::Init(env));
  Napi::Array swarmFields = Napi::Array::New(env, std::size(kSwarmCounterFieldNames));
  for (uint32_t i = 0; i < std::size(kSwarmCounterFieldNames); ++i) swarmFields.Set(i, Napi::String::New(env, kSwarmCounterFieldNames[i]));
  exports.Set("swarmCounterFields", swarmFields);
#endif
  return exports;
}

}  // namespace sightline::addon

using sightline::addon::Init;

NODE_API_MODULE(sightline, Init)
