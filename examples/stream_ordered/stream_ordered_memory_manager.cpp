#include "emm/examples/stream_ordered_memory_manager.hpp"

#include <cstdint>
#include <exception>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/driver.hpp"
#include "emm/errors.hpp"

namespace emm::examples {

StreamOrderedMemoryManager::StreamOrderedMemoryManager(Context* context)
    : StreamOrderedMemoryManager(context, Options{}) {}

StreamOrderedMemoryManager::StreamOrderedMemoryManager(Context* context, Options options)
    : HostOnlyCUDAMemoryManager(context), options_(options) {}  // no CUDA work here (LIFE-4)

StreamOrderedMemoryManager::~StreamOrderedMemoryManager() {
  if (context() == nullptr) return;  // the version probe created nothing
  try {
    // Before the stream and pool go: the queued frees and live allocations still use them.
    release_all();
    std::lock_guard lock(mutex_);
    if (resources_.stream != nullptr) driver().stream_destroy(resources_.stream);
    if (resources_.pool != nullptr) driver().mem_pool_destroy(resources_.pool);
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("StreamOrderedMemoryManager destructor", error.what());
  }
}

StreamOrderedMemoryManager::Resources StreamOrderedMemoryManager::resources() {
  std::lock_guard lock(mutex_);
  if (resources_.pool != nullptr) return resources_;
  Driver& d = driver();
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = context()->device();
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool = nullptr;
  try {
    pool = d.mem_pool_create(props);
  } catch (const CudaDriverError& error) {
    // Some platforms cannot export pools; the plugin does not need it (it declares no IPC).
    if (error.code() != CUDA_ERROR_NOT_SUPPORTED && error.code() != CUDA_ERROR_INVALID_VALUE) {
      throw;
    }
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    pool = d.mem_pool_create(props);
  }
  try {
    if (options_.release_threshold != 0) {
      std::uint64_t threshold = options_.release_threshold;
      d.mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    }
    resources_.stream = d.stream_create(CU_STREAM_NON_BLOCKING);
  } catch (...) {
    d.mem_pool_destroy(pool);
    throw;
  }
  resources_.pool = pool;
  handle_type_ = props.handleTypes;
  return resources_;
}

void StreamOrderedMemoryManager::initialize() {
  HostOnlyCUDAMemoryManager::initialize();  // NBEP 7: an override calls the parent's
  resources();                              // creates the pool once (LIFE-2)
}

std::shared_ptr<MemoryPointer> StreamOrderedMemoryManager::memalloc(std::size_t size) {
  const Resources r = resources();
  Driver& d = driver();
  // A failure flushes the queued frees and retries once, as the default manager does.
  const CUdeviceptr pointer = attempt_allocation([&] {
    try {
      const CUdeviceptr p = d.mem_alloc_from_pool_async(size, r.pool, r.stream);
      d.stream_synchronize(r.stream);  // the EMM interface is synchronous
      return p;
    } catch (const CudaDriverError& error) {
      // A refused request can leave the pool holding memory it reserved for it (64 MiB on an
      // H100): give back what no allocation uses, so that the refusal costs nothing (ALLOC-3)
      // and the retry after the flush finds what the pool held.
      if (error.code() == CUDA_ERROR_OUT_OF_MEMORY) d.mem_pool_trim_to(r.pool, 0);
      throw;
    }
  });
  const auto key = static_cast<std::uintptr_t>(pointer);
  auto release = [&d, pointer, stream = r.stream] {
    d.mem_free_async(pointer, stream);
    d.stream_synchronize(stream);  // the pool gives the memory back at this synchronisation
  };
  std::shared_ptr<MemoryPointer> memory;
  try {
    memory = std::make_shared<MemoryPointer>(context(), pointer, size, nullptr,
                                             deferred_finalizer(key, release, size));
  } catch (...) {
    release();
    throw;
  }
  track(key, memory);  // reset() frees it even while the caller still holds it (LIFE-7)
  return memory;
}

IpcHandle StreamOrderedMemoryManager::get_ipc_handle(const std::shared_ptr<MemoryPointer>&) {
  // IPC-7: declared absent, so say so rather than return a handle that cannot be opened.
  throw NotImplementedError(
      "stream_ordered plugin: IPC is not supported. Its memory comes from a CUmemoryPool "
      "(cuMemAllocFromPoolAsync); the legacy cuIpcGetMemHandle does not export memory from a "
      "memory pool, and an emm::IpcHandle carries only that 64-byte legacy handle (pool memory is "
      "shared with "
      "cuMemPoolExportToShareableHandle + cuMemPoolExportPointer instead). Use the pool "
      "example or the default manager for buffers that must cross processes.");
}

MemoryInfo StreamOrderedMemoryManager::get_memory_info() { return driver().mem_get_info(); }

void StreamOrderedMemoryManager::reset() {
  HostOnlyCUDAMemoryManager::reset();  // frees every live allocation, flushes the queue
  std::lock_guard lock(mutex_);
  if (resources_.pool == nullptr) return;  // LIFE-5: reset before initialize
  driver().stream_synchronize(resources_.stream);
  driver().mem_pool_trim_to(resources_.pool, 0);  // LIFE-7: nothing stays reserved
}

CUmemAllocationHandleType StreamOrderedMemoryManager::pool_handle_type() const {
  std::lock_guard lock(mutex_);
  return handle_type_;
}

}  // namespace emm::examples
