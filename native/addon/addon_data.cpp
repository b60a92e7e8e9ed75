// AddonData: thread pools shared per thread count, passes in flight, the environment cleanup hook.
#include "addon_data.h"

#include <iterator>
#include <thread>

namespace sightline::addon {

std::shared_ptr<ThreadPool> AddonData::pool(unsigned threads) {
  unsigned n = resolveThreadCount(threads, usableCpuCount());
  std::lock_guard<std::mutex> lock(m);
  for (auto it = pools.begin(); it != pools.end();) it = it->second.expired() ? pools.erase(it) : std::next(it);
  std::shared_ptr<ThreadPool> p = pools[n].lock();
  if (!p) {
    p = std::make_shared<ThreadPool>(n);
    pools[n] = p;
  }
  return p;
}

void AddonData::begin() {
  std::lock_guard<std::mutex> lock(m);
  ++inFlight;
}

void AddonData::end() {
  std::lock_guard<std::mutex> lock(m);
  if (--inFlight == 0) idle.notify_all();
}

void AddonData::cleanup(void* arg) {
  auto* self = static_cast<AddonData*>(arg);
  std::unique_lock<std::mutex> lock(self->m);
  self->idle.wait(lock, [&] { return self->inFlight == 0; });
  auto pools = std::move(self->pools);
  lock.unlock();
  // Join the workers now; the worlds still holding a pool are finalized later in the teardown.
  for (auto& [n, weak] : pools)
    if (auto p = weak.lock()) p->shutdown();
}

}  // namespace sightline::addon
