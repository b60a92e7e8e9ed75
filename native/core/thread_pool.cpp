#include "thread_pool.h"

#include <algorithm>
#include <chrono>

namespace sightline {

namespace {
// How long the caller of parallelFor waits for the other threads' last chunks before sleeping.
constexpr std::chrono::microseconds kFinishSpin{500};
// How long a worker woken by prepare() waits for the parallelFor before sleeping again.
constexpr std::chrono::microseconds kPrepareSpin{2000};
}  // namespace

unsigned resolveThreadCount(unsigned requested, unsigned detected) {
  if (requested == 0) return detected == 0 ? 1u : std::min(detected, 256u);
  return std::min(requested, 256u);
}

ThreadPool::ThreadPool(unsigned threads) {
  unsigned n = resolveThreadCount(threads, std::thread::hardware_concurrency());
  size_ = n;
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

void ThreadPool::runChunks(unsigned worker) {
  for (;;) {
    uint32_t begin = cursor_.fetch_add(grain_, std::memory_order_relaxed);
    if (begin >= count_ || failed_.load(std::memory_order_relaxed)) return;
    uint32_t end = std::min(count_, begin + grain_);
    try {
      (*body_)(begin, end, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      if (!failed_.exchange(true)) error_ = std::current_exception();
    }
  }
}

void ThreadPool::prepare() {
  if (workers_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(m_);
    ++prepared_;
  }
  wake_.notify_all();
}

void ThreadPool::workerLoop(unsigned worker) {
  uint64_t seen = 0, seenPrepared = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen || prepared_ != seenPrepared; });
      if (stop_) return;
      seenPrepared = prepared_;
      if (generation_.load(std::memory_order_relaxed) == seen) {
        // Woken by prepare(): wait for the parallelFor awake, for a while, then asleep again.
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + kPrepareSpin;
        while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        continue;
      }
      seen = generation_.load(std::memory_order_relaxed);
    }
    runChunks(worker);
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(m_);  // the caller checks active_ under it before it sleeps
      done_.notify_one();
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
  {
    std::lock_guard<std::mutex> lock(m_);
    body_ = &fn;
    count_ = count;
    grain_ = grain;
    cursor_.store(0, std::memory_order_relaxed);
    failed_.store(false);
    error_ = nullptr;
    active_.store(static_cast<unsigned>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  runChunks(0);
  // The other threads are finishing their last chunks: wait for them yielding the core for up to
  // kFinishSpin before sleeping on the condition variable (a thread that sleeps takes ~100 µs to
  // wake on a virtual machine, as long as a chunk of the pass).
  const auto spinUntil = std::chrono::steady_clock::now() + kFinishSpin;
  while (active_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < spinUntil)
    std::this_thread::yield();
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return active_.load(std::memory_order_acquire) == 0; });
    body_ = nullptr;
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace sightline
