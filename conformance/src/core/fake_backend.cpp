// The fake backend: a fresh simulated machine (emm::FakeDriver over its own FakeSystem) for
// every clause run, so runs are deterministic and independent, and the fake's own records
// answer every observation exactly. Its devices are identical and have no peer access, so an
// IPC handle opened on another device than its source is staged (spec 2.8).
#include <algorithm>
#include <string>

#include "emm/conformance/backend_descriptor.hpp"
#include "emm/conformance/ipc_importer.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"

namespace emm::conformance {
namespace {

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(int devices)
      : fake_(std::make_shared<FakeDriver>(machine(devices))), driver_(fake_) {}

 private:
  BackendKind do_kind() const noexcept override { return BackendKind::fake; }
  const std::shared_ptr<Driver>& do_driver() const noexcept override { return driver_; }
  std::string do_device_name(int device) override { return fake_->device_get_name(device); }
  int do_device_count() override { return fake_->system()->device_count(); }
  void do_interleave_threads(bool on) override { fake_->yield_in_calls(on); }
  std::uint32_t do_interleaving_stride() const noexcept override { return fake_->yield_stride(); }

  std::size_t do_device_bytes_in_use() override { return fake_->device_bytes_in_use(); }
  std::size_t do_device_capacity(int device) override { return fake_->system()->capacity(device); }
  std::size_t do_device_bytes_in_use_on(int device) override {
    return fake_->system()->bytes_in_use(device);
  }
  std::size_t do_memory_slack() const noexcept override { return 0; }
  std::size_t do_memory_info_slack() const noexcept override { return 0; }
  std::optional<AddressRange> do_driver_block(CUdeviceptr pointer) override {
    return fake_->live_allocation_containing(pointer);
  }
  std::optional<int> do_block_device(CUdeviceptr pointer) override {
    return fake_->allocation_device(pointer);
  }
  std::optional<unsigned> do_managed_attach_flags(CUdeviceptr pointer) override {
    return fake_->managed_attach_flags(pointer).value_or(0u);
  }

  std::optional<std::size_t> do_page_locked_capacity() override {
    return fake_->system()->config().page_locked_capacity;
  }
  std::optional<std::size_t> do_host_allocation_count() override {
    return fake_->host_allocation_count();
  }
  std::optional<std::size_t> do_host_registration_count() override {
    return fake_->host_registration_count();
  }
  std::optional<HostMemoryState> do_host_memory(const void* address) override {
    HostMemoryState state = host_memory_from_driver(*fake_, address);
    // The fake's cuMemHostGetFlags reports the flags the block was made with.
    state.flags_as_given = state.host_alloc_flags.has_value();
    return state;
  }
  std::optional<std::size_t> do_invalid_frees() override { return fake_->invalid_frees(); }
  std::optional<std::size_t> do_invalid_accesses() override { return fake_->invalid_accesses(); }
  std::optional<std::size_t> do_driver_frees() override {
    return fake_->call_count(DriverCall::cuMemFree) +
           fake_->call_count(DriverCall::cuMemFreeAsync) +
           fake_->call_count(DriverCall::cuMemFreeHost);
  }
  std::optional<std::size_t> do_driver_calls() override {
    std::size_t calls = 0;
    for (std::size_t call = 0; call < kDriverCallCount; ++call) {
      calls += fake_->call_count(static_cast<DriverCall>(call));
    }
    return calls;
  }

  ImportResponse do_import_elsewhere(const ImportRequest& request) override {
    // A second simulated process over the same devices, with the default manager.
    Runtime importer(fake_->spawn_process(), RuntimeOptions::hermetic());
    return serve_import_request(importer, request);
  }
  std::optional<ImportResponse> do_import_through_plugin(const ImportRequest& request,
                                                         const ManagerFactory& factory) override {
    Runtime importer(fake_->spawn_process(), RuntimeOptions::hermetic());
    importer.set_memory_manager(factory);
    return serve_import_request(importer, request);
  }

  static FakeSystemConfig machine(int devices) {
    if (devices < 1 || devices > kMaxFakeDevices) {
      throw InvalidArgumentError("the fake backend has 1 to " + std::to_string(kMaxFakeDevices) +
                                 " devices; " + std::to_string(devices) + " were asked for");
    }
    FakeSystemConfig config;
    config.devices.assign(static_cast<std::size_t>(devices), FakeDeviceConfig{});
    return config;
  }

  std::shared_ptr<FakeDriver> fake_;
  std::shared_ptr<Driver> driver_;
};

std::string fake_unavailable_reason(const Capabilities& capabilities) {
  if (!capabilities.runs_on_fake_driver) {
    return "the plugin declares runs_on_fake_driver=false (it calls CUDA itself): it is "
           "certified on a GPU only";
  }
  return "";
}

// Throws InvalidArgumentError when the device count is not in [1, kMaxFakeDevices].
std::unique_ptr<Backend> make_fake_backend(const BackendSettings& settings, bool) {
  return std::make_unique<FakeBackend>(settings.fake_devices);
}

std::string no_device_note() { return ""; }

void nothing_to_prepare(bool, std::chrono::milliseconds) {}

}  // namespace

// A fake sequence costs well under a millisecond (docs/engine.md): 24 per clause.
extern const BackendDescriptor fake_backend_descriptor;  // the registry's row (core/backend.cpp)
const BackendDescriptor fake_backend_descriptor{BackendKind::fake,       "fake",
                                                fake_unavailable_reason, make_fake_backend,
                                                no_device_note,          nothing_to_prepare,
                                                /*default_budget=*/24,   /*fork_safe=*/true,
                                                /*side_by_side=*/true,   /*simulated=*/true};

}  // namespace emm::conformance
