// emm/fake/fake_driver.hpp — FakeDriver: a deterministic simulated CUDA driver.
//
// Runs the whole EMM system, and every conformance clause, on a machine with no GPU:
//
//   auto driver = std::make_shared<emm::FakeDriver>();           // one device, 4 GiB
//   emm::Runtime runtime(driver);
//   auto p = runtime.get_context().memalloc(4096);
//   driver->device_bytes_in_use();                               // what is allocated now
//   driver->fail_call(emm::DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY);  // next call fails
//   auto other = driver->spawn_process();                        // second process, same devices
//
// Behaviour follows the CUDA driver API, including its errors: calls that need a context throw
// CUDA_ERROR_INVALID_CONTEXT when none is current and CUDA_ERROR_CONTEXT_IS_DESTROYED when the
// current one was destroyed; freeing an address that is not a live allocation throws
// CUDA_ERROR_INVALID_VALUE (and is counted by invalid_frees()); pinning a byte already pinned
// throws CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; an allocation beyond the device's free memory
// throws CUDA_ERROR_OUT_OF_MEMORY; cuIpcGetMemHandle of an interior pointer returns its block's
// handle; cuIpcOpenMemHandle in the exporting process throws CUDA_ERROR_INVALID_CONTEXT; a
// primary context destroyed by its last release or by cuDevicePrimaryCtxReset takes this
// process's memory in it along. docs/fake-vs-gpu.md lists every place where the fake and the
// real driver could differ, and the GPU test that pins the real behaviour down.
//
// The simulation, in more detail (error codes as the real driver answered them in a probe on
// an H100, CUDA 13.0, unless docs/fake-vs-gpu.md marks them as still to be checked):
//   * Device memory is host memory behind simulated addresses: device d's allocations live in
//     [2^57 + d * 2^40, +2^40), first-fit, aligned to FakeDeviceConfig::alignment, and a freed
//     range is handed out again. Large blocks are lazily backed, so 64 MiB costs nothing until
//     written. cuMemGetInfo: free = capacity - FakeSystem::bytes_in_use(device).
//   * cuMemAlloc(0) -> CUDA_ERROR_INVALID_VALUE; cuMemFree(0) succeeds and does nothing;
//     freeing an interior pointer, an IPC mapping or a dead pointer -> CUDA_ERROR_INVALID_VALUE.
//     cuMemFree and cuMemFreeAsync accept each other's allocations (as the real driver does).
//   * cuMemGetAddressRange: the whole allocation, IPC mapping or mapped host range holding the
//     address; anything else (one past the end too) -> CUDA_ERROR_NOT_FOUND.
//   * cuPointerGetAttribute answers the attributes of emm/pointer_attribute.hpp for every
//     allocation of this process on any device (cuMemAlloc, pool, managed), its IPC mappings,
//     its cuMemHostAlloc blocks and its registered ranges (host memory's device pointer is its
//     host address, UVA); pageable or freed memory -> CUDA_ERROR_INVALID_VALUE. A registration
//     answers for exactly its registered bytes, and a cuMemHostAlloc block for its requested
//     bytes (the driver pins whole pages; the fake keeps exact bytes, as EMM-SPEC §7 asks of
//     mempin). Only CU_POINTER_ATTRIBUTE_DEVICE_POINTER needs a current context.
//   * cuMemHostGetFlags: the flags of the live cuMemHostAlloc block holding the address;
//     registered or pageable memory -> CUDA_ERROR_INVALID_VALUE.
//   * Copies and memsets must lie inside one allocation, IPC mapping or mapped host range of
//     this process, else CUDA_ERROR_INVALID_VALUE (counted by invalid_accesses()); a copy of
//     0 bytes touches nothing and succeeds. Stricter than the GPU, where an overrun into
//     neighbouring memory may go unnoticed.
//   * Managed memory (cuMemAllocManaged) is device memory that the host reaches in place, as on
//     a unified-addressing GPU: its device address is a real host address (aligned as the
//     device's pointers are), copies and memsets reach it, and it counts in cuMemGetInfo and
//     bytes_in_use like cuMemAlloc memory (a GPU counts it where it resides). Flags other than
//     exactly one of CU_MEM_ATTACH_GLOBAL / CU_MEM_ATTACH_HOST, or bytesize 0 ->
//     CUDA_ERROR_INVALID_VALUE; managed_attach_flags() reports the flag it was made with.
//     cuMemFree frees it; it cannot be exported through IPC.
//   * Mapped host memory: the device address is the host address (UVA). Stricter than a UVA
//     driver, cuMemHostGetDevicePointer insists that the memory was allocated with
//     CU_MEMHOSTALLOC_DEVICEMAP or registered with CU_MEMHOSTREGISTER_DEVICEMAP (so a plugin
//     that forgets the flag is caught); on a device without CAN_MAP_HOST_MEMORY those flags
//     throw CUDA_ERROR_NOT_SUPPORTED. cuMemHostAlloc(0) succeeds, as on the real driver.
//   * cuMemHostRegister decides overlap on bytes (two registrations of disjoint bytes of one
//     page both succeed); cuMemHostUnregister of an address inside a registration ->
//     CUDA_ERROR_INVALID_VALUE, of an address in none -> CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED.
//   * IPC: a handle names the system, device and block; garbage bytes, another system's handle
//     or a handle of a block its exporter freed -> CUDA_ERROR_INVALID_VALUE. An exporter that
//     frees a block others have mapped keeps it alive (and counted) until the last mapping
//     closes. Pool and managed memory cannot be exported (CUDA_ERROR_INVALID_VALUE). Opening on
//     another device needs FakeSystemConfig::peer_access, else CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
//     (so the EMM host stages the import). Opening a handle again in one process returns the
//     same address and counts (as the CUDA 11+ driver does): the mapping stays until it has
//     been closed as often as it was opened.
//   * Frees, unregisters, closes and destroys need no current context (as on the real driver);
//     allocations, copies, queries and creates do.
//   * Primary contexts: retain/release count per process and device; a release beyond the
//     retains -> CUDA_ERROR_INVALID_CONTEXT. When the count drops to 0, and on
//     cuDevicePrimaryCtxReset (which keeps the count), the context is destroyed: this process's
//     allocations made in it (cuMemAlloc, managed, pool), its IPC mappings, cuMemHostAlloc blocks,
//     registrations, streams, events, modules and pools on that device go, are no longer in use
//     (context_reclaims() counts them), and a later free, close or unregister of them fails as a
//     free of a dead pointer does (counted by invalid_frees()). The handle stays the same; while
//     it is current, calls that need a context throw CUDA_ERROR_CONTEXT_IS_DESTROYED, until the
//     next retain makes a fresh, empty context. So a plugin's leaks must be measured before its
//     runtime closes.
//   * Device attributes: PCI ids from FakeDeviceConfig::identity (default: bus 1 + the index, so
//     several devices are told apart), CAN_MAP_HOST_MEMORY from the config, compute capability
//     9.0, 132 multiprocessors, warp 32, 1024 threads per block, texture alignment = the device
//     alignment, unified addressing / managed memory / memory pools / IPC events / concurrent
//     kernels 1; every other valid attribute reads 0; an unknown one -> CUDA_ERROR_INVALID_VALUE,
//     an unknown device -> CUDA_ERROR_INVALID_DEVICE. Peer access between distinct devices is
//     off unless FakeSystemConfig::peer_access.
//   * Streams, events, modules and pools are handles that are never reused; destroying an
//     unknown one -> CUDA_ERROR_INVALID_HANDLE (counted by invalid_frees()). cuModuleLoadData
//     accepts any non-null image. Pools hand out device memory of their device at once and cache
//     nothing.
//
// Thread-safety: all members are safe to call concurrently (one internal mutex per system).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "emm/driver.hpp"
#include "emm/fake/fake_system.hpp"

