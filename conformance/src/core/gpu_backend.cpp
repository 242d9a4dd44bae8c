// The gpu backend: the process's real CUDA driver, loaded once (CUDA's state is per process).
// Observations come from the process's ledger (cupti_ledger.hpp): every allocation and free any
// library of the process made through the driver or the runtime, as exact as the fake's own
// records (live bytes, blocks and their devices, host blocks and their flags, managed attach
// flags, invalid frees, driver calls). Without CUPTI they come from the driver itself:
// cuMemGetInfo for memory in use (device-wide, hence a slack), cuMemGetAddressRange for blocks,
// and what only a record shows is not observable. Accesses outside allocations are not
// observable either way (a copy into a neighbouring block succeeds on a GPU). IPC goes through
// a real second process, the emm-ipc-importer program.
//
// emm-certify never calls this in its parent process: the GPU is probed and used in child
// processes only (CUDA must not be initialised before fork()).
//
// The first gpu backend of a process keeps one retain of every device's primary context for
// the rest of the process. A worker runs one clause after another, and a clause many generated
// sequences, each with a runtime of its own; without that retain each runtime would destroy
// the contexts at its end and the next would pay for new ones (a tenth of a second and more per
// device on an H100: most of a DEV clause's time with two GPUs). Memory a clause's plugin leaked
// stays allocated for the next clause, which measures against its own baseline; a clause that
// poisons the context is caught by unusable_device() and its worker is replaced.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "core/cupti_ledger.hpp"
#include "emm/conformance/backend_descriptor.hpp"
#include "emm/conformance/ipc_importer.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

// Other processes and the driver's page granularity move cuMemGetInfo's figures.
constexpr std::size_t kGpuSlack = std::size_t{8} << 20;
constexpr int kImporterTimeoutS = 60;

// Errors after which the CUDA documentation says the context (with the process's other uses
// of it) cannot go on: the failed work left the device in an unknown state.
bool is_sticky(CUresult code) {
  switch (code) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
  }
}

