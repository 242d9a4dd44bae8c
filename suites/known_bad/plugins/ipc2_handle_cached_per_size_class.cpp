// IPC-2 — the driver handle is cached per block size class: the first chunk's handle is reused
// for every later chunk of that class, so a sub-allocation from the second or third chunk carries
// another chunk's handle (its own offset is right) and another process opens the wrong memory.
#include <bit>
#include <map>
#include <mutex>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle handle = BaselinePool::get_ipc_handle(memory);
    const std::size_t size_class = std::bit_ceil(memory->owner()->size());
    CUipcMemHandle cached;
    {
      std::lock_guard lock(mutex_);
      cached = cache_.try_emplace(size_class, handle.handle()).first->second;
    }
    return emm::IpcHandle(memory, cached, handle.size(), handle.source_info(), handle.offset());
  }

 private:
  std::mutex mutex_;
  std::map<std::size_t, CUipcMemHandle> cache_;
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad IPC-2 handle cached per size class"))
