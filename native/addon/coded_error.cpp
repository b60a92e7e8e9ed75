// Error mapping (coded_error.h).
#include "coded_error.h"

namespace sightline::addon {

Napi::Error codedError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

[[noreturn]] void rethrow(Napi::Env env, const CoreError& e) { throw codedError(env, e.code(), e.what()); }

}  // namespace sightline::addon
