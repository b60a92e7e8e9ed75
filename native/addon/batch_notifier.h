// BatchNotifier: how a native thread tells JavaScript that a batch waits for it (a thread-safe
// function around the object's onBatch callback), and the environment cleanup hook that stops the
// thread when the environment goes (a worker thread ending) before JavaScript closed the object.
// Shared by NativeUdp and NativeSwarm (Linux).
#pragma once

#include <napi.h>

#include <functional>

namespace sightline::addon {

class BatchNotifier {
 public:
  // onBatch runs on the JavaScript thread after notify(); stop closes the owner's native side (its
  // threads joined), called once, by release() or by the cleanup hook.
  BatchNotifier(Napi::Env env, Napi::Function onBatch, const char* name, std::function<void()> stop);
  ~BatchNotifier() { release(); }
  BatchNotifier(const BatchNotifier&) = delete;
  BatchNotifier& operator=(const BatchNotifier&) = delete;

  // What the native thread calls (any thread, never blocks): onBatch will run.
  std::function<void()> notify();
  // stop(), then the thread-safe function is released and the hook removed. Idempotent.
  void release();

 private:
  static void cleanup(void* self);
  napi_env env_;
  Napi::ThreadSafeFunction tsfn_;
  std::function<void()> stop_;
  bool live_ = true, hooked_ = false;
};

}  // namespace sightline::addon
