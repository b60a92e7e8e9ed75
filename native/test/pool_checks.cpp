// The block arena and the thread pool under the sanitizers: blocks apart and reused, every index
// run exactly once for any grain and count, workers kept off the caller's CPU. Called from
// sanitize.cpp's main, counted in the same tally.
#include <algorithm>
#include <sched.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "arena.h"
#include "check.h"
#include "checks.h"
#include "config.h"
#include "errors.h"
#include "gather.h"
#include "select.h"
#include "simd.h"
#include "world.h"

using namespace sightline;

// BlockArena: blocks of several sizes, taken and given back at random, are 64-byte aligned, never
// overlap (each holds its own pattern until released), and released ones are reused.
void blockArenaKeepsBlocksApart() {
  std::mt19937 rng(5);
  BlockArena arena;
  struct Held {
    unsigned char* p;
    size_t bytes;
    unsigned char tag;
  };
  std::vector<Held> held;
  const size_t sizes[] = {64, 200, 4096, 10240, 70000, 3u << 20};
  uint64_t bad = 0, reused = 0;
  std::vector<void*> released;
  for (uint32_t step = 0; step < 20000; ++step) {
    if (held.empty() || rng() % 3 != 0) {
      const size_t bytes = sizes[rng() % (step < 19000 ? 5 : 6)];
      auto* p = static_cast<unsigned char*>(arena.allocate(bytes));
      bad += reinterpret_cast<uintptr_t>(p) % 64 != 0;
      reused += std::find(released.begin(), released.end(), p) != released.end();
      const unsigned char tag = static_cast<unsigned char>(rng());
      std::memset(p, tag, bytes);
      held.push_back(Held{p, bytes, tag});
    } else {
      const size_t k = rng() % held.size();
      const Held h = held[k];
      for (size_t b = 0; b < h.bytes; b += 97) bad += h.p[b] != h.tag;
      bad += h.p[h.bytes - 1] != h.tag;
      arena.release(h.p, h.bytes);
      if (released.size() < 4096) released.push_back(h.p);
      held[k] = held.back();
      held.pop_back();
    }
  }
  for (const Held& h : held)
    for (size_t b = 0; b < h.bytes; b += 97) bad += h.p[b] != h.tag;
  CHECK(bad == 0, "BlockArena: %llu misaligned or overwritten bytes", (unsigned long long)bad);
  CHECK(reused > 100, "BlockArena reused only %llu released blocks", (unsigned long long)reused);
  std::printf("block arena: 20000 allocations and releases, aligned and apart; %llu released blocks reused\n",
              (unsigned long long)reused);
}