// Whether a Python interpreter runs in this process (a Python plugin through libemm_python):
// its CUDA libraries own the primary context as much as the kit does.
bool python_hosts_cuda() {
  using IsInitialized = int (*)();
  const auto is_initialized =
      reinterpret_cast<IsInitialized>(::dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  return is_initialized != nullptr && is_initialized() != 0;
}

// One retain of every device's primary context for the rest of the process (see the top).
void keep_primary_contexts(Driver& driver) {
  static const bool kept = [&driver] {
    int devices = 1;
    try {
      devices = std::max(driver.device_get_count(), 1);
    } catch (const Error&) {
      // Device 0 at least; a clause's own calls will report the problem.
    }
    for (int device = 0; device < devices; ++device) {
      try {
        driver.primary_ctx_retain(device);
      } catch (const Error&) {
        // The clause's own retain will report the problem.
      }
    }
    return true;
  }();
  (void)kept;
}

// The importing process of this process's clauses (ipc_importer.hpp): one for the process's
// life, so that the clauses that import pay no CUDA start of their own; started ahead of the
// first clause by prepare_gpu_process(), else by the first import. Throws when the program
// cannot be found.
ImporterProcess& importer_process() {
  static ImporterProcess importer = [] {
    std::string program = find_ipc_importer();
    if (program.empty()) {
      throw Error(
          "cannot find the emm-ipc-importer executable for the second process; set "
          "EMM_IPC_IMPORTER to its path");
    }
    return ImporterProcess(std::move(program));
  }();
  return importer;
}

class GpuBackend final : public Backend {
 public:
  GpuBackend(std::shared_ptr<Driver> driver, DriverLedger* ledger)
      : driver_(std::move(driver)), ledger_(ledger) {}
  ~GpuBackend() override {
    if (retained_primary_ == nullptr) return;
    try {
      driver_->primary_ctx_release(0);
    } catch (...) {
      // The context outlived every use; nothing is left to report.
    }
  }

 private:
  BackendKind do_kind() const noexcept override { return BackendKind::gpu; }
  const std::shared_ptr<Driver>& do_driver() const noexcept override { return driver_; }
  std::string do_device_name(int device) override { return driver_->device_get_name(device); }
  int do_device_count() override { return driver_->device_get_count(); }

  std::size_t do_device_bytes_in_use() override {
    if (ledger_ != nullptr) return ledger_->device_bytes();
    if (driver_->ctx_get_current() == nullptr) {
      if (retained_primary_ == nullptr) retained_primary_ = driver_->primary_ctx_retain(0);
      driver_->ctx_set_current(retained_primary_);
    }
    if (!warmed_up_) warm_up();
    const MemoryInfo info = driver_->mem_get_info();
    return info.total - info.free;
  }
  std::size_t do_device_capacity(int device) override { return info_on(device).total; }
  std::size_t do_device_bytes_in_use_on(int device) override {
    const MemoryInfo info = info_on(device);
    return info.total - info.free;
  }
  std::size_t do_memory_slack() const noexcept override {
    return ledger_ != nullptr ? 0 : kGpuSlack;
  }
  std::size_t do_memory_info_slack() const noexcept override { return kGpuSlack; }
  std::optional<AddressRange> do_driver_block(CUdeviceptr pointer) override {
    if (ledger_ != nullptr) {
      if (const std::optional<LedgerBlock> block = ledger_->device_block_containing(pointer)) {
        return AddressRange{block->base, block->size};
      }
    }
    // Blocks made before the ledger started, or where there is none.
    try {
      return driver_->mem_get_address_range(pointer);
    } catch (const CudaDriverError&) {
      return std::nullopt;
    }
  }
  std::optional<int> do_block_device(CUdeviceptr pointer) override {
    if (ledger_ != nullptr) {
      if (const std::optional<LedgerBlock> block = ledger_->device_block_containing(pointer);
          block && block->device >= 0) {
        return block->device;
      }
    }
    // Only a device allocation answers: the ordinal of page-locked host memory is not where a
    // block lives.
    if (!do_driver_block(pointer)) return std::nullopt;
    try {
      return static_cast<int>(
          driver_->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer));
    } catch (const CudaDriverError&) {
      return std::nullopt;
    }
  }
  // No driver query reports a managed allocation's attach flag: only the ledger knows it.
  std::optional<unsigned> do_managed_attach_flags(CUdeviceptr pointer) override {
    if (ledger_ == nullptr) return std::nullopt;
    const std::optional<LedgerBlock> block = ledger_->device_block_containing(pointer);
    return block && block->kind == LedgerBlockKind::managed ? block->flags : 0u;
  }

  std::optional<std::size_t> do_host_allocation_count() override {
    if (ledger_ == nullptr) return std::nullopt;
    return ledger_->count(LedgerBlockKind::host_alloc);
  }
  std::optional<std::size_t> do_host_registration_count() override {
    if (ledger_ == nullptr) return std::nullopt;
    return ledger_->count(LedgerBlockKind::host_registration);
  }
  std::optional<HostMemoryState> do_host_memory(const void* address) override {
    HostMemoryState state = host_memory_from_driver(*driver_, address);
    if (ledger_ == nullptr || !state.page_locked) return state;
    const std::optional<LedgerBlock> block =
        ledger_->host_block_containing(reinterpret_cast<std::uintptr_t>(address));
    if (block && block->kind == LedgerBlockKind::host_alloc) {
      // What the call was given, with the DEVICEMAP every page-locked block has under unified
      // addressing (as cuMemHostGetFlags reports it).
      state.host_alloc_flags = block->flags | CU_MEMHOSTALLOC_DEVICEMAP;
      state.flags_as_given = true;
    }
    return state;
  }
  std::optional<std::size_t> do_invalid_frees() override {
    if (ledger_ == nullptr) return std::nullopt;
    return ledger_->invalid_frees();
  }
  std::vector<std::string> do_invalid_free_descriptions() override {
    return ledger_ != nullptr ? ledger_->invalid_free_descriptions() : std::vector<std::string>{};
  }
  std::optional<std::size_t> do_invalid_accesses() override { return std::nullopt; }
  std::optional<std::size_t> do_driver_frees() override {
    if (ledger_ == nullptr) return std::nullopt;
    return ledger_->frees();
  }
  std::optional<std::size_t> do_driver_calls() override {
    if (ledger_ == nullptr) return std::nullopt;
    return ledger_->calls();
  }

  bool do_reusable() const override { return !contexts_destroyed_; }

  // cuMemGetInfo in `device`'s primary context, retained for the question only (a runtime under
  // test holds it too, so the release destroys nothing), then the caller's context again.
  MemoryInfo info_on(int device) {
    const CUcontext previous = driver_->ctx_get_current();
    const CUcontext primary = driver_->primary_ctx_retain(device);
    MemoryInfo info;
    try {
      driver_->ctx_set_current(primary);
      info = driver_->mem_get_info();
    } catch (...) {
      driver_->ctx_set_current(previous);
      driver_->primary_ctx_release(device);
      throw;
    }
    driver_->ctx_set_current(previous);
    driver_->primary_ctx_release(device);
    return info;
  }

  bool do_destroy_released_contexts() override {
    if (python_hosts_cuda()) return false;
    contexts_destroyed_ = true;
    try {
      driver_->primary_ctx_reset(0);
    } catch (const CudaDriverError&) {
      // Nothing was left to destroy.
    }
    return true;
  }

  std::optional<std::string> do_unusable_device() override {
    // The clause reset the primary context itself: whatever error the old context held went
    // with it, and retaining the primary context here would only create a new one (a tenth of
    // a second and more) in a process that runs no further clause (reusable() is false).
    if (contexts_destroyed_) return std::nullopt;
    const CUcontext before = driver_->ctx_get_current();
    std::optional<std::string> why;
    try {
      const CUcontext primary = driver_->primary_ctx_retain(0);
      try {
        driver_->ctx_set_current(primary);
        driver_->ctx_synchronize();
      } catch (const CudaDriverError& error) {
        if (is_sticky(error.code())) why = error.what();
      }
      // Put back what the clause left, whatever the synchronisation said.
      try {
        driver_->ctx_set_current(before);
      } catch (const CudaDriverError&) {
        // The clause's current context is gone; the release below still undoes the retain.
      }
      try {
        driver_->primary_ctx_release(0);
      } catch (const CudaDriverError&) {
        // Nothing more to undo.
      }
    } catch (const CudaDriverError& error) {
      if (is_sticky(error.code())) why = error.what();
    }
    return why;
  }

  ImportResponse do_import_elsewhere(const ImportRequest& request) override {
    settle_writes();
    return importer_process().import(request, std::chrono::seconds(kImporterTimeoutS));
  }
  // emm-ipc-importer imports with the default manager; it cannot be handed the plugin.
  std::optional<ImportResponse> do_import_through_plugin(const ImportRequest&,
                                                         const ManagerFactory&) override {
    return std::nullopt;
  }

  // A copy from pageable host memory may return before its DMA reached the device (cuda.h,
  // cuMemcpyHtoD): another process reading through an IPC handle must come after the work of
  // every context that holds memory, not only the current one (seen on two loaded H200s: the
  // importer read bytes the exporter had not yet written).
  void settle_writes() {
    const CUcontext current = driver_->ctx_get_current();
    if (current != nullptr) driver_->ctx_synchronize();
    if (ledger_ == nullptr) return;
    for (const CUcontext context : ledger_->contexts_holding_blocks()) {
      if (context == current) continue;
      try {
        driver_->ctx_set_current(context);
        driver_->ctx_synchronize();
      } catch (const CudaDriverError&) {
        // A context destroyed since: nothing of it to wait for.
      }
    }
    driver_->ctx_set_current(current);
  }

  // The driver sets up some of its own device memory lazily (copy and memset machinery, the
  // first small-allocation heap); do that before the first figure is taken, so that it is not
  // counted against the plugin.
  void warm_up() {
    warmed_up_ = true;
    const CUdeviceptr scratch = driver_->mem_alloc(std::size_t{1} << 20);
    std::vector<std::byte> bytes(4096);
    driver_->memset_d8(scratch, 0, std::size_t{1} << 20);
    driver_->memcpy_htod(scratch, bytes.data(), bytes.size());
    driver_->memcpy_dtoh(bytes.data(), scratch, bytes.size());
    driver_->memcpy_dtod(scratch + 8192, scratch, bytes.size());
    driver_->mem_free(scratch);
    const CUdeviceptr small = driver_->mem_alloc(256);
    driver_->mem_free(small);
    // The first managed allocation of a process sets up unified memory, which keeps about
    // 126 MiB of device memory for good (seen on an H100, driver 580): counted later, it was
    // blamed on whichever plugin's sequence happened to allocate managed memory first.
    for (const unsigned attach : {unsigned{CU_MEM_ATTACH_GLOBAL}, unsigned{CU_MEM_ATTACH_HOST}}) {
      try {
        const CUdeviceptr managed = driver_->mem_alloc_managed(4096, attach);
        driver_->memcpy_htod(managed, bytes.data(), bytes.size());
        driver_->mem_free(managed);
      } catch (const CudaDriverError&) {
        // No managed memory on this device (the MANAGED clauses say so themselves).
      }
    }
  }

  std::shared_ptr<Driver> driver_;
  DriverLedger* ledger_;  // the process's; null without CUPTI
  CUcontext retained_primary_ = nullptr;
  bool warmed_up_ = false;
  bool contexts_destroyed_ = false;
};

