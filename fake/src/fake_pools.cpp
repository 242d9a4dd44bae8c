// FakeDriver: the stream-ordered allocator — memory pools, cuMemAllocFromPoolAsync and
// cuMemFreeAsync. A pool hands out device memory of its device at once (a Block of kind pool)
// and keeps nothing cached, so trimming has nothing to release; the stream only has to be live.
#include <cstdint>
#include <cstring>
#include <string>

#include "fake_process.hpp"

namespace emm {

using Call = DriverCall;
using fake_detail::BlockKind;
using fake_detail::HandleTag;
using fake_detail::hex;

// --- the process's side --------------------------------------------------------------------------

void FakeDriver::Process::check_pool(DriverCall call, CUmemoryPool pool) const {
  if (!pools.contains(reinterpret_cast<std::uintptr_t>(pool))) {
    fail(call, CUDA_ERROR_INVALID_HANDLE,
         "memory pool " + hex(pool) + " is not a live pool of this process");
  }
}

// --- entry points --------------------------------------------------------------------------------

CUmemoryPool FakeDriver::mem_pool_create(const CUmemPoolProps& props) {
  // No context needed: the pool's device is in `props` (probed).
  auto lock = process_->enter(Call::cuMemPoolCreate);
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    Process::fail(Call::cuMemPoolCreate, CUDA_ERROR_INVALID_VALUE,
                  "the fake supports pools of CU_MEM_ALLOCATION_TYPE_PINNED memory at a "
                  "CU_MEM_LOCATION_TYPE_DEVICE location");
  }
  process_->check_device(Call::cuMemPoolCreate, props.location.id);
  auto pool = process_->make_handle<CUmemoryPool>(HandleTag::pool);
  process_->pools.emplace(reinterpret_cast<std::uintptr_t>(pool), props.location.id);
  return pool;
}

void FakeDriver::mem_pool_destroy(CUmemoryPool pool) {
  // Allocations still outstanding stay valid until freed, as in CUDA.
  auto lock = process_->enter(Call::cuMemPoolDestroy);
  if (process_->pools.erase(reinterpret_cast<std::uintptr_t>(pool)) == 0) {
    process_->invalid_free(Call::cuMemPoolDestroy, CUDA_ERROR_INVALID_HANDLE,
                           hex(pool) +
                               " is not a live memory pool of this process (destroyed "
                               "twice, or never created)");
  }
}

void FakeDriver::mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                        void* value) {
  auto lock = process_->enter(Call::cuMemPoolSetAttribute);
  process_->check_pool(Call::cuMemPoolSetAttribute, pool);
  if (value == nullptr) {
    Process::fail(Call::cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE, "value is null");
  }
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      return;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
      std::uint64_t reset_to = 0;
      std::memcpy(&reset_to, value, sizeof reset_to);
      if (reset_to == 0) return;
      Process::fail(Call::cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE,
                    "a high-water mark can only be reset to 0");
    }
    default:
      Process::fail(Call::cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE,
                    "attribute " + std::to_string(static_cast<int>(attribute)) + " cannot be set");
  }
}

void FakeDriver::mem_pool_trim_to(CUmemoryPool pool, std::size_t /*min_bytes_to_keep*/) {
  // The fake keeps no cached memory in a pool: freed blocks go straight back to the device.
  auto lock = process_->enter(Call::cuMemPoolTrimTo);
  process_->check_pool(Call::cuMemPoolTrimTo, pool);
}

CUdeviceptr FakeDriver::mem_alloc_from_pool_async(std::size_t bytesize, CUmemoryPool pool,
                                                  CUstream stream) {
  constexpr Call call = Call::cuMemAllocFromPoolAsync;
  auto lock = process_->enter(call);
  process_->require_context(call);
  process_->check_pool(call, pool);
  process_->check_stream(call, stream);
  if (bytesize == 0) return 0;  // succeeds with nothing allocated, as on the real driver
  const int device = process_->pools.at(reinterpret_cast<std::uintptr_t>(pool));
  return process_->allocate(call, device, bytesize, BlockKind::pool);
}

void FakeDriver::mem_free_async(CUdeviceptr pointer, CUstream stream) {
  // Like cuMemFree, any live allocation of this process is accepted: the real driver frees
  // cuMemAlloc memory through cuMemFreeAsync too (probed). The fake frees at once.
  auto lock = process_->enter(Call::cuMemFreeAsync);
  process_->check_stream(Call::cuMemFreeAsync, stream);
  process_->free_device(Call::cuMemFreeAsync, pointer);
}

}  // namespace emm
