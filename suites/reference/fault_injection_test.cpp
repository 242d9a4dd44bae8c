// Fault injection: every driver call the reference system makes, failing once, at each of its
// occurrences in a representative workload, in either of two simulated processes.
//
// The workload (Workload::run) is what Numba does with the default manager: create a context,
// memalloc and free through the deferral queue, memhostalloc mapped and pinned, mempin, memset,
// get_memory_info, export an IPC handle and open it in a second process (directly, then staged
// on another device), defer_cleanup, streams, events and a module, reset and close. A clean run
// counts each DriverCall per process (FakeDriver::call_count); then, for every call in
// driver_calls.hpp and every occurrence n of it, a fresh machine runs the workload with the n-th
// call failing (FakeDriver::fail_call), and the test asserts:
//   * typed: every exception reaching the caller is exactly CudaDriverError naming that call
//     and carrying the injected CUresult (nothing else escapes, nothing crashes);
//   * not lost: the failure reached the caller, was reported through emm::Diagnostics (where
//     the reference cannot throw: finalizers, destructors), or was handled as documented (the
//     out-of-memory retry of memalloc, mapped memhostalloc and mapped mempin: NBEP 7);
//   * nothing leaked: once both runtimes are closed and every object dropped, each process's
//     device allocations, host allocations, registrations, IPC mappings, streams, events,
//     modules, pools and primary-context retains are back to the baseline. A release the driver
//     itself refused (cuMemFree, cuStreamDestroy, ... failing) may leave exactly that one object
//     behind: the driver still holds it and said so, and the reference does not retry.
// The calls come from the driver's own list, so a new entry point is covered as soon as the
// workload makes it; the calls it never makes are named in kNeverMade and checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using conformance::testing_detail::type_name;

// Every entry point of driver_calls.hpp, in its order.
std::vector<DriverCall> all_driver_calls() {
  std::vector<DriverCall> calls;
  for (std::size_t i = 0; i < kDriverCallCount; ++i) calls.push_back(static_cast<DriverCall>(i));
  return calls;
}

// The calls the workload never makes, because nothing in the reference system makes them:
// cuInit is CudaDriver::load()'s own; the driver version, device names, cuCtxGetDevice,
// cuCtxSynchronize, primary-context resets, host<->device copies, managed memory, the
// stream-ordered pool calls and the host-flag and pointer-attribute queries are for plugins,
// the probes and the checks.
const std::set<std::string> kNeverMade = {"cuInit",
                                          "cuDriverGetVersion",
                                          "cuDeviceGetName",
                                          "cuDevicePrimaryCtxReset",
                                          "cuCtxGetDevice",
                                          "cuCtxSynchronize",
                                          "cuMemAllocManaged",
                                          "cuMemcpyHtoD",
                                          "cuMemcpyDtoH",
                                          "cuMemPoolCreate",
                                          "cuMemPoolDestroy",
                                          "cuMemPoolSetAttribute",
                                          "cuMemPoolTrimTo",
                                          "cuMemAllocFromPoolAsync",
                                          "cuMemFreeAsync",
                                          "cuMemHostGetFlags",
                                          "cuPointerGetAttribute"};

// What a process holds, as FakeDriver counts it.
struct Held {
  std::size_t allocations = 0;  // live device blocks
  std::size_t device_bytes = 0;
  std::size_t host_allocations = 0;
  std::size_t registrations = 0;
  std::size_t ipc_mappings = 0;
  std::size_t streams = 0;
  std::size_t events = 0;
  std::size_t modules = 0;
  std::size_t pools = 0;
  std::size_t retains = 0;  // primary-context retains, all devices

  static Held of(const FakeDriver& driver, int devices) {
    Held held;
    held.allocations = driver.live_allocations().size();
    held.device_bytes = driver.device_bytes_in_use();
    held.host_allocations = driver.host_allocation_count();
    held.registrations = driver.host_registration_count();
    held.ipc_mappings = driver.ipc_mapping_count();
    held.streams = driver.stream_count();
    held.events = driver.event_count();
    held.modules = driver.module_count();
    held.pools = driver.pool_count();
    for (int device = 0; device < devices; ++device) {
      held.retains += static_cast<std::size_t>(driver.primary_ctx_retain_count(device));
    }
    return held;
  }
};

