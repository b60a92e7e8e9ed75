#include "arena.h"

#include <algorithm>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sightline {

namespace {
constexpr size_t kMaxChunk = size_t{32} << 20;
size_t alignmentFor(size_t bytes) { return bytes >= kHugePageBytes ? kHugePageBytes : 64; }
}  // namespace

void* allocateLarge(size_t bytes) {
  void* p = ::operator new(bytes, std::align_val_t(alignmentFor(bytes)));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before the first touch, so the pages are huge from the start. Advice only: a kernel without
  // transparent huge pages (or with them off) refuses it and the memory works as it is.
  if (bytes >= kHugePageBytes) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void releaseLarge(void* p, size_t bytes) noexcept { ::operator delete(p, std::align_val_t(alignmentFor(bytes))); }

BlockArena::~BlockArena() {
  for (const Chunk& c : chunks_) releaseLarge(c.base, c.bytes);
}

void* BlockArena::allocate(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  auto it = free_.find(bytes);
  if (it != free_.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    return p;
  }
  if (left_ < bytes) {
    // A new chunk; what was left of the last one goes unused (less than one block).
    size_t size = std::max(nextChunk_, bytes);
    if (size >= kHugePageBytes) size = (size + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    void* base = allocateLarge(size);
    try {
      chunks_.push_back(Chunk{base, size});
    } catch (...) {
      releaseLarge(base, size);
      throw;
    }
    reserved_ += size;
    cursor_ = static_cast<char*>(base);
    left_ = size;
    nextChunk_ = std::min(kMaxChunk, nextChunk_ * 2);
  }
  void* p = cursor_;
  cursor_ += bytes;
  left_ -= bytes;
  return p;
}

void BlockArena::release(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  try {
    free_[(bytes + 63) & ~size_t{63}].push_back(p);
  } catch (...) {
    // No memory for the free list: the block stays in its chunk, unused, until the arena goes.
  }
}

}  // namespace sightline
