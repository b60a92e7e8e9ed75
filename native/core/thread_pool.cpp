#include "thread_pool.h"

#include <algorithm>
#include <cstdio>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace sightline {

unsigned usableCpuCount() {
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    int n = CPU_COUNT(&allowed);
    if (n > 0) return static_cast<unsigned>(n);
  }
#endif
  return std::thread::hardware_concurrency();
}

unsigned resolveThreadCount(unsigned requested, unsigned detected) {
  if (requested == 0) return detected == 0 ? 1u : std::min(detected, 256u);
  return std::min(requested, 256u);
}

ThreadPool::ThreadPool(unsigned threads) {
  unsigned n = resolveThreadCount(threads, usableCpuCount());
  size_ = n;
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus_.push_back(c);
#endif
  try {
    for (unsigned w = 1; w < n; ++w) workers_.emplace_back([this, w] { workerLoop(w); });
  } catch (...) {
    shutdown();  // the operating system refused a thread: join those started, then report
    throw;
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() {
  std::lock_guard<std::mutex> serial(dispatch_);
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::keepWorkersOffCallerCpu() {
#if defined(__linux__)
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu == callerCpu_ || workers_.empty()) return;
  callerCpu_ = cpu;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int c : cpus_)
    if (c != cpu) CPU_SET(c, &mask);
  if (CPU_COUNT(&mask) == 0) return;  // one CPU allowed: nowhere else to go
  // Best effort: a refusal (the process's CPUs changed since) leaves the workers where they were.
  for (auto& t : workers_) pthread_setaffinity_np(t.native_handle(), sizeof mask, &mask);
#endif
}

uint32_t guidedChunk(uint32_t remaining, uint32_t grain, uint32_t parts) {
  return std::min(remaining, std::max(grain, remaining / parts));
}

void ThreadPool::runChunks(unsigned worker) {
  const uint32_t count = count_, grain = grain_, parts = 2 * size_;
  uint32_t begin = cursor_.load(std::memory_order_relaxed);
  for (;;) {
    if (begin >= count || failed_.load(std::memory_order_relaxed)) return;
    const uint32_t end = begin + guidedChunk(count - begin, grain, parts);
    // On failure `begin` is reloaded with the cursor another thread moved, and the chunk recomputed.
    if (!cursor_.compare_exchange_weak(begin, end, std::memory_order_relaxed)) continue;
    try {
      (*body_)(begin, end, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      if (!failed_.exchange(true)) error_ = std::current_exception();
    }
    begin = cursor_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::workerLoop(unsigned worker) {
#if defined(__linux__)
  // "sightline-N" in top -H, perf and debuggers (at most 15 characters).
  char name[16];
  std::snprintf(name, sizeof name, "sightline-%u", worker);
  pthread_setname_np(pthread_self(), name);
#endif
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    runChunks(worker);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (--active_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallelFor(uint32_t count, uint32_t grain, const Body& fn) {
  if (count == 0) return;
  grain = std::max(grain, 1u);
  std::lock_guard<std::mutex> serial(dispatch_);
  if (workers_.empty() || count <= grain) {
    fn(0, count, 0);  // inline: exceptions propagate directly
    return;
  }
  // Before the new generation is published: a worker still awake from the last loop (between its
  // last chunk and its wait) takes the new one at once, and must already have its new CPUs, or it
  // runs chunks on the caller's CPU until the affinity call catches up with it.
  keepWorkersOffCallerCpu();
  {
    std::lock_guard<std::mutex> lock(m_);
    body_ = &fn;
    count_ = count;
    grain_ = grain;
    cursor_.store(0, std::memory_order_relaxed);
    failed_.store(false);
    error_ = nullptr;
    active_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  runChunks(0);
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return active_ == 0; });
    body_ = nullptr;
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace sightline