// The one kind of object a refused release leaves behind, if `call` releases one.
std::optional<std::size_t Held::*> released_by(DriverCall call) {
  switch (call) {
    case DriverCall::cuMemFree:
      return &Held::allocations;
    case DriverCall::cuMemFreeHost:
      return &Held::host_allocations;
    case DriverCall::cuMemHostUnregister:
      return &Held::registrations;
    case DriverCall::cuIpcCloseMemHandle:
      return &Held::ipc_mappings;
    case DriverCall::cuStreamDestroy:
      return &Held::streams;
    case DriverCall::cuEventDestroy:
      return &Held::events;
    case DriverCall::cuModuleUnload:
      return &Held::modules;
    case DriverCall::cuDevicePrimaryCtxRelease:
      return &Held::retains;
    case DriverCall::cuMemPoolDestroy:
      return &Held::pools;
    default:
      return std::nullopt;
  }
}

// "allocations 1 (baseline 0), ..." for every count that differs from the baseline.
std::string leaks(const Held& now, const Held& baseline) {
  static const std::array<std::pair<const char*, std::size_t Held::*>, 10> kFields = {{
      {"device allocations", &Held::allocations},
      {"device bytes", &Held::device_bytes},
      {"host allocations", &Held::host_allocations},
      {"host registrations", &Held::registrations},
      {"IPC mappings", &Held::ipc_mappings},
      {"streams", &Held::streams},
      {"events", &Held::events},
      {"modules", &Held::modules},
      {"pools", &Held::pools},
      {"primary-context retains", &Held::retains},
  }};
  std::string out;
  for (const auto& [name, field] : kFields) {
    if (now.*field != baseline.*field) {
      out += std::string(out.empty() ? "" : ", ") + name + " " + std::to_string(now.*field) +
             " (baseline " + std::to_string(baseline.*field) + ")";
    }
  }
  return out;
}

// The failure to inject, in which process.
struct Fault {
  DriverCall call;
  CUresult result;
  std::size_t nth;
  bool in_importer;
};

// One run of the workload over a fresh two-device machine (no peer access, so the second
// process opens the handle directly on device 0 and staged on device 1).
class Workload {
 public:
  static constexpr int kDevices = 2;

  explicit Workload(std::optional<Fault> fault) : fault_(fault) {
    FakeSystemConfig config;
    config.devices = {FakeDeviceConfig{}, FakeDeviceConfig{}};
    exporter_ = std::make_shared<FakeDriver>(config);
    importer_ = exporter_->spawn_process();
    baseline_exporter_ = Held::of(*exporter_, kDevices);
    baseline_importer_ = Held::of(*importer_, kDevices);
    if (fault_) {
      FakeDriver& target = fault_->in_importer ? *importer_ : *exporter_;
      target.fail_call(fault_->call, fault_->result, fault_->nth);
    }
  }

  void run() {
    Diagnostics::Capture capture;
    {
      Runtime exporting(exporter_, RuntimeOptions::hermetic());
      Runtime importing(importer_, RuntimeOptions::hermetic());
      run_steps(exporting, importing);
    }  // both runtimes closed again (a no-op after close(), unless close() failed)
    for (const DiagnosticEvent& event : capture.events()) {
      if (event.kind == DiagnosticEvent::Kind::ignored_exception) {
        reported_.push_back(event.where + ": " + event.message);
      }
    }
  }

  const FakeDriver& exporter() const { return *exporter_; }
  const FakeDriver& importer() const { return *importer_; }
  const Held& baseline(bool importer) const {
    return importer ? baseline_importer_ : baseline_exporter_;
  }
  // Exceptions that reached the workload's caller, as "step: type: what()".
  const std::vector<std::string>& escaped() const { return escaped_; }
  // Driver errors of the injected kind that reached the caller.
  std::size_t surfaced() const { return surfaced_; }
  // Failures the reference reported through Diagnostics instead of throwing.
  const std::vector<std::string>& reported() const { return reported_; }