// The pool runs every index exactly once, in the guided chunks thread_pool.h describes (each
// chunk's size follows from where it begins), inline for a single chunk, and rethrows the first
// exception with the pool usable afterwards.
void threadPoolRunsEachIndexOnce() {
  uint64_t loops = 0, chunksAt8192 = 0;
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    for (uint32_t grain : {1u, 16u, 64u}) {
      for (uint32_t count : {0u, 1u, 15u, 16u, 17u, 100u, 8192u, 10007u}) {
        std::vector<std::atomic<uint32_t>> runs(count);
        std::mutex m;
        std::vector<std::pair<uint32_t, uint32_t>> chunks;
        std::atomic<bool> offWorker{false};
        pool.parallelFor(count, grain, [&](uint32_t b, uint32_t e, unsigned w) {
          if (w >= pool.size()) offWorker = true;
          for (uint32_t i = b; i < e; ++i) runs[i].fetch_add(1, std::memory_order_relaxed);
          std::lock_guard<std::mutex> lock(m);
          chunks.emplace_back(b, e);
        });
        ++loops;
        uint32_t wrong = 0;
        for (auto& r : runs) wrong += r.load() != 1;
        CHECK(wrong == 0 && !offWorker, "pool %u threads, grain %u, count %u: %u indices not run exactly once", threads, grain, count, wrong);
        std::sort(chunks.begin(), chunks.end());
        uint32_t at = 0, badChunks = 0;
        const bool inlineRun = threads == 1 || count <= grain;
        for (auto [b, e] : chunks) {
          const uint32_t want = inlineRun ? count : b + guidedChunk(count - b, grain, 2 * threads);
          badChunks += b != at || e != want;
          at = e;
        }
        CHECK(badChunks == 0 && at == count, "pool %u threads, grain %u, count %u: %u chunks not as guided", threads, grain, count, badChunks);
        if (threads == 2 && grain == 16 && count == 8192) chunksAt8192 = chunks.size();
      }
    }
    for (uint32_t round = 0; round < 3; ++round) {
      std::atomic<uint32_t> after{0};
      try {
        pool.parallelFor(1000, 16, [&](uint32_t b, uint32_t e, unsigned) {
          if (b <= 500 && 500 < e) throw std::runtime_error("chunk 500");
        });
        CHECK(false, "pool %u threads: the exception was not rethrown", threads);
      } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "chunk 500", "pool %u threads: rethrew %s", threads, e.what());
      }
      pool.parallelFor(1000, 16, [&](uint32_t b, uint32_t e, unsigned) { after.fetch_add(e - b); });
      CHECK(after.load() == 1000, "pool %u threads: after an exception %u of 1000 indices ran", threads, after.load());
    }
  }
  CHECK(guidedChunk(UINT32_MAX, 16, 4) == UINT32_MAX / 4 && guidedChunk(5, 16, 4) == 5 && guidedChunk(100, 16, 4) == 25 &&
            guidedChunk(40, 16, 4) == 16,
        "guidedChunk arithmetic");
  std::printf("thread pool: %llu loops of 1, 2, 3 and 8 threads ran each index once, in guided chunks (%llu claims for 8,192 viewers on 2 threads); exceptions rethrown\n",
              (unsigned long long)loops, (unsigned long long)chunksAt8192);
}

// On Linux the pool's workers never run on the CPU of the thread that called parallelFor (the
// caller is pinned to each CPU in turn here, so its CPU is known), and the loops stay correct when
// the caller moves.
void threadPoolKeepsWorkersOffCallerCpu() {
#if defined(__linux__)
  cpu_set_t original;
  CPU_ZERO(&original);
  CHECK(sched_getaffinity(0, sizeof original, &original) == 0, "sched_getaffinity failed");
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &original)) cpus.push_back(c);
  CHECK(cpus.size() >= 2, "this test needs 2 CPUs; the process may use %zu", cpus.size());
  if (cpus.size() < 2) return;
  ThreadPool pool(3);  // made before the caller is pinned: its workers may use every CPU but the caller's
  uint64_t workerChunks = 0, onCallerCpu = 0, loops = 0;
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < cpus.size() && k < 4; ++k) {
      const int cpu = cpus[k];
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "pinning the caller to CPU %d failed", cpu);
      std::vector<std::atomic<uint32_t>> runs(4096);
      std::atomic<uint64_t> chunks{0}, bad{0};
      pool.parallelFor(4096, 1, [&](uint32_t b, uint32_t e, unsigned w) {
        if (w != 0) {
          chunks.fetch_add(1);
          if (sched_getcpu() == cpu) bad.fetch_add(1);
        }
        for (uint32_t i = b; i < e; ++i) runs[i].fetch_add(1, std::memory_order_relaxed);
        for (volatile int spin = 0; spin < 2000; spin = spin + 1) {
        }
      });
      uint32_t wrong = 0;
      for (auto& r : runs) wrong += r.load() != 1;
      CHECK(wrong == 0, "caller on CPU %d: %u indices not run exactly once", cpu, wrong);
      workerChunks += chunks.load(), onCallerCpu += bad.load(), ++loops;
    }
  }
  sched_setaffinity(0, sizeof original, &original);
  CHECK(onCallerCpu == 0, "%llu of %llu worker chunks ran on the caller's CPU", (unsigned long long)onCallerCpu,
        (unsigned long long)workerChunks);
  std::printf("thread pool: %llu loops with the caller pinned to each of %zu CPUs in turn; %llu worker chunks, %llu on the caller's CPU\n",
              (unsigned long long)loops, std::min<size_t>(cpus.size(), 4), (unsigned long long)workerChunks,
              (unsigned long long)onCallerCpu);
#endif
}
