// emm/conformance/backend.hpp — where a clause runs, and everything a check observes there.
//
// A Backend owns the driver one clause run uses and answers the questions checks ask about
// the machine rather than the plugin: how much device memory is in use, which driver block
// holds a pointer, what a host allocation was made with, whether the driver saw an invalid
// free, what another process reads through an IPC handle. Checks ask the backend; they never
// downcast to the fake. Where a backend cannot observe something, it answers std::nullopt and
// the backend itself records a named note (Backend::unobserved), which ClauseRun carries onto
// the certificate.
//
//   std::unique_ptr<Backend> backend = make_backend(BackendKind::fake);
//   std::size_t before = backend->device_bytes_in_use();
//   if (auto frees = backend->invalid_frees()) { ... }  // else: noted as not observable
//
// Two implementations: FakeBackend (fake_backend.cpp, a fresh simulated machine per run, with
// BackendSettings::fake_devices devices) and GpuBackend (gpu_backend.cpp, the process's real
// driver, with every GPU it sees). Each overrides the private do_* hooks; a new one is added as
// docs/architecture.md says ("A backend").
//
// Thread-safety: the queries are safe to call from the threads a check starts; one Backend
// serves one clause run.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/ipc_wire.hpp"
#include "emm/context.hpp"
#include "emm/driver.hpp"
#include "emm/plugin_declaration.hpp"

namespace emm::conformance {

// The driver's view of one host address (ALLOC-6, ALLOC-7).
struct HostMemoryState {
  // Page-locked: inside a cuMemHostAlloc block or a cuMemHostRegister range
  // (cuPointerGetAttribute's MEMORY_TYPE is CU_MEMORYTYPE_HOST; pageable memory has none).
  bool page_locked = false;
  // That block or range, as cuPointerGetAttribute's RANGE_START_ADDR / RANGE_SIZE report it
  // (when page_locked); std::nullopt when the driver does not answer them for host memory.
  std::optional<AddressRange> range;
  // What cuMemHostGetFlags reports for the address: a cuMemHostAlloc block's flags, or a
  // registered range's PORTABLE/DEVICEMAP bits, with DEVICEMAP added by the driver under unified
  // addressing (seen on an H100); std::nullopt when the driver refuses (pageable memory).
  std::optional<unsigned> host_alloc_flags;
  // Whether host_alloc_flags holds every flag the cuMemHostAlloc call was given (the fake's
  // records, the gpu backend's ledger), so that PORTABLE can be judged: cuMemHostGetFlags alone
  // did not report it on an H100.
  bool flags_as_given = false;
};

// host_memory() for any driver: what both backends answer.
[[nodiscard]] HostMemoryState host_memory_from_driver(Driver& driver, const void* address);

// Backend is a non-virtual interface (RMM's allocate/do_allocate shape): checks call the public
// queries, each a fixed function; an implementation overrides the private do_* hooks. Where a
// hook answers std::nullopt for something the driver was asked to observe (the queries marked
// "observation" below), the base records "<what> not observable" once, in unobserved(), and the
// ClauseRun over this backend puts it on the certificate: a check never records that itself, and
// no backend can forget it.
class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  [[nodiscard]] BackendKind kind() const noexcept { return do_kind(); }
  std::string_view name() const noexcept { return to_string(kind()); }
  // The driver the run's runtime, plugin and checks use.
  [[nodiscard]] const std::shared_ptr<Driver>& driver() const noexcept { return do_driver(); }
  // "emmkit fake device" / the GPU's name, for the certificate.
  [[nodiscard]] std::string device_name(int device) { return do_device_name(device); }
  // The devices a check may use: the fake's configured count, every GPU the driver sees.
  [[nodiscard]] int device_count() { return do_device_count(); }
  // Makes threads that call the plugin at once interleave inside it for as long as they run;
  // evaluate() turns it on for the clauses that run several threads (Clause::runs_threads,
  // the catalogue's trait `threads`). The fake driver then yields the calling thread at the
  // start of every call (FakeDriver::yield_in_calls), so that a thread reaching the driver from
  // inside the plugin gives way to others entering it: a missing lock is met, not found by luck.
  // Nothing on the gpu, whose calls take microseconds and give way by themselves.
  void interleave_threads(bool on) { do_interleave_threads(on); }
  // 1 while that interleaving is whole; N when the fake driver yielded only at every N-th call
  // because the machine was too busy for the clause's threads (FakeDriver::yield_stride).
  [[nodiscard]] std::uint32_t interleaving_stride() const noexcept {
    return do_interleaving_stride();
  }

