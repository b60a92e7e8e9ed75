// AddonData: the addon's per-environment state, registered as the environment's instance data
// (module.cpp).
#pragma once

#include <napi.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "thread_pool.h"

namespace sightline::addon {

// Per-environment state: thread pools (one per thread count, shared by that environment's worlds)
// and the count of passes in flight. Pools are joined in an environment cleanup hook, after any
// pass still running has finished, so worker_threads can come and go.
struct AddonData {
  std::mutex m;
  std::condition_variable idle;
  int inFlight = 0;
  // One pool per thread count, shared by the worlds that use it and freed with the last of them.
  std::map<unsigned, std::weak_ptr<ThreadPool>> pools;
  // The NativeUdp class (Linux), to tell its instances apart (NativeWorld.attachTransport).
  Napi::FunctionReference udpClass;

  // The pool of `threads` threads (0: all cores), made when none is alive.
  std::shared_ptr<ThreadPool> pool(unsigned threads);
  // A pass starts and ends: the cleanup hook waits until none is in flight.
  void begin();
  void end();
  // The environment cleanup hook: waits for passes in flight, then joins every pool's workers.
  static void cleanup(void* arg);
};

}  // namespace sightline::addon
