// emm/examples/pinned_handler.hpp — a NumPy data-memory handler (NEP 49) whose arrays live in
// CUDA page-locked host memory from an EMM plugin: every block is the plugin's memhostalloc()
// (optionally mapped into the device's address space), and is given back through the plugin's
// finalizers when NumPy frees it. NumPy arrays made under it copy to the device at full PCIe
// speed and can overlap copies with kernels (docs/performance.md).
//
//   emm::examples::PinnedHandler& pinned = emm::examples::PinnedHandler::instance(false);
//   emm::nep49::Handler* handler = pinned.handler();        // for PyDataMem_SetHandler
//
// From Python (python/emm_nep49_pinned.py):
//
//   with emm_pinned():                   # or emm_pinned(mapped=True)
//       a = np.empty((4096, 4096))       # page-locked
//
// Which plugin: the Runtime's, chosen as EMM_CUDA_MEMORY_MANAGER chooses it (unset or
// "default": the reference NumbaCUDAMemoryManager; else the path of a plugin library). Which
// driver: the process's CUDA driver (Runtime::default_runtime()), unless a driver was bound with
// bind_driver() — emm-certify binds each backend's driver (the fake's in CI) through the
// library's emm_nep49_bind_driver.
//
// Ownership: the two instances (plain and mapped) are immortal, as NEP 49 asks of handlers;
// each owns the HostAllocation of every block it handed out until NumPy frees it, and every
// Runtime it was bound to (a block keeps its runtime's driver alive).
// Thread-safety: the four functions may be called from any thread, with or without the GIL
// (one mutex); they never throw: failure is NULL (NEP49-14).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "emm/host_allocation.hpp"
#include "emm/nep49/handler.hpp"
#include "emm/runtime.hpp"

namespace emm::examples {

class PinnedHandler {
 public:
  // The plain (mapped == false) or mapped handler of this process.
  static PinnedHandler& instance(bool mapped);

  emm::nep49::Handler* handler() noexcept { return &handler_; }
  // The runtime the next blocks come from: `driver`'s own, or (null) the process's default.
  static void bind_driver(const std::shared_ptr<Driver>* driver);
  // Blocks come from `runtime` (not owned: it must outlive them) until the next bind; for
  // benchmarks and tests that build their own Runtime with a chosen manager. Null unbinds.
  static void use_runtime(Runtime* runtime);

  // Blocks handed out and not yet freed.
  std::size_t live_blocks() const;

 private:
  explicit PinnedHandler(bool mapped);

  static void* malloc(void* ctx, std::size_t size) noexcept;
  static void* calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept;
  static void* realloc(void* ctx, void* ptr, std::size_t size) noexcept;
  static void free(void* ctx, void* ptr, std::size_t size) noexcept;

  void* allocate(std::size_t size);  // throws
  void release(void* ptr);           // throws

  bool mapped_;
  emm::nep49::Handler handler_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, HostAllocation> blocks_;
};

}  // namespace emm::examples
