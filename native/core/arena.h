// Memory for the pass's large per-viewer structures, laid out for the TLB. A pass touches every
// viewer's ghost table and packet once, a few kilobytes each: tens of megabytes in 4 KB pages
// cost a page walk per table. Blocks here come from large chunks that ask for transparent huge
// pages (madvise MADV_HUGEPAGE on Linux, where the system allows it; elsewhere ordinary memory).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace sightline {

// Bytes a vector holds (its capacity): for World::memoryBytes.
template <typename T>
uint64_t vectorBytes(const std::vector<T>& v) {
  return uint64_t{v.capacity()} * sizeof(T);
}

// Huge-page alignment and the smallest chunk that asks for huge pages.
constexpr size_t kHugePageBytes = size_t{2} << 20;

// Allocates `bytes` (a multiple of 64) aligned to 2 MB when at least 2 MB, else to 64 bytes, and
// asks for huge pages when at least 2 MB. Released with releaseLarge(p, bytes). Throws
// std::bad_alloc.
void* allocateLarge(size_t bytes);
void releaseLarge(void* p, size_t bytes) noexcept;

// Fixed-size blocks for one World's ghost tables: carved from chunks that grow geometrically
// (64 KB, then doubling up to 32 MB; from 2 MB on they ask for huge pages), recycled through a
// free list per block size. Chunks are freed with the arena. Not thread-safe: tables are made and
// dropped on the thread that owns the World, never during a pass.
class BlockArena {
 public:
  BlockArena() = default;
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;
  ~BlockArena();
  // A block of `bytes` (rounded up to 64), 64-byte aligned, contents unspecified.
  void* allocate(size_t bytes);
  // Returns a block allocate(bytes) gave.
  void release(void* p, size_t bytes) noexcept;
  // Bytes held in chunks.
  size_t reserved() const { return reserved_; }

 private:
  struct Chunk {
    void* base;
    size_t bytes;
  };
  std::vector<Chunk> chunks_;
  std::map<size_t, std::vector<void*>> free_;
  char* cursor_ = nullptr;
  size_t left_ = 0;
  size_t nextChunk_ = size_t{64} << 10;
  size_t reserved_ = 0;
};

}  // namespace sightline