 private:
  template <class F>
  void step(const char* name, F&& body) {
    try {
      body();
    } catch (const CudaDriverError& error) {
      if (fault_ && error.call() == driver_call_name(fault_->call) &&
          error.code() == fault_->result) {
        ++surfaced_;
      } else {
        escaped_.push_back(std::string(name) + ": emm::CudaDriverError: " + error.what());
      }
    } catch (const std::exception& error) {
      escaped_.push_back(std::string(name) + ": " + type_name(typeid(error)) + ": " + error.what());
    } catch (...) {
      escaped_.push_back(std::string(name) + ": an exception not derived from std::exception");
    }
  }

  void run_steps(Runtime& exporting, Runtime& importing) {
    Context* context = nullptr;
    step("get_context", [&] { context = &exporting.get_context(0); });
    if (context == nullptr) step("get_context again", [&] { context = &exporting.get_context(0); });
    if (context == nullptr) {
      step("close", [&] { exporting.close(); });
      return;
    }

    // Twelve frees: the eleventh pending one flushes the queue (DEALLOC-1), the twelfth waits.
    for (int i = 0; i < 12; ++i) {
      step("memalloc and free", [&] {
        auto memory = context->memalloc(4096);
        memory->memset(0x5a);
      });
    }
    std::shared_ptr<MemoryPointer> exported;
    step("memalloc", [&] { exported = context->memalloc(std::size_t{1} << 20); });

    HostAllocation mapped;
    HostAllocation pinned;
    step("memhostalloc mapped", [&] { mapped = context->memhostalloc(8192, true); });
    step("memhostalloc pinned", [&] { pinned = context->memhostalloc(8192, false, true, true); });
    auto buffer = std::make_shared<std::vector<std::byte>>(3 * 4096);
    HostAllocation pin;
    HostAllocation mapped_pin;
    step("mempin", [&] { pin = context->mempin(buffer, buffer->data(), 4096); });
    step("mempin mapped",
         [&] { mapped_pin = context->mempin(buffer, buffer->data() + 8192, 4096, true); });
    step("free pins", [&] {
      pin = HostAllocation();  // unpinned at once (ALLOC-7)
      mapped_pin = HostAllocation();
    });
    step("get_memory_info", [&] { context->get_memory_info(); });

    std::vector<std::byte> bytes;
    if (exported) {
      step("get_ipc_handle", [&] {
        bytes = context->get_ipc_handle(exported->view(4096 + 3, 4096 + 3 + 1000)).serialize();
      });
    }
    if (!bytes.empty()) import(importing, bytes);

    step("defer_cleanup", [&] {
      CleanupGuard guard = context->defer_cleanup();
      for (int i = 0; i < 12; ++i) context->memalloc(512);  // all queued, none freed
    });

    std::shared_ptr<Stream> stream;
    std::shared_ptr<Event> event;
    std::shared_ptr<Module> module;
    static const char kImage[] = "a module image the fake accepts";
    step("create_stream", [&] { stream = context->create_stream(); });
    step("create_event", [&] { event = context->create_event(); });
    step("record and synchronize", [&] {
      if (event) event->record(stream.get());
      if (stream) stream->synchronize();
      if (event) event->synchronize();
    });
    step("load_module", [&] { module = context->load_module(kImage); });
    step("drop a stream", [&] { context->create_stream().reset(); });  // queued destroy

    step("reset", [&] { context->reset(); });
    step("memalloc after reset", [&] { exported = context->memalloc(4096); });
    // The caller still holds a pointer, host memory, a stream, an event and a module: close()
    // releases them all, and dropping them afterwards touches nothing.
    step("close", [&] { exporting.close(); });
    step("drop what outlived close", [&] {
      exported.reset();
      mapped = HostAllocation();
      pinned = HostAllocation();
      stream.reset();
      event.reset();
      module.reset();
    });
  }

