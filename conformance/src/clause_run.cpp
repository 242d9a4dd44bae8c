#include "emm/conformance/clause_run.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "emm/conformance/ipc_importer.hpp"
#include "emm/errors.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm::conformance {
namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = (status == 0 && readable != nullptr) ? readable : name;
  std::free(readable);
  return result;
}

constexpr std::size_t kGpuSlack = std::size_t{8} << 20;

}  // namespace

std::string hex(unsigned long long value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", value);
  return buffer;
}

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& error) {
    return demangle(typeid(error).name()) + ": " + error.what();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return "an exception of type " + (type != nullptr ? demangle(type->name()) : std::string("?")) +
           " (not derived from std::exception)";
  }
}

ClauseRun::ClauseRun(const Clause& clause, const PluginSubject& subject, Backend backend,
                     std::shared_ptr<Driver> driver, RunOptions options)
    : clause_(clause),
      subject_(subject),
      backend_(backend),
      driver_(std::move(driver)),
      fake_(dynamic_cast<FakeDriver*>(driver_.get())),
      options_(std::move(options)) {
  if (!driver_) throw Error("ClauseRun needs a driver");
}

ClauseRun::~ClauseRun() {
  try {
    drop_runtime();
  } catch (...) {
    // A plugin's reset() failing at teardown is reported by the clause that provoked it.
  }
  if (retained_primary_ != nullptr) {
    try {
      driver_->primary_ctx_release(0);
    } catch (...) {
    }
  }
}

RuntimeOptions ClauseRun::runtime_options() const {
  RuntimeOptions options;
  // Hermetic: the certificate must not depend on the caller's EMM_* variables.
  options.getenv = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  options.ipc_supported = true;
  return options;
}

std::unique_ptr<Runtime> ClauseRun::new_runtime() const {
  auto runtime = std::make_unique<Runtime>(driver_, runtime_options());
  try {
    runtime->set_memory_manager(subject_.factory);
  } catch (...) {
    fail(
        "registering the plugin (set_memory_manager, which builds a null-context instance and "
        "reads interface_version()) failed: " +
        describe_current_exception());
  }
  return runtime;
}

std::unique_ptr<Runtime> ClauseRun::make_runtime() const { return new_runtime(); }

Runtime& ClauseRun::runtime() {
  if (!runtime_) runtime_ = new_runtime();
  return *runtime_;
}

Context& ClauseRun::context() {
  Runtime& host = runtime();
  if (Context* existing = host.find_context(0)) {
    existing->make_current();
    return *existing;
  }
  try {
    return host.get_context(0);
  } catch (...) {
    fail(
        "creating the device-0 context (which constructs the plugin with no context current, "
        "then calls initialize()) failed: " +
        describe_current_exception());
  }
}

void ClauseRun::drop_runtime() {
  if (!runtime_) return;
  std::unique_ptr<Runtime> closing = std::move(runtime_);
  closing->close();
}

std::size_t ClauseRun::device_bytes_in_use() {
  if (fake_ != nullptr) return fake_->device_bytes_in_use();
  if (driver_->ctx_get_current() == nullptr) {
    if (retained_primary_ == nullptr) retained_primary_ = driver_->primary_ctx_retain(0);
    driver_->ctx_set_current(retained_primary_);
  }
  if (!warmed_up_) {
    // The driver sets up some of its own device memory lazily (copy and memset machinery, the
    // first small-allocation heap); do that before the first figure is taken, so that it is not
    // counted against the plugin.
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
  }
  const MemoryInfo info = driver_->mem_get_info();
  return info.total - info.free;
}

std::size_t ClauseRun::memory_slack() const noexcept { return fake_ != nullptr ? 0 : kGpuSlack; }

std::optional<AddressRange> ClauseRun::driver_block(CUdeviceptr pointer) {
  if (fake_ != nullptr) {
    for (const AddressRange& range : fake_->live_allocations()) {
      if (pointer >= range.base && pointer < range.base + std::max<std::size_t>(range.size, 1)) {
        return range;
      }
    }
    return std::nullopt;
  }
  try {
    return driver_->mem_get_address_range(pointer);
  } catch (const CudaDriverError&) {
    return std::nullopt;
  }
}

