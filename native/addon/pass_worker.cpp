// PassWorker: the pass on the pool's threads, then the tick's promise settled on the JavaScript thread.
#include "pass_worker.h"

#include <exception>

#include "coded_error.h"
#include "errors.h"
#include "native_world.h"

namespace sightline::addon {

void PassWorker::Execute() {
  try {
#if SIGHTLINE_NATIVE_UDP
    if (transport_) transport_->applyAcks(world_, *pool_);
#endif
    world_.runPass(*pool_);
#if SIGHTLINE_NATIVE_UDP
    if (transport_) transport_->sendTick(world_, *pool_);
#endif
  } catch (const CoreError& e) {
    code_ = e.code();
    SetError(e.what());
  } catch (const std::exception& e) {
    code_ = "ERR_SIGHTLINE_INTERNAL";
    SetError(e.what());
  }
  // The pool is no longer in use: an environment cleanup may join it from here on.
  data_->end();
}

// Both run on the JavaScript thread. While the environment is being torn down (a worker thread
// terminated mid-pass) JavaScript can no longer run: the calls below throw, and the tick is dropped.
void PassWorker::OnOK() {
  Napi::Env env = Env();
  try {
    deferred_.Resolve(owner_->finishTick(env));
  } catch (const std::exception& e) {
    // finishTick allocates nothing, so this is a defect, or the environment going away (then the
    // rejection below throws as well, and the tick is dropped).
    try {
      deferred_.Reject(codedError(env, "ERR_SIGHTLINE_INTERNAL", std::string("the tick could not finish: ") + e.what()).Value());
    } catch (const std::exception&) {
    }
  }
}

void PassWorker::OnError(const Napi::Error& e) {
  Napi::Env env = Env();
  try {
    owner_->failTick(env);
    Napi::Error err = codedError(env, code_.empty() ? "ERR_SIGHTLINE_INTERNAL" : code_, e.Message());
    deferred_.Reject(err.Value());
  } catch (const Napi::Error&) {
  } catch (const std::exception&) {
  }
}

}  // namespace sightline::addon
