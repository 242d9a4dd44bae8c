#include "bench_common.hpp"

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/numba_memory_manager.hpp"

#ifdef EMM_BENCH_HAVE_POOL
#include "emm/examples/pool_memory_manager.hpp"
#endif
#ifdef EMM_BENCH_HAVE_STREAM_ORDERED
#include "emm/examples/stream_ordered_memory_manager.hpp"
#endif

#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>

namespace emm::bench {
namespace {

// The process's real driver (CudaDriver::probe), with one extra retain of device 0's primary
// context that keeps it alive between benchmarks (each Runtime releases its own retain when it
// closes; recreating the context every time would cost ~100 ms).
const CudaDriverProbe& gpu_driver() {
  static const bool kept = [] {
    if (const CudaDriverProbe& gpu = CudaDriver::probe(); gpu.driver) {
      gpu.driver->primary_ctx_retain(0);
    }
    return true;
  }();
  (void)kept;
  return CudaDriver::probe();
}

}  // namespace

std::string_view name_of(Backend backend) noexcept {
  return backend == Backend::fake ? "fake" : "gpu";
}

std::string_view name_of(Subject subject) noexcept {
  switch (subject) {
    case Subject::raw_driver:
      return "raw_driver";
    case Subject::raw_async:
      return "raw_async";
    case Subject::reference:
      return "reference";
    case Subject::pool:
      return "pool";
    case Subject::stream_ordered:
      return "stream_ordered";
  }
  return "?";
}

bool is_built(Subject subject) noexcept {
  switch (subject) {
    case Subject::pool:
#ifdef EMM_BENCH_HAVE_POOL
      return true;
#else
      return false;
#endif
    case Subject::stream_ordered:
#ifdef EMM_BENCH_HAVE_STREAM_ORDERED
      return true;
#else
      return false;
#endif
    default:
      return true;
  }
}

const std::string& gpu_unavailable_reason() { return gpu_driver().reason; }

std::shared_ptr<Driver> make_driver(Backend backend) {
  if (backend == Backend::fake) {
    FakeSystemConfig config;
    config.devices.front().capacity = kFakeCapacity;
    // Pinned benchmarks ask for blocks of up to 1 GiB, ten of which may wait in the HostOnly
    // queue: page-locked memory as large as the device's.
    config.page_locked_capacity = kFakeCapacity;
    return std::make_shared<FakeDriver>(config);
  }
  const CudaDriverProbe& gpu = gpu_driver();
  if (!gpu.driver) throw DriverUnavailableError("no GPU: " + gpu.reason);
  return gpu.driver;
}

Environment::Environment(Backend backend, Subject subject, RuntimeOptions options)
    : backend_(backend),
      subject_(subject),
      runtime_(std::make_unique<Runtime>(make_driver(backend), std::move(options))) {
  switch (subject) {
    case Subject::pool:
#ifdef EMM_BENCH_HAVE_POOL
      runtime_->set_memory_manager<examples::PoolMemoryManager>();
#endif
      break;
    case Subject::stream_ordered:
#ifdef EMM_BENCH_HAVE_STREAM_ORDERED
      runtime_->set_memory_manager<examples::StreamOrderedMemoryManager>();
#endif
      break;
    default:
      // raw_driver and raw_async bypass the manager; the context still needs one.
      runtime_->set_memory_manager<NumbaCUDAMemoryManager>();
      break;
  }
  context_ = &runtime_->get_context(0);
}

Environment::~Environment() {
  try {
    if (pool_ != nullptr) {
      context_->make_current();
      driver().ctx_synchronize();
      driver().mem_pool_destroy(pool_);
    }
    runtime_->close();
  } catch (const std::exception& error) {
    // A benchmark's teardown must not take the whole run down; the next one starts afresh.
    std::fprintf(stderr, "emmkit benchmark: teardown failed: %s\n", error.what());
  }
}

CUmemoryPool Environment::async_pool() {
  std::lock_guard lock(pool_mutex_);
  if (pool_ != nullptr) return pool_;
  context_->make_current();
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = context_->device();
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  CUmemoryPool pool = driver().mem_pool_create(props);
  try {
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    driver().mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  } catch (...) {
    driver().mem_pool_destroy(pool);
    throw;
  }
  pool_ = pool;
  return pool_;
}

RawAsyncSubject::RawAsyncSubject(Environment& environment)
    : driver_(environment.driver()), pool_(environment.async_pool()), stream_(nullptr) {
  environment.context().make_current();
  stream_ = driver_.stream_create(CU_STREAM_NON_BLOCKING);
}

RawAsyncSubject::~RawAsyncSubject() {
  try {
    driver_.stream_synchronize(stream_);
    driver_.stream_destroy(stream_);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "emmkit benchmark: stream teardown failed: %s\n", error.what());
  }
}

std::shared_ptr<Environment> SharedEnvironment::acquire(Backend backend, Subject subject,
                                                        std::string& why) {
  std::lock_guard lock(mutex_);
  if (users_++ == 0) {
    failure_.clear();
    if (!is_built(subject)) {
      failure_ = std::string(name_of(subject)) + " plugin is not built in this configuration";
    } else {
      try {
        environment_ = std::make_shared<Environment>(backend, subject, options_);
      } catch (const DriverUnavailableError& error) {
        failure_ = error.what();
        if (failure_.rfind("no GPU", 0) != 0) failure_ = "no GPU: " + failure_;
      } catch (const std::exception& error) {
        failure_ = std::string(name_of(subject)) + " on " + std::string(name_of(backend)) +
                   ": setup failed: " + error.what();
      }
    }
  }
  why = failure_;
  return environment_;
}

void SharedEnvironment::release() {
  std::shared_ptr<Environment> last;
  {
    std::lock_guard lock(mutex_);
    if (--users_ == 0) last = std::move(environment_);
  }
  // Destroyed outside the lock (it frees what the plugin still holds).
}

void add_backend_context() {
  benchmark::AddCustomContext(
      "emm.fake_device",
      "FakeDriver, " + std::to_string(kFakeCapacity >> 30) + " GiB simulated device");
  const CudaDriverProbe& gpu = gpu_driver();
  if (!gpu.driver) {
    benchmark::AddCustomContext("emm.gpu", "not run: " + gpu.reason);
    return;
  }
  try {
    const int version = gpu.driver->driver_get_version();
    benchmark::AddCustomContext("emm.gpu", gpu.driver->device_get_name(0));
    benchmark::AddCustomContext("emm.cuda_driver_version", std::to_string(version / 1000) + "." +
                                                               std::to_string(version % 1000 / 10));
  } catch (const std::exception& error) {
    benchmark::AddCustomContext("emm.gpu", std::string("query failed: ") + error.what());
  }
}

int run_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_backend_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace emm::bench
