// emm/conformance/clause_run.hpp — ClauseRun: everything one check body gets for one run.
//
// Every clause has exactly one check body, `void check(ClauseRun& run)` (registry.hpp), which
// the GoogleTest suite, the Boost.Test suite and emm-certify all call. A ClauseRun gives it:
//   * the plugin under test (subject(): name, factory, declared capabilities);
//   * the backend: a fresh emm::FakeDriver per run (fake) or the process's CudaDriver (gpu);
//   * a fresh emm::Runtime with the plugin registered (runtime(), context()), hermetic: the
//     caller's environment (EMM_CUDA_MEMORY_MANAGER, dealloc limits) never leaks in;
//   * measurements that work on both backends (device_bytes_in_use(), driver_block());
//   * the verdict helpers: fail() throws ClauseFailure whose message always starts
//     "[<ID>] "; not_supported() is legal only for an optional clause whose capability is
//     declared absent — anywhere else it is turned into a failure ("undeclared
//     NotImplementedError is a fail", spec §3);
//   * record() for figures that go on the certificate (PERF, INFO, seeds).
//
//   void check_alloc_1(ClauseRun& run) {
//     emm::Context& ctx = run.context();
//     auto p = ctx.memalloc(4096);
//     run.expect_eq(p->size(), std::size_t{4096}, "memalloc(4096)->size()");
//   }
//
// Not thread-safe: one ClauseRun belongs to one check body (which may start threads that use
// the driver and the context, but not the ClauseRun's verdict helpers).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/outcome.hpp"
#include "emm/conformance/plugin_subject.hpp"
#include "emm/driver.hpp"
#include "emm/runtime.hpp"

namespace emm {
class FakeDriver;
}

namespace emm::conformance {

// A check found a violation. what() starts "[<ID>] " and says what was expected and seen.
class ClauseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The clause does not apply: an optional capability declared absent (legal use only).
class ClauseNotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The driver REG-2 builds its version-probe instance over, and how to read what it was asked.
struct ProbeDriver {
  std::shared_ptr<Driver> driver;
  // The driver calls made so far, e.g. "cuMemAlloc x1"; "" when none.
  std::function<std::string()> calls_made;
};

struct RunOptions {
  // REG-2's driver. Default: a FakeDriver whose call counters must stay 0. The GoogleTest
  // flavour installs a testing::StrictMock<emm::MockDriver> with no expectations.
  std::function<ProbeDriver()> make_probe_driver;
  // The emm-ipc-importer executable for IPC checks on the gpu backend; empty: located by
  // find_ipc_importer() (importer.hpp).
  std::string importer_path;
  // Seconds the importer process may take before IPC checks fail.
  int importer_timeout_s = 60;
};

// What the importing process read for one serialized handle (IPC-1/2 end to end).
struct ImportResult {
  bool ok = false;
  std::vector<std::byte> bytes;  // the view's bytes, as the importer read them
  std::string error;             // why the import failed (when !ok)
};

// Concatenates its arguments with operator<< (messages without <format>).
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "0x7f00001000".
std::string hex(unsigned long long value);

class ClauseRun {
 public:
  ClauseRun(const Clause& clause, const PluginSubject& subject, Backend backend,
            std::shared_ptr<Driver> driver, RunOptions options = {});
  ~ClauseRun();  // closes the runtimes it made, then lets the driver go
  ClauseRun(const ClauseRun&) = delete;
  ClauseRun& operator=(const ClauseRun&) = delete;

  const Clause& clause() const noexcept { return clause_; }
  const std::string& id() const noexcept { return clause_.id; }
  const PluginSubject& subject() const noexcept { return subject_; }
  const Capabilities& capabilities() const noexcept { return subject_.capabilities; }
  const RunOptions& options() const noexcept { return options_; }
  Backend backend() const noexcept { return backend_; }
  bool on_fake() const noexcept { return backend_ == Backend::fake; }

  Driver& driver() const noexcept { return *driver_; }
  const std::shared_ptr<Driver>& shared_driver() const noexcept { return driver_; }
  // The fake driver (null on the gpu backend).
  FakeDriver* fake() const noexcept { return fake_; }

