// Tick dispatch: the async work that runs a tick's pass on the world's thread pool, off the
// JavaScript thread, and settles the tick's promise on the JavaScript thread.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "addon_data.h"
#if SIGHTLINE_NATIVE_UDP
#include "data_path.h"
#else
namespace sightline::net {
class DataPath;  // the native UDP data path: Linux only
}
#endif
#include "thread_pool.h"
#include "world.h"

namespace sightline::addon {

class NativeWorld;

class PassWorker : public Napi::AsyncWorker {
 public:
  // transport: the data path attached to the world, or null. Before the pass it applies the ACKs
  // it queued, after it sends the tick's packets (net/data_path.h).
  PassWorker(Napi::Env env, NativeWorld* owner, Napi::Object self, World& world, std::shared_ptr<ThreadPool> pool,
             AddonData* data, std::shared_ptr<net::DataPath> transport)
      : Napi::AsyncWorker(env, "sightline.pass"),
        deferred_(Napi::Promise::Deferred::New(env)),
        owner_(owner),
        world_(world),
        pool_(std::move(pool)),
        data_(data),
        transport_(std::move(transport)) {
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
  std::shared_ptr<net::DataPath> transport_;
  std::string code_;
};

}  // namespace sightline::addon