namespace emm {

class FakeDriver : public Driver, public std::enable_shared_from_this<FakeDriver> {
 public:
  // One process over `system` (a one-device system by default).
  explicit FakeDriver(std::shared_ptr<FakeSystem> system = std::make_shared<FakeSystem>());
  explicit FakeDriver(FakeSystemConfig config);
  ~FakeDriver() override;  // a process that ends releases everything it still holds

  // Another simulated process over the same devices.
  std::shared_ptr<FakeDriver> spawn_process() const;
  const std::shared_ptr<FakeSystem>& system() const noexcept { return system_; }

  // --- what this process holds now ---------------------------------------------------------
  std::vector<AddressRange> live_allocations() const;  // cuMemAlloc/managed/pool blocks
  // The live block of those that holds `pointer` (a zero-size block holds its base); nullopt if
  // none. Logarithmic, where live_allocations() copies them all.
  std::optional<AddressRange> live_allocation_containing(CUdeviceptr pointer) const;
  std::size_t device_bytes_in_use() const;      // their sizes (unrounded), all devices
  std::size_t host_allocation_count() const;    // live cuMemHostAlloc blocks
  std::size_t host_registration_count() const;  // live cuMemHostRegister ranges
  std::size_t ipc_mapping_count() const;        // open cuIpcOpenMemHandle mappings
  std::size_t stream_count() const;
  std::size_t event_count() const;
  std::size_t module_count() const;
  std::size_t pool_count() const;
  // Frees/unregisters/closes of something not live (double free, wrong pointer), so far.
  std::size_t invalid_frees() const;
  // Copies/memsets that touched bytes outside any live allocation or mapping, so far.
  std::size_t invalid_accesses() const;
  // The flags a live cuMemHostAlloc block (by its start) was made with; nullopt if none.
  std::optional<unsigned> host_allocation_flags(const void* pointer) const;
  // The flags of a live cuMemHostRegister range (by its registered start); nullopt if none.
  std::optional<unsigned> host_registration_flags(const void* pointer) const;
  // The attach flag (CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST) of the live cuMemAllocManaged
  // allocation of this process holding `pointer`; nullopt if none holds it.
  std::optional<unsigned> managed_attach_flags(CUdeviceptr pointer) const;
  // The device whose memory holds the live cuMemAlloc/managed/pool allocation of this process
  // that `pointer` lies in (the block's own record, whatever context was current when it was
  // made or is current now); nullopt if none holds it. IPC mappings are not allocations.
  std::optional<int> allocation_device(CUdeviceptr pointer) const;
  // This process's retains of `device`'s primary context not yet released.
  int primary_ctx_retain_count(int device) const;
  // Whether that context exists (retained, and not destroyed since: cuDevicePrimaryCtxGetState's
  // "active").
  bool primary_ctx_active(int device) const;
  // What destroyed primary contexts of this process took with them, so far: what the process
  // had not freed, closed or destroyed when the context went.
  struct ContextReclaims {
    std::size_t device_allocations = 0;  // cuMemAlloc, managed and pool blocks
    std::size_t device_bytes = 0;        // their sizes (unrounded)
    std::size_t ipc_mappings = 0;        // cuIpcOpenMemHandle mappings
    std::size_t host_allocations = 0;    // cuMemHostAlloc blocks
    std::size_t host_registrations = 0;  // cuMemHostRegister ranges
    std::size_t handles = 0;             // streams, events, modules and pools
  };
  ContextReclaims context_reclaims() const;