  // --- the host ------------------------------------------------------------------------------
  // Hermetic options: no environment variables, IPC supported.
  RuntimeOptions runtime_options() const;
  // The run's runtime with the plugin registered (created on first use).
  Runtime& runtime();
  // The runtime's device-0 context: created (plugin constructed, initialize() called) on first
  // use, made current on the calling thread every time. Later calls do not call initialize()
  // again, so checks control how often it runs (LIFE-2, PERF-2).
  Context& context();
  // Another runtime over the same driver with the plugin registered (LIFE-4, LIFE-8).
  std::unique_ptr<Runtime> make_runtime() const;
  // Closes and destroys runtime(); the next runtime()/context() makes a new one.
  void drop_runtime();

  // --- measurements --------------------------------------------------------------------------
  // Device memory in use: this process's allocations on the fake (unrounded), total - free
  // from cuMemGetInfo on the gpu (makes the primary context current if none is).
  std::size_t device_bytes_in_use();
  // What device_bytes_in_use() may drift by without a leak: 0 on the fake; on the gpu, other
  // processes and the driver's page granularity (8 MiB).
  std::size_t memory_slack() const noexcept;
  // The driver allocation [base, base + size) that `pointer` lies in, if the driver knows one
  // (fake: live cuMemAlloc/pool blocks; gpu: cuMemGetAddressRange).
  std::optional<AddressRange> driver_block(CUdeviceptr pointer);
  // A flush point for deferred frees: the HostOnlyCUDAMemoryManager queue of `manager` is
  // cleared (others have no queue the kit can name: nothing is done).
  static void flush_point(BaseCUDAMemoryManager& manager);

  // Reads/writes device memory through the driver; a driver error becomes a failure that says
  // `what` was being accessed.
  std::vector<std::byte> read_device(CUdeviceptr pointer, std::size_t size, std::string_view what);
  void write_device(CUdeviceptr pointer, const std::vector<std::byte>& bytes,
                    std::string_view what);

  // --- IPC -----------------------------------------------------------------------------------
  // Opens every serialized handle in another process (fake: driver->spawn_process() with its
  // own Runtime and the default manager; gpu: the emm-ipc-importer process) and returns what it
  // read, one entry per handle, in order. Throws ClauseFailure when the importer cannot run.
  std::vector<ImportResult> import_elsewhere(const std::vector<std::vector<std::byte>>& handles);

  // --- verdict -------------------------------------------------------------------------------
  [[noreturn]] void fail(std::string_view what) const;
  void check(bool condition, std::string_view what) const {
    if (!condition) fail(what);
  }
  template <class T, class U>
  void expect_eq(const T& seen, const U& expected, std::string_view what) const {
    if (!(seen == expected)) fail(str(what, ": expected ", expected, ", seen ", seen));
  }
  // Legal only for an optional clause whose capability is declared absent; otherwise fails.
  [[noreturn]] void not_supported(std::string_view reason) const;
  // For optional clauses: not_supported when the capability is declared absent.
  void require_capability() const;
  // True when this clause's optional capability is declared (true for non-optional clauses).
  bool capability_declared() const noexcept;

  void record(std::string key, std::string value);
  void record(std::string key, double value);
  void record(std::string key, std::size_t value);
  const std::vector<Property>& properties() const noexcept { return properties_; }
  // A remark for a passing result's message (e.g. "no block was shared: not a pool").
  void note(std::string text);
  const std::vector<std::string>& notes() const noexcept { return notes_; }

 private:
  std::unique_ptr<Runtime> new_runtime() const;

  const Clause& clause_;
  PluginSubject subject_;
  Backend backend_;
  std::shared_ptr<Driver> driver_;
  FakeDriver* fake_ = nullptr;
  RunOptions options_;
  std::unique_ptr<Runtime> runtime_;
  CUcontext retained_primary_ = nullptr;  // gpu: retained for device_bytes_in_use()
  bool warmed_up_ = false;                // gpu: the driver's lazy set-up is done
  std::vector<Property> properties_;
  std::vector<std::string> notes_;
};

// Describes the exception being handled: "emm::CudaDriverError: cuMemAlloc failed: ...".
// Call only inside a catch block.
std::string describe_current_exception();

}  // namespace emm::conformance