  // --- device memory ---------------------------------------------------------------------------
  // Device memory in use now: this process's allocations on the fake (unrounded), total - free
  // from cuMemGetInfo on the gpu (device-wide: other processes count too).
  [[nodiscard]] std::size_t device_bytes_in_use() { return do_device_bytes_in_use(); }
  // The total memory of `device`, as cuMemGetInfo reports it.
  [[nodiscard]] std::size_t device_capacity(int device) { return do_device_capacity(device); }
  // Device memory in use on `device` alone (fake: every simulated process's allocations there;
  // gpu: total - free from cuMemGetInfo in that device's primary context).
  [[nodiscard]] std::size_t device_bytes_in_use_on(int device) {
    return do_device_bytes_in_use_on(device);
  }
  // What device_bytes_in_use() may drift by without a leak: 0 on the fake and on the gpu with
  // its ledger (cupti_ledger.hpp); without one, other processes and the driver's page
  // granularity move cuMemGetInfo's figures.
  [[nodiscard]] std::size_t memory_slack() const noexcept { return do_memory_slack(); }
  // How far figures cuMemGetInfo reports (a plugin's get_memory_info(), device_bytes_in_use_on)
  // may be from the allocations that moved them: 0 on the fake; on the gpu, the driver's page
  // granularity and other processes.
  [[nodiscard]] std::size_t memory_info_slack() const noexcept { return do_memory_info_slack(); }
  // The driver allocation [base, base + size) that `pointer` lies in, if the driver knows one
  // (fake: live cuMemAlloc/managed/pool blocks; gpu: cuMemGetAddressRange). std::nullopt is an
  // answer (no allocation holds it), not a gap.
  [[nodiscard]] std::optional<AddressRange> driver_block(CUdeviceptr pointer) {
    return do_driver_block(pointer);
  }
  // The device whose memory holds the driver allocation `pointer` lies in: where the block
  // lives, not what the MemoryPointer's context says (fake: the block's record; gpu:
  // cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) of an address
  // cuMemGetAddressRange knows). std::nullopt when no device allocation holds it.
  [[nodiscard]] std::optional<int> block_device(CUdeviceptr pointer) {
    return do_block_device(pointer);
  }
  // Observation: the attach flag cuMemAllocManaged was given for the managed allocation holding
  // `pointer`: CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST, 0 when no managed allocation holds it
  // (fake: its records; gpu: its ledger; no driver query reports the flag).
  [[nodiscard]] std::optional<unsigned> managed_attach_flags(CUdeviceptr pointer);

  // --- host memory -------------------------------------------------------------------------------
  // Observation: live cuMemHostAlloc blocks of this process.
  [[nodiscard]] std::optional<std::size_t> host_allocation_count();
  // Observation: live cuMemHostRegister ranges of this process.
  [[nodiscard]] std::optional<std::size_t> host_registration_count();
  // How much host memory the driver page-locks before cuMemHostAlloc answers out of memory;
  // std::nullopt where that limit is a real host's RAM, which a check must not exhaust (gpu).
  [[nodiscard]] std::optional<std::size_t> page_locked_capacity() {
    return do_page_locked_capacity();
  }
  // Observation: what the driver says of the host byte at `address` (HostMemoryState). Both
  // backends ask the driver itself (cuPointerGetAttribute, cuMemHostGetFlags), so the fake and
  // the gpu observe the same (docs/fake-vs-gpu.md).
  [[nodiscard]] std::optional<HostMemoryState> host_memory(const void* address);

