// Error mapping: coded JavaScript errors (an Error with `code`, ERR_SIGHTLINE_...), and guarded(),
// which runs a call into the core and converts what it throws.
#pragma once

#include <napi.h>

#include <new>
#include <string>

#include "errors.h"

namespace sightline::addon {

Napi::Error codedError(Napi::Env env, const std::string& code, const std::string& message);

[[noreturn]] void rethrow(Napi::Env env, const CoreError& e);

// f(), with a CoreError thrown as a JavaScript error of its code and std::bad_alloc as
// ERR_SIGHTLINE_OUT_OF_MEMORY.
template <typename F>
auto guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CoreError& e) {
    rethrow(env, e);
  } catch (const std::bad_alloc&) {
    throw codedError(env, "ERR_SIGHTLINE_OUT_OF_MEMORY", "sightline could not allocate memory");
  }
}

}  // namespace sightline::addon
