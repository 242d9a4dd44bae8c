// ALLOC-7 — mempin registers the whole pages around [p, p+n) instead of exactly [p, p+n): the
// returned memory works, but a neighbouring buffer sharing the first or last page can no longer
// be pinned (the driver decides overlap on bytes: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
#include <unistd.h>

#include <cstdint>
#include <mutex>

#include "baseline_pool.hpp"
#include "emm/context.hpp"
#include "emm/driver.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                             bool mapped) override {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(pointer);
    const std::uintptr_t first = start / page * page;
    const std::uintptr_t end = (start + size + page - 1) / page * page;
    void* pages = reinterpret_cast<void*>(first);
    emm::Driver& d = driver();
    d.mem_host_register(pages, end - first, mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u);
    const auto key = start;
    emm::Finalizer unpin = [weak = std::weak_ptr<State>(state()), key, &d, pages] {
      if (auto state = weak.lock()) {
        std::lock_guard lock(state->mutex);
        state->allocations.erase(key);
      }
      d.mem_host_unregister(pages);
    };
    try {
      if (mapped) {
        auto memory = std::make_shared<emm::MappedMemory>(context(), pointer, size,
                                                          std::move(owner), std::move(unpin));
        track(key, memory);
        return emm::HostAllocation::mapped(memory->own());
      }
      auto memory = std::make_shared<emm::PinnedMemory>(context(), pointer, size, std::move(owner),
                                                        std::move(unpin));
      track(key, memory);
      return emm::HostAllocation::pinned(memory);
    } catch (...) {
      d.mem_host_unregister(pages);
      throw;
    }
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-7 mempin registers whole pages"))