  // --- call counting -------------------------------------------------------------------------
  std::size_t call_count(DriverCall call) const;
  void reset_call_counts();

  // --- fault injection ----------------------------------------------------------------------
  // The `nth` next call (1 = the very next) of `call` throws CudaDriverError(result), and so do
  // the following `times - 1` calls. The call then has no effect.
  void fail_call(DriverCall call, CUresult result, std::size_t nth = 1, std::size_t times = 1);
  void clear_faults();

  // --- scheduling ------------------------------------------------------------------------------
  // With `on`, every call a plugin makes from inside its bookkeeping (allocating, freeing,
  // pinning, exporting, pools, streams, memory queries; not the current-context calls, copies,
  // memsets or device queries) first yields the calling thread (std::this_thread::yield()),
  // before it takes the system's lock: a thread that reaches the driver from inside a plugin
  // gives way there, so that other threads enter the plugin while it is still inside. Threads
  // that call a plugin at once then interleave inside it for as long as they run, instead of
  // each finishing its time slice alone (ALLOC-10 and LIFE-8 on the fake backend turn it on).
  // Off by default: every yield is a system call. On a machine so busy that the process's
  // threads get less than a quarter of a core, the yields thin out (every 2nd call, then every
  // 4th, ...; fake/src/yield_pacing.hpp) so that a clause still ends in its time; turning it on
  // again starts from every call.
  void yield_in_calls(bool on) noexcept;
  // 1 while every such call yields; N when only every N-th does (the machine was busy).
  [[nodiscard]] std::uint32_t yield_stride() const noexcept;

  // --- Driver -------------------------------------------------------------------------------
  std::string implementation_name() const override { return "fake"; }
  EMM_DRIVER_METHODS(EMM_DRIVER_DECLARE_OVERRIDE)

 private:
  struct Process;  // this process's state (fake/src/fake_process.hpp)

  std::shared_ptr<FakeSystem> system_;
  std::unique_ptr<Process> process_;
};

}  // namespace emm