  // The second process: a direct open on the exporting device, a staged one on the other.
  void import(Runtime& importing, const std::vector<std::byte>& bytes) {
    std::optional<IpcHandle> handle;
    step("deserialize", [&] { handle.emplace(IpcHandle::deserialize(bytes)); });
    if (!handle) return;
    step("open direct", [&] {
      auto view = handle->open(importing.get_context(0));
      view->memset(0x11, 16);
    });
    step("close direct", [&] {
      if (handle->is_open()) handle->close();
    });
    std::shared_ptr<MemoryPointer> copy;
    step("open staged", [&] {
      if (handle->is_open()) handle->close();  // a failed close left it open: try again
      copy = handle->open(importing.get_context(1));
    });
    step("close staged", [&] {
      if (handle->is_open()) handle->close();
      copy.reset();
    });
    step("close importer", [&] { importing.close(); });
  }

  std::optional<Fault> fault_;
  std::shared_ptr<FakeDriver> exporter_;
  std::shared_ptr<FakeDriver> importer_;
  Held baseline_exporter_;
  Held baseline_importer_;
  std::vector<std::string> escaped_;
  std::size_t surfaced_ = 0;
  std::vector<std::string> reported_;
};

// How often each process makes each call in a clean run.
struct CleanCounts {
  std::array<std::size_t, kDriverCallCount> exporter{};
  std::array<std::size_t, kDriverCallCount> importer{};
};

const CleanCounts& clean_counts() {
  static const CleanCounts counts = [] {
    Workload clean(std::nullopt);
    clean.run();
    CleanCounts out;
    for (DriverCall call : all_driver_calls()) {
      out.exporter[static_cast<std::size_t>(call)] = clean.exporter().call_count(call);
      out.importer[static_cast<std::size_t>(call)] = clean.importer().call_count(call);
    }
    return out;
  }();
  return counts;
}

std::size_t clean_count(DriverCall call, bool importer) {
  const CleanCounts& counts = clean_counts();
  return (importer ? counts.importer : counts.exporter)[static_cast<std::size_t>(call)];
}

TEST(FaultInjection, CleanWorkloadSucceedsAndLeavesNothing) {
  Workload clean(std::nullopt);
  clean.run();
  EXPECT_THAT(clean.escaped(), ::testing::IsEmpty());
  EXPECT_THAT(clean.reported(), ::testing::IsEmpty());
  for (bool importer : {false, true}) {
    SCOPED_TRACE(importer ? "importing process" : "exporting process");
    const FakeDriver& process = importer ? clean.importer() : clean.exporter();
    EXPECT_EQ(leaks(Held::of(process, Workload::kDevices), clean.baseline(importer)), "");
    EXPECT_EQ(process.invalid_frees(), 0u);
    EXPECT_EQ(process.invalid_accesses(), 0u);
  }
}

TEST(FaultInjection, TheCallsTheWorkloadNeverMakesAreNamed) {
  std::set<std::string> never_made;
  for (DriverCall call : all_driver_calls()) {
    if (clean_count(call, false) == 0 && clean_count(call, true) == 0) {
      never_made.emplace(driver_call_name(call));
    }
  }
  EXPECT_EQ(never_made, kNeverMade)
      << "the workload's calls changed: a call it now makes is covered automatically; name a "
         "call it does not make in kNeverMade (or extend the workload to make it)";
}

// Whether NBEP 7's out-of-memory retry (flush the deferred frees, try once more) covers this
// occurrence of `call` in the workload: every memalloc, and the mapped memhostalloc and the
// mapped mempin (the exporter's first cuMemHostAlloc and second cuMemHostRegister); the pinned
// memhostalloc and the unmapped mempin are not retried.
bool out_of_memory_is_retried(DriverCall call, bool in_importer, std::size_t nth) {
  switch (call) {
    case DriverCall::cuMemAlloc:
      return true;
    case DriverCall::cuMemHostAlloc:
      return !in_importer && nth == 1;
    case DriverCall::cuMemHostRegister:
      return !in_importer && nth == 2;
    default:
      return false;
  }
}