  // --- what the driver saw go wrong --------------------------------------------------------------
  // Observation: frees, unregisters and closes of something not live (double frees), so far.
  [[nodiscard]] std::optional<std::size_t> invalid_frees();
  // What the last few of those were, oldest first, with their addresses ("cuMemFree(0x...)
  // refused with CUDA_ERROR_INVALID_VALUE (freed before by cuMemFree)"); empty where not
  // recorded.
  [[nodiscard]] std::vector<std::string> invalid_free_descriptions() {
    return do_invalid_free_descriptions();
  }
  // Observation: copies and memsets that touched bytes outside any live allocation, so far.
  [[nodiscard]] std::optional<std::size_t> invalid_accesses();
  // Observation: frees of device and host memory this process asked the driver for (cuMemFree,
  // cuMemFreeAsync, cuMemFreeHost), so far. Deferral (DEFER-*) forbids them while a
  // defer_cleanup() guard is open (spec §8).
  [[nodiscard]] std::optional<std::size_t> driver_frees();
  // Observation: every driver call this process made so far (REG-2: a null-context instance
  // makes none).
  [[nodiscard]] std::optional<std::size_t> driver_calls();
  // Why this process can no longer use the device, if it cannot: a sticky driver error (a
  // kernel or copy faulted on memory the plugin corrupted or freed twice) poisons every later
  // call, so the clause that left it is failed for it and its process is not reused. The fake
  // has no sticky errors (std::nullopt).
  [[nodiscard]] std::optional<std::string> unusable_device() { return do_unusable_device(); }
  // Destroys the primary contexts no runtime holds any more, as the last release of their
  // retains does in a process of its own (a check that needs "after the context was destroyed"
  // calls it after closing its runtime); false when it must not. The gpu backend keeps a retain
  // for the process (see gpu_backend.cpp) and resets the context, unless a Python interpreter
  // in the process hosts CUDA libraries of its own (numba-cuda, CuPy, PyTorch), whose state in
  // the context would be destroyed behind their back; the fake's contexts went with the runtime.
  bool destroy_released_contexts() { return do_destroy_released_contexts(); }
  // Whether the process may run another clause after this backend: not after
  // destroy_released_contexts() on the gpu, since libraries the plugin uses (a Python
  // interpreter's CuPy, PyTorch or numba) keep state in the destroyed context.
  [[nodiscard]] bool reusable() const { return do_reusable(); }

  // --- IPC ---------------------------------------------------------------------------------------
  // Serves `request` in another process (fake: a second simulated process over the same
  // devices, with its own Runtime; gpu: the emm-ipc-importer program) and returns its response:
  // one answer per item, in order. Throws emm::Error when the other process cannot run at all
  // or answers garbage.
  [[nodiscard]] ImportResponse import_elsewhere(const ImportRequest& request) {
    return do_import_elsewhere(request);
  }
  // Observation: as import_elsewhere, but the other process's runtime has the plugin under test
  // registered (made by `factory`), so that a staged open allocates its copy through the
  // importing context's plugin (spec 2.8). std::nullopt where the other process cannot host the
  // plugin (gpu: emm-ipc-importer imports with the default manager).
  [[nodiscard]] std::optional<ImportResponse> import_through_plugin(const ImportRequest& request,
                                                                    const ManagerFactory& factory);

  // --- what could not be observed ----------------------------------------------------------------
  // What the observations above could not tell since the last clear_unobserved(), once each, in
  // the order first asked ("double frees in the driver"). ClauseRun clears it when it starts and
  // adds it to its own (ClauseRun::unobserved()).
  [[nodiscard]] std::vector<std::string> unobserved() const;
  void clear_unobserved();

