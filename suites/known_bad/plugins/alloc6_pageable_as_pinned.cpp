// ALLOC-6 — memhostalloc(mapped=false) returns ordinary pageable memory (std::malloc) wrapped in
// a PinnedMemory: nothing is page-locked, so transfers are neither fast nor asynchronous.
#include <cstdlib>
#include <new>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override {
    if (mapped) return BaselinePool::memhostalloc(size, mapped, portable, wc);
    void* pointer = std::malloc(size);
    if (pointer == nullptr) throw std::bad_alloc();
    return emm::HostAllocation::pinned(std::make_shared<emm::PinnedMemory>(
        context(), pointer, size, nullptr, [pointer] { std::free(pointer); }));
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-6 pageable memory as PinnedMemory"))