// Throws DriverUnavailableError when the process has no usable GPU. `keep_context`: retain every
// device's primary context for the rest of the process (what a clause's backend does; not the
// probe, which only names the devices).
std::unique_ptr<Backend> make_gpu_backend(const BackendSettings& = {}, bool keep_context = true);

void prepare_gpu_process(bool will_import, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Any failure here is left for the first clause that meets it to report.
  bool importing = false;
  if (will_import) {
    try {
      importer_process().start();  // first: its CUDA start runs beside this process's own
      importing = true;
    } catch (const std::exception&) {
    }
  }
  try {
    make_gpu_backend();  // the driver and every device's primary context, kept for the process
  } catch (const std::exception&) {
    return;
  }
  // Ready before the first clause: the importer's context then does not appear in the middle
  // of a clause's device-wide memory figures.
  if (std::string problem; importing) importer_process().wait_ready(deadline, problem);
}

std::unique_ptr<Backend> make_gpu_backend(const BackendSettings&, bool keep_context) {
  const CudaDriverProbe& gpu = CudaDriver::probe();
  if (!gpu.driver) throw DriverUnavailableError("no GPU: " + gpu.reason);
  // The ledger first, so that it sees the context's own start.
  DriverLedger* ledger = process_cupti_ledger().ledger;
  if (keep_context) keep_primary_contexts(*gpu.driver);
  return std::make_unique<GpuBackend>(gpu.driver, ledger);
}

