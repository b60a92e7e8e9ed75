// External ArrayBuffers over native memory (entity positions, a tick's output block).
#pragma once

#include <napi.h>

#include <cstddef>
#include <memory>

namespace sightline::addon {

// An ArrayBuffer over native memory: external where the runtime allows it, else empty (the caller
// falls back to a V8-allocated buffer). The buffer holds `owner` until it is collected, so the
// memory outlives the World while JavaScript can still reach it.
Napi::Value externalBuffer(Napi::Env env, void* data, size_t bytes, const std::shared_ptr<void>& owner);

}  // namespace sightline::addon
