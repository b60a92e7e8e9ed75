#include "batch_notifier.h"

namespace sightline::addon {

BatchNotifier::BatchNotifier(Napi::Env env, Napi::Function onBatch, const char* name, std::function<void()> stop)
    : env_(env), tsfn_(Napi::ThreadSafeFunction::New(env, onBatch, name, 0, 1)), stop_(std::move(stop)) {
  napi_add_env_cleanup_hook(env, &BatchNotifier::cleanup, this);
  hooked_ = true;
}

std::function<void()> BatchNotifier::notify() {
  Napi::ThreadSafeFunction tsfn = tsfn_;
  return [tsfn]() mutable { tsfn.NonBlockingCall(); };
}

void BatchNotifier::release() {
  if (hooked_) napi_remove_env_cleanup_hook(env_, &BatchNotifier::cleanup, this);
  hooked_ = false;
  if (stop_) {
    auto stop = std::move(stop_);
    stop_ = nullptr;
    stop();
  }
  if (live_) {
    tsfn_.Release();
    live_ = false;
  }
}

void BatchNotifier::cleanup(void* self) {
  auto* n = static_cast<BatchNotifier*>(self);
  n->hooked_ = false;
  n->release();
}

}  // namespace sightline::addon