 private:
  // Records `what` when `answer` is std::nullopt; returns `answer`.
  template <class T>
  std::optional<T> observed(std::optional<T> answer, std::string_view what);

  [[nodiscard]] virtual BackendKind do_kind() const noexcept = 0;
  [[nodiscard]] virtual const std::shared_ptr<Driver>& do_driver() const noexcept = 0;
  virtual std::string do_device_name(int device) = 0;
  virtual int do_device_count() = 0;
  virtual void do_interleave_threads(bool on) { (void)on; }
  virtual std::uint32_t do_interleaving_stride() const noexcept { return 1; }
  virtual std::size_t do_device_bytes_in_use() = 0;
  virtual std::size_t do_device_capacity(int device) = 0;
  virtual std::size_t do_device_bytes_in_use_on(int device) = 0;
  virtual std::size_t do_memory_slack() const noexcept = 0;
  virtual std::size_t do_memory_info_slack() const noexcept = 0;
  virtual std::optional<AddressRange> do_driver_block(CUdeviceptr pointer) = 0;
  virtual std::optional<int> do_block_device(CUdeviceptr pointer) = 0;
  virtual std::optional<unsigned> do_managed_attach_flags(CUdeviceptr pointer) = 0;
  virtual std::optional<std::size_t> do_host_allocation_count() = 0;
  virtual std::optional<std::size_t> do_host_registration_count() = 0;
  virtual std::optional<std::size_t> do_page_locked_capacity() { return std::nullopt; }
  virtual std::optional<HostMemoryState> do_host_memory(const void* address) = 0;
  virtual std::optional<std::size_t> do_invalid_frees() = 0;
  virtual std::vector<std::string> do_invalid_free_descriptions() { return {}; }
  virtual std::optional<std::size_t> do_invalid_accesses() = 0;
  virtual std::optional<std::size_t> do_driver_frees() = 0;
  virtual std::optional<std::size_t> do_driver_calls() = 0;
  virtual std::optional<std::string> do_unusable_device() { return std::nullopt; }
  virtual bool do_destroy_released_contexts() { return true; }
  virtual bool do_reusable() const { return true; }
  virtual ImportResponse do_import_elsewhere(const ImportRequest& request) = 0;
  virtual std::optional<ImportResponse> do_import_through_plugin(const ImportRequest& request,
                                                                 const ManagerFactory& factory) = 0;

  // Checks may ask from the threads they start.
  mutable std::mutex unobserved_mutex_;
  std::vector<std::string> unobserved_;
};

// Why `kind` cannot certify a plugin declaring `capabilities` here; "" when it can. The GPU
// is probed once per process (loading the driver); the fake cannot run a plugin that declares
// runs_on_fake_driver=false.
[[nodiscard]] std::string backend_unavailable_reason(BackendKind kind,
                                                     const Capabilities& capabilities);

// A backend of `kind` for one clause run. Throws emm::DriverUnavailableError when it cannot
// run here (no GPU), emm::InvalidArgumentError when settings.fake_devices is not in
// [1, kMaxFakeDevices].
[[nodiscard]] std::unique_ptr<Backend> make_backend(BackendKind kind,
                                                    const BackendSettings& settings = {});

// The devices of `kind` as emm-certify names them: device 0's name, with ", N devices" when there
// are more. Starts no more of the backend than that needs (the gpu: the driver, no context).
[[nodiscard]] std::string describe_devices(BackendKind kind, const BackendSettings& settings = {});

// Readies this process to run clauses on `kind` before the first one comes, so that the first
// clause's time does not include it: on the gpu, CUDA's start (the driver and every device's
// primary context, kept for the process) and, with `will_import`, the process the IPC clauses
// import in (ipc_importer.hpp), started first so that its own CUDA start runs beside this one, and
// waited for (at most `timeout`). A failure is left for the first clause that meets it to report.
// Nothing on the fake.
void prepare_process(BackendKind kind, bool will_import, std::chrono::milliseconds timeout);

}  // namespace emm::conformance
