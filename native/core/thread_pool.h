// Persistent thread pool for data-parallel loops. Workers sleep on a condition variable while idle;
// parallelFor(count, grain, fn) splits [0, count) into chunks of `grain` claimed through an atomic
// cursor; the calling thread participates and the call returns when every chunk is done. The first
// exception thrown by any chunk is rethrown on the caller; the pool stays usable afterwards.
// ThreadPool(1) has no workers and runs inline. parallelFor calls on one pool are serialized.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sightline {

// 0 = hardware concurrency (at least 1); anything else is used as given (capped at 256).
unsigned resolveThreadCount(unsigned requested, unsigned detected);

class ThreadPool {
 public:
  // fn(begin, end, worker): worker in [0, size()) identifies per-worker scratch; 0 is the caller.
  using Body = std::function<void(uint32_t begin, uint32_t end, unsigned worker)>;

  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return size_; }
  // Joins the workers; later parallelFor calls run inline on the caller (still reporting size()
  // workers' worth of scratch indices as 0). For environment teardown.
  void shutdown();
  void parallelFor(uint32_t count, uint32_t grain, const Body& fn);
  // Wakes the workers ahead of a parallelFor expected soon: each spins on its core (instead of
  // sleeping) until the work is dispatched or kPrewakeSpin passes. After an idle gap, a worker
  // asleep on the condition variable can start well after the dispatch (a virtual machine's host
  // deschedules an idle vCPU); waking it while the caller still prepares the work (the snapshot)
  // hides that. Measured here, 8,192 viewers, 2 threads, 15 ms idle before each tick: pass median
  // 9.5-12.0 ms without, 7.1-9.5 ms with (`bench/core --mode wake` measures the start delay).
  void prewake();
  // Long enough to cover the caller's preparation and the dispatch from another thread; short
  // enough that a prewake with no parallelFor after it wastes little.
  static constexpr std::chrono::microseconds kPrewakeSpin{3000};

 private:
  void workerLoop(unsigned worker);
  void runChunks(unsigned worker);

  std::vector<std::thread> workers_;
  unsigned size_ = 1;
  std::mutex dispatch_;  // one parallelFor at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  uint64_t prewakes_ = 0;
  std::atomic<uint64_t> dispatched_{0};  // generation_, for workers spinning without the lock
  std::atomic<bool> stopping_{false};    // stop_, likewise
  unsigned active_ = 0;
  bool stop_ = false;

  const Body* body_ = nullptr;
  uint32_t count_ = 0, grain_ = 1;
  alignas(64) std::atomic<uint32_t> cursor_{0};
  alignas(64) std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace sightline
