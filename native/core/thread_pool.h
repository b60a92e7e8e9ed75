// Persistent thread pool for data-parallel loops. Workers sleep on a condition variable while idle;
// parallelFor(count, grain, fn) splits [0, count) into chunks claimed in order through an atomic
// cursor; the calling thread participates and the call returns when every chunk is done. The first
// exception thrown by any chunk is rethrown on the caller; the pool stays usable afterwards.
// ThreadPool(1) has no workers and runs inline. parallelFor calls on one pool are serialized.
//
// Chunks are guided (OpenMP's `schedule(guided)`): each claim takes the remaining count divided by
// twice the thread count, but at least `grain`. A pass over 8,192 viewers on 2 threads is then
// 21 claims instead of 512 chunks of 16, and the chunks still shrink to `grain` at the end,
// so a late or slow thread leaves at most one small chunk for the others to wait on. On the 2-core
// benchmark machine that made the town-square pass 3–6% faster at 2 threads than fixed chunks
// of 16 viewers (bench/RESULTS.md).
//
// On Linux the workers are named "sightline-N", and each parallelFor keeps them off the CPU the
// calling thread runs on: their affinity becomes the CPUs the pool's constructing thread could run
// on, less that one (set again only when the caller's CPU changes; with one CPU, left alone).
// Without it, on a 2-vCPU virtual machine the scheduler often queued the woken worker behind the
// caller on the caller's CPU while the other CPU went idle, and left it there for milliseconds: 3
// to 7 of every 20 of a Node.js process's 2-thread passes took the 1-thread time (uniform: p90
// 7.5–8.3 ms, 4.3–5.0 ms with it; bench/RESULTS.md).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sightline {

// 0 = `detected` (at least 1, at most 256); anything else is used as given (capped at 256).
unsigned resolveThreadCount(unsigned requested, unsigned detected);

// The CPUs this process may run on: on Linux the count of its affinity mask (`taskset`, a
// container's cpuset), elsewhere, or if that fails, std::thread::hardware_concurrency().
unsigned usableCpuCount();

// The size of the next guided chunk: remaining / parts, at least grain, at most remaining.
uint32_t guidedChunk(uint32_t remaining, uint32_t grain, uint32_t parts);

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

 private:
  void workerLoop(unsigned worker);
  void runChunks(unsigned worker);
  void keepWorkersOffCallerCpu();

  std::vector<std::thread> workers_;
  unsigned size_ = 1;
  std::mutex dispatch_;  // one parallelFor at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  unsigned active_ = 0;
  bool stop_ = false;
  std::vector<int> cpus_;  // the CPUs the constructing thread could run on (Linux)
  int callerCpu_ = -1;     // the CPU the workers were last kept off (Linux)

  const Body* body_ = nullptr;
  uint32_t count_ = 0, grain_ = 1;
  alignas(64) std::atomic<uint32_t> cursor_{0};
  alignas(64) std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace sightline
