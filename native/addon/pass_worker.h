// Tick dispatch: the async work that runs a tick's pass on the world's thread pool, off the
// JavaScript thread, and settles the tick's promise on the JavaScript thread.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "addon_data.h"
#include "thread_pool.h"
#include "world.h"

namespace sightline::addon {

class NativeWorld;

class PassWorker : public Napi::AsyncWorker {
 public:
  PassWorker(Napi::Env env, NativeWorld* owner, Napi::Object self, World& world, std::shared_ptr<ThreadPool> pool,
             AddonData* data)
      : Napi::AsyncWorker(env, "sightline.pass"),
        deferred_(Napi::Promise::Deferred::New(env)),
        owner_(owner),
        world_(world),
        pool_(std::move(pool)),
        data_(data) {
    self_ = Napi::Persistent(self);
  }
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& e) override;

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference self_;
  NativeWorld* owner_;
  World& world_;
  std::shared_ptr<ThreadPool> pool_;
  AddonData* data_;
  std::string code_;
};

}  // namespace sightline::addon
