// The plugin of the ThreadSanitizer tests (suites/thread_sanitizer): host_only_minimal's device
// memory plus a count of the bytes handed out, kept for get_memory_info-style statistics.
// Built twice: with EMM_COUNTER_LOCKED the count is updated under a mutex (a correct plugin);
// without it two threads in memalloc at once update it unsynchronised. That data race corrupts
// only a statistic: no assertion of ALLOC-10 can see it, only ThreadSanitizer does.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "emm/context.hpp"
#include "emm/driver.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace {

class CountingMemoryManager : public emm::GetIpcHandleMixin<emm::HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin::GetIpcHandleMixin;

  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    emm::Driver& driver = this->driver();
    const CUdeviceptr pointer = attempt_allocation([&] { return driver.mem_alloc(size); });
    const auto key = static_cast<std::uintptr_t>(pointer);
    emm::Finalizer finalizer = deferred_finalizer(
        key, [&driver, pointer] { driver.mem_free(pointer); }, size);
    std::shared_ptr<emm::MemoryPointer> memory;
    try {
      memory = std::make_shared<emm::MemoryPointer>(context(), pointer, size, nullptr,
                                                    std::move(finalizer));
    } catch (...) {
      driver.mem_free(pointer);
      throw;
    }
    track(key, memory);
    count(size);
    return memory;
  }
  emm::MemoryInfo get_memory_info() override { return driver().mem_get_info(); }
  int interface_version() const override { return emm::kSupportedInterfaceVersion; }

 private:
  void count(std::size_t size) {
#ifdef EMM_COUNTER_LOCKED
    std::lock_guard lock(mutex_);
#endif
    bytes_handed_out_ += size;  // without the lock: a data race between threads in memalloc
  }

  std::mutex mutex_;
  std::size_t bytes_handed_out_ = 0;  // guarded by mutex_ (with EMM_COUNTER_LOCKED)
};

constexpr emm::PluginDeclaration kDeclaration{
    .name = "thread_sanitizer counter",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true, .no_caching = true},
    .defer_cleanup_behaviour =
        "HostOnlyCUDAMemoryManager's: frees wait in the pending-deallocation queue while a guard "
        "lives"};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(CountingMemoryManager, kDeclaration)