void ClauseRun::flush_point(BaseCUDAMemoryManager& manager) {
  if (auto* host_only = dynamic_cast<HostOnlyCUDAMemoryManager*>(&manager)) {
    host_only->deallocations().clear();
  }
}

std::vector<std::byte> ClauseRun::read_device(CUdeviceptr pointer, std::size_t size,
                                              std::string_view what) {
  std::vector<std::byte> bytes(size);
  const std::size_t invalid_before = fake_ != nullptr ? fake_->invalid_accesses() : 0;
  try {
    if (size > 0) driver_->memcpy_dtoh(bytes.data(), pointer, size);
  } catch (...) {
    fail(str("reading ", what, " (", size, " bytes at ", hex(pointer),
             ") failed: ", describe_current_exception()));
  }
  if (fake_ != nullptr && fake_->invalid_accesses() != invalid_before) {
    fail(str("reading ", what, " (", size, " bytes at ", hex(pointer),
             ") touched memory that is not allocated: the fake driver counted an invalid access"));
  }
  return bytes;
}

void ClauseRun::write_device(CUdeviceptr pointer, const std::vector<std::byte>& bytes,
                             std::string_view what) {
  const std::size_t invalid_before = fake_ != nullptr ? fake_->invalid_accesses() : 0;
  try {
    if (!bytes.empty()) driver_->memcpy_htod(pointer, bytes.data(), bytes.size());
  } catch (...) {
    fail(str("writing ", what, " (", bytes.size(), " bytes at ", hex(pointer),
             ") failed: ", describe_current_exception()));
  }
  if (fake_ != nullptr && fake_->invalid_accesses() != invalid_before) {
    fail(str("writing ", what, " (", bytes.size(), " bytes at ", hex(pointer),
             ") touched memory that is not allocated: the fake driver counted an invalid access"));
  }
}

std::vector<ImportResult> ClauseRun::import_elsewhere(
    const std::vector<std::vector<std::byte>>& handles) {
  if (fake_ != nullptr) {
    // A second simulated process over the same devices, with the default manager.
    std::shared_ptr<FakeDriver> other = fake_->spawn_process();
    Runtime importer(other, runtime_options());
    std::vector<ImportResult> results;
    try {
      results = import_handles(importer, handles);
    } catch (...) {
      fail(str("the importing process could not open the handles: ", describe_current_exception()));
    }
    return results;
  }
  const std::string importer =
      options_.importer_path.empty() ? find_ipc_importer() : options_.importer_path;
  if (importer.empty()) {
    fail(
        "cannot find the emm-ipc-importer executable for the second process; set "
        "EMM_IPC_IMPORTER to its path");
  }
  try {
    return run_ipc_importer(importer, handles, options_.importer_timeout_s);
  } catch (const ClauseFailure&) {
    throw;
  } catch (...) {
    fail(str("the importing process (", importer, ") failed: ", describe_current_exception()));
  }
}

void ClauseRun::fail(std::string_view what) const {
  throw ClauseFailure("[" + clause_.id + "] " + std::string(what));
}

bool ClauseRun::capability_declared() const noexcept {
  return !clause_.optional || declared(subject_.capabilities, *clause_.optional);
}

void ClauseRun::not_supported(std::string_view reason) const {
  if (clause_.optional && !declared(subject_.capabilities, *clause_.optional)) {
    throw ClauseNotSupported("[" + clause_.id + "] " + std::string(reason));
  }
  if (clause_.optional) {
    fail(str("not supported (", reason, ") although the plugin declares ",
             to_string(*clause_.optional), "=true"));
  }
  fail(str("not supported (", reason, "), but ", clause_.id,
           " is not optional: an undeclared NotImplementedError is a failure"));
}

void ClauseRun::require_capability() const {
  if (!capability_declared()) {
    not_supported(str("the plugin declares ", to_string(*clause_.optional), "=false"));
  }
}

void ClauseRun::record(std::string key, std::string value) {
  properties_.emplace_back(std::move(key), std::move(value));
}

void ClauseRun::record(std::string key, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  record(std::move(key), std::string(buffer));
}

void ClauseRun::record(std::string key, std::size_t value) {
  record(std::move(key), std::to_string(value));
}

void ClauseRun::note(std::string text) { notes_.push_back(std::move(text)); }

}  // namespace emm::conformance
