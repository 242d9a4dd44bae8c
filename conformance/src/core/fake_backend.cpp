// The fake backend: a fresh simulated machine (emm::FakeDriver over its own FakeSystem) for
// every clause run, so runs are deterministic and independent, and the fake's own records
// answer every observation exactly.
#include <algorithm>

#include "core/backend_factories.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"

namespace emm::conformance {
namespace {

class FakeBackend final : public Backend {
 public:
  FakeBackend() : fake_(std::make_shared<FakeDriver>()), driver_(fake_) {}

  BackendKind kind() const noexcept override { return BackendKind::fake; }
  const std::shared_ptr<Driver>& driver() const noexcept override { return driver_; }
  std::string device_name(int device) override { return fake_->device_get_name(device); }

  std::size_t device_bytes_in_use() override { return fake_->device_bytes_in_use(); }
  std::size_t memory_slack() const noexcept override { return 0; }
  std::optional<AddressRange> driver_block(CUdeviceptr pointer) override {
    for (const AddressRange& range : fake_->live_allocations()) {
      if (pointer >= range.base && pointer < range.base + std::max<std::size_t>(range.size, 1)) {
        return range;
      }
    }
    return std::nullopt;
  }
  std::optional<unsigned> managed_attach_flags(CUdeviceptr pointer) override {
    return fake_->managed_attach_flags(pointer).value_or(0u);
  }

  std::optional<std::size_t> host_allocation_count() override {
    return fake_->host_allocation_count();
  }
  std::optional<std::size_t> host_registration_count() override {
    return fake_->host_registration_count();
  }
  std::optional<HostMemoryState> host_memory(const void* address) override {
    return host_memory_from_driver(*fake_, address);
  }
  std::optional<std::size_t> invalid_frees() override { return fake_->invalid_frees(); }
  std::optional<std::size_t> invalid_accesses() override { return fake_->invalid_accesses(); }

  ImportResponse import_elsewhere(const ImportRequest& request) override {
    // A second simulated process over the same devices, with the default manager.
    Runtime importer(fake_->spawn_process(), RuntimeOptions::hermetic());
    return serve_import_request(importer, request);
  }

 private:
  std::shared_ptr<FakeDriver> fake_;
  std::shared_ptr<Driver> driver_;
};

}  // namespace

std::unique_ptr<Backend> make_fake_backend() { return std::make_unique<FakeBackend>(); }

}  // namespace emm::conformance