// What the gpu backend records with, for the certificate's device line: "allocation ledger:
// CUPTI (libcupti.so.13)", or "no allocation ledger: " and why (cupti_ledger.hpp).
std::string gpu_ledger_status() {
  const CuptiLedger& cupti = process_cupti_ledger();
  return cupti.ledger != nullptr ? "allocation ledger: CUPTI (" + cupti.library + ")"
                                 : "no allocation ledger: " + cupti.reason;
}

std::string gpu_unavailable_reason(const Capabilities&) {
  const std::string& reason = CudaDriver::probe().reason;  // loads the driver once
  return reason.empty() ? "" : "no GPU: " + reason;
}

}  // namespace

// A GPU sequence costs a few milliseconds (every call is a real driver call, pinned host memory
// hundreds of microseconds: docs/engine.md): 8 per clause.
extern const BackendDescriptor gpu_backend_descriptor;  // the registry's row (core/backend.cpp)
const BackendDescriptor gpu_backend_descriptor{BackendKind::gpu,       "gpu",
                                               gpu_unavailable_reason, make_gpu_backend,
                                               gpu_ledger_status,      prepare_gpu_process,
                                               /*default_budget=*/8,   /*fork_safe=*/false,
                                               /*side_by_side=*/false, /*simulated=*/false};

}  // namespace emm::conformance
