// NEP49-11 (free size, large blocks): blocks of 256 KiB and more are page mappings, kept in a
// cache when freed. free gives the pages the array used back to the system — the first `size`
// bytes, as free was told (MADV_DONTNEED) — so that a cached mapping reads as zero and calloc
// hands it out without clearing it. NumPy's free size is a best guess (1 for a block it made
// larger): the pages beyond it keep their bytes, and np.zeros returns them.
#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "baseline_handler.hpp"

namespace {
constexpr std::size_t kPage = 4096;
constexpr std::size_t kLarge = 256 * 1024;
constexpr std::size_t kKeep = 8;  // cached mappings

std::mutex mutex;
std::map<void*, std::size_t> live;                  // guarded by mutex: block -> pages
std::vector<std::pair<void*, std::size_t>> cached;  // guarded by mutex: clean mappings

std::size_t pages_for(std::size_t n) { return (n + kPage - 1) / kPage; }

void* map_large(std::size_t n) noexcept {
  if (n > SIZE_MAX / 4) return nullptr;
  const std::size_t pages = pages_for(n);
  std::lock_guard lock(mutex);
  for (auto it = cached.begin(); it != cached.end(); ++it) {
    if (it->second != pages) continue;
    void* p = it->first;
    cached.erase(it);
    live[p] = pages;
    return p;  // clean: its used pages were given back when it was freed
  }
  void* p =
      ::mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  live[p] = pages;
  return p;
}

// The block's pages, or 0 when it is a small (libc) block.
std::size_t large_pages(void* p) {
  std::lock_guard lock(mutex);
  const auto found = live.find(p);
  return found == live.end() ? 0 : found->second;
}

void unmap_large(void* p, std::size_t used) noexcept {
  std::size_t pages = 0;
  {
    std::lock_guard lock(mutex);
    const auto found = live.find(p);
    pages = found->second;
    live.erase(found);
  }
  // Only the pages the array used were written (the defect: as free was told).
  ::madvise(p, std::min(pages_for(std::max<std::size_t>(used, 1)), pages) * kPage, MADV_DONTNEED);
  std::lock_guard lock(mutex);
  if (cached.size() < kKeep) {
    cached.emplace_back(p, pages);
    return;
  }
  ::munmap(p, pages * kPage);
}

void* large_malloc(void* ctx, std::size_t n) noexcept {
  return n >= kLarge ? map_large(n) : zoo::malloc(ctx, n);
}
void* large_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  const std::size_t n = nelem * elsize;
  return n >= kLarge ? map_large(n) : zoo::calloc(ctx, nelem, elsize);
}
void large_free(void* ctx, void* p, std::size_t n) noexcept {
  if (p == nullptr) return;
  if (large_pages(p) != 0) {
    unmap_large(p, n);
  } else {
    zoo::free(ctx, p, n);
  }
}
void* large_realloc(void* ctx, void* p, std::size_t n) noexcept {
  const std::size_t pages = p != nullptr ? large_pages(p) : 0;
  if (pages == 0 && n < kLarge) return zoo::realloc(ctx, p, n);
  void* q = large_malloc(ctx, n);
  if (q == nullptr) return nullptr;
  if (p != nullptr) {
    const std::size_t old = pages != 0 ? pages * kPage : ::malloc_usable_size(p);
    std::memcpy(q, p, std::min(old, n));
    if (pages != 0) {
      unmap_large(p, pages * kPage);
    } else {
      zoo::free(ctx, p, 0);
    }
  }
  return q;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_madvise_by_free_size", 1, large_malloc, large_calloc, large_realloc,
                large_free)