// Injects `result` at every occurrence of the parameter's call in either process.
class EveryOccurrence : public ::testing::TestWithParam<DriverCall> {
 protected:
  void fail_each_occurrence(CUresult result) {
    const DriverCall call = GetParam();
    const std::string name(driver_call_name(call));
    std::size_t runs = 0;
    for (bool in_importer : {false, true}) {
      const std::size_t occurrences = clean_count(call, in_importer);
      for (std::size_t nth = 1; nth <= occurrences; ++nth) {
        ++runs;
        SCOPED_TRACE(name + " failing with " + std::string(cuda_result_name(result)) +
                     " at its occurrence " + std::to_string(nth) + " of " +
                     std::to_string(occurrences) + " in the " +
                     (in_importer ? "importing" : "exporting") + " process");
        Workload run(Fault{call, result, nth, in_importer});
        run.run();
        const bool retried =
            result == CUDA_ERROR_OUT_OF_MEMORY && out_of_memory_is_retried(call, in_importer, nth);
        check(run, in_importer, retried);
      }
    }
    RecordProperty("runs", static_cast<int>(runs));
    EXPECT_GT(runs, 0u) << "the workload never makes " << name
                        << ": name it in kNeverMade, or make the workload call it";
  }

 private:
  void check(const Workload& run, bool in_importer, bool retried) {
    const DriverCall call = GetParam();
    const std::string name(driver_call_name(call));
    EXPECT_THAT(run.escaped(), ::testing::IsEmpty())
        << "only CudaDriverError naming " << name << " may reach the caller";

    const FakeDriver& target = in_importer ? run.importer() : run.exporter();
    if (retried) {
      EXPECT_EQ(run.surfaced(), 0u) << "the out-of-memory retry hides one failure (NBEP 7)";
      EXPECT_EQ(target.call_count(call), clean_count(call, in_importer) + 1)
          << "the retry makes the call once more";
    } else {
      const bool reported = std::any_of(
          run.reported().begin(), run.reported().end(),
          [&name](const std::string& text) { return text.find(name) != std::string::npos; });
      EXPECT_TRUE(run.surfaced() > 0 || reported)
          << "the injected failure of " << name
          << " was swallowed: it neither reached the caller nor was reported through "
             "emm::Diagnostics (reported: "
          << ::testing::PrintToString(run.reported()) << ")";
    }

    for (bool importer : {false, true}) {
      SCOPED_TRACE(importer ? "importing process" : "exporting process");
      const FakeDriver& process = importer ? run.importer() : run.exporter();
      Held now = Held::of(process, Workload::kDevices);
      const Held& baseline = run.baseline(importer);
      if (importer == in_importer) {
        // A release the driver refused leaves that one object with the driver.
        if (const auto field = released_by(call);
            field && now.*(*field) == baseline.*(*field) + 1) {
          now.*(*field) = baseline.*(*field);
          if (*field == &Held::allocations) now.device_bytes = baseline.device_bytes;
        }
      }
      EXPECT_EQ(leaks(now, baseline), "") << "leaked after reset() and close()";
      EXPECT_EQ(process.invalid_accesses(), 0u);
    }
  }
};

TEST_P(EveryOccurrence, FailureIsTypedAndLeaksNothing) { fail_each_occurrence(CUDA_ERROR_UNKNOWN); }

std::string call_name(const ::testing::TestParamInfo<DriverCall>& info) {
  return std::string(driver_call_name(info.param));
}

// Every entry point but those named in kNeverMade.
std::vector<DriverCall> calls_the_workload_makes() {
  std::vector<DriverCall> calls = all_driver_calls();
  std::erase_if(calls, [](DriverCall call) {
    return kNeverMade.count(std::string(driver_call_name(call))) != 0;
  });
  return calls;
}

INSTANTIATE_TEST_SUITE_P(FaultInjection, EveryOccurrence,
                         ::testing::ValuesIn(calls_the_workload_makes()), call_name);

// Out of memory on the allocation calls: retried where NBEP 7 says so, else typed.
class OutOfMemory : public EveryOccurrence {};

TEST_P(OutOfMemory, IsRetriedOrTypedAndLeaksNothing) {
  fail_each_occurrence(CUDA_ERROR_OUT_OF_MEMORY);
}

INSTANTIATE_TEST_SUITE_P(FaultInjection, OutOfMemory,
                         ::testing::Values(DriverCall::cuMemAlloc, DriverCall::cuMemHostAlloc,
                                           DriverCall::cuMemHostRegister),
                         call_name);

}  // namespace

// GoogleTest names the parameter of a failing test by this.
static void PrintTo(DriverCall call, std::ostream* out) { *out << driver_call_name(call); }

}  // namespace emm
