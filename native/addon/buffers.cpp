// External ArrayBuffers (buffers.h).
#include "buffers.h"

namespace sightline::addon {

Napi::Value externalBuffer(Napi::Env env, void* data, size_t bytes, const std::shared_ptr<void>& owner) {
  napi_value ab;
  // The finalizer releases the hint. Node calls it itself when it refuses the buffer for its size
  // (after which the hint is gone), but not when the runtime allows no external buffers at all:
  // `finalized` tells the two apart.
  struct Hint {
    std::shared_ptr<void> owner;
    std::shared_ptr<bool> finalized;
  };
  auto finalized = std::make_shared<bool>(false);
  auto* hint = new Hint{owner, finalized};
  napi_status st = napi_create_external_arraybuffer(
      env, data, bytes,
      [](napi_env, void*, void* h) {
        auto* hh = static_cast<Hint*>(h);
        *hh->finalized = true;
        delete hh;
      },
      hint, &ab);
  if (st != napi_ok) {
    if (!*finalized) delete hint;
    const napi_extended_error_info* info = nullptr;
    napi_get_last_error_info(env, &info);
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value ignored;
      napi_get_and_clear_last_exception(env, &ignored);
    }
    return Napi::Value();
  }
  return Napi::Value(env, ab);
}

}  // namespace sightline::addon
