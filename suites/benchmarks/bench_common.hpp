// bench_common.hpp — what every emmkit benchmark shares: the backends (fake driver, real GPU),
// the allocators under test ("subjects"), and the environment a benchmark runs in.
//
// A *subject* is one way of getting device memory, each measured the same way:
//   raw_driver      cuMemAlloc + cuMemFree, straight through emm::Driver (the baseline);
//   raw_async       cuMemAllocFromPoolAsync + cuMemFreeAsync on a stream, from a CUmemoryPool of
//                   the benchmark's own (CUDA's stream-ordered pool; no synchronisation per pair);
//   reference       emm::NumbaCUDAMemoryManager through a Context (its deferred frees included);
//   pool            emm::examples::PoolMemoryManager through a Context;
//   stream_ordered  emm::examples::StreamOrderedMemoryManager through a Context.
// Each subject type has the same shape, so the benchmark bodies are templates over it:
//
//   struct Subject {
//     using Handle = ...;                       // what one allocation is held by
//     explicit Subject(Environment&);           // per thread; makes the context current
//     Handle allocate(std::size_t bytes);
//     void release(Handle&);                    // frees (or drops the last reference)
//     void finish();                            // waits for queued work (raw_async's stream)
//   };
//
// An Environment is one Runtime over one backend with the subject's manager registered and its
// context initialised. Benchmarks create it before their timed loop. Without a GPU, creating a
// GPU environment fails with the driver's reason and the benchmark reports
// SkipWithError("no GPU: <reason>"), so the rest of the run goes on.
//
// Thread-safety: an Environment may be shared by the threads of one benchmark (it is built by
// SharedEnvironment, below); subjects are per thread.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "emm/context.hpp"
#include "emm/driver.hpp"
#include "emm/memory_pointer.hpp"
#include "emm/runtime.hpp"

namespace emm::bench {

enum class Backend { fake, gpu };
enum class Subject { raw_driver, raw_async, reference, pool, stream_ordered };

inline constexpr Backend kBackends[] = {Backend::fake, Backend::gpu};
inline constexpr Subject kSubjects[] = {Subject::raw_driver, Subject::raw_async, Subject::reference,
                                        Subject::pool, Subject::stream_ordered};
// The subjects that are EMM plugins (measured through a Context).
inline constexpr Subject kPlugins[] = {Subject::reference, Subject::pool, Subject::stream_ordered};

std::string_view name_of(Backend backend) noexcept;
std::string_view name_of(Subject subject) noexcept;

// Whether this build has the subject (the example plugins are optional targets).
bool is_built(Subject subject) noexcept;

// Simulated device memory of the fake backend: an 80 GiB device, like an H100, so the reference
// manager's byte threshold (20 % of the total) is the same order as on a real GPU.
inline constexpr std::size_t kFakeCapacity = std::size_t{80} << 30;

// Why the GPU backend cannot run here, or "" when it can (loads the driver once per process).
const std::string& gpu_unavailable_reason();

// A fresh FakeDriver (kFakeCapacity), or the process's CudaDriver; throws
// DriverUnavailableError("no GPU: ...") without one.
std::shared_ptr<Driver> make_driver(Backend backend);

// One Runtime over one backend, with the subject's manager registered and device 0's context
// created, current on the creating thread and initialised.
class Environment {
 public:
  // Throws DriverUnavailableError (no GPU) or whatever the driver or plugin throws.
  // `options` default to RuntimeOptions::hermetic(): every run measures the managers with their
  // defaults unless it names the variables it sets (read as a user's setting would be).
  Environment(Backend backend, Subject subject,
              RuntimeOptions options = RuntimeOptions::hermetic());
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  Backend backend() const noexcept { return backend_; }
  Subject subject() const noexcept { return subject_; }
  Runtime& runtime() noexcept { return *runtime_; }
  Context& context() noexcept { return *context_; }
  Driver& driver() noexcept { return runtime_->driver(); }

  // The CUmemoryPool raw_async allocates from: created on first use (pinned device memory on
  // device 0, release threshold UINT64_MAX so freed memory stays in the pool between
  // synchronisations, as RMM's cuda_async_memory_resource configures it).
  CUmemoryPool async_pool();

 private:
  Backend backend_;
  Subject subject_;
  std::unique_ptr<Runtime> runtime_;
  Context* context_ = nullptr;
  std::mutex pool_mutex_;
  CUmemoryPool pool_ = nullptr;
};

// --- the subjects -------------------------------------------------------------------------------

class RawDriverSubject {
 public:
  using Handle = CUdeviceptr;
  explicit RawDriverSubject(Environment& environment) : driver_(environment.driver()) {
    environment.context().make_current();
  }
  Handle allocate(std::size_t bytes) { return driver_.mem_alloc(bytes); }
  void release(Handle& handle) {
    driver_.mem_free(handle);
    handle = 0;
  }
  void finish() {}

 private:
  Driver& driver_;
};

class RawAsyncSubject {
 public:
  using Handle = CUdeviceptr;
  // A stream of its own (one per thread), on the environment's pool.
  explicit RawAsyncSubject(Environment& environment);
  ~RawAsyncSubject();  // synchronises and destroys the stream
  RawAsyncSubject(const RawAsyncSubject&) = delete;
  RawAsyncSubject& operator=(const RawAsyncSubject&) = delete;

  Handle allocate(std::size_t bytes) {
    return driver_.mem_alloc_from_pool_async(bytes, pool_, stream_);
  }
  void release(Handle& handle) {
    driver_.mem_free_async(handle, stream_);
    handle = 0;
  }
  void finish() { driver_.stream_synchronize(stream_); }

 private:
  Driver& driver_;
  CUmemoryPool pool_;
  CUstream stream_;
};

// Any EMM plugin, through the host's Context (as Numba's device arrays allocate).
class PluginSubject {
 public:
  using Handle = std::shared_ptr<MemoryPointer>;
  explicit PluginSubject(Environment& environment) : context_(environment.context()) {
    context_.make_current();
  }
  Handle allocate(std::size_t bytes) { return context_.memalloc(bytes); }
  void release(Handle& handle) { handle.reset(); }
  void finish() {}

 private:
  Context& context_;
};

// Calls `body(std::type_identity<SubjectType>{})` for the subject type that measures `subject`.
template <class Body>
void dispatch_subject(Subject subject, Body&& body) {
  switch (subject) {
    case Subject::raw_driver:
      body(std::type_identity<RawDriverSubject>{});
      break;
    case Subject::raw_async:
      body(std::type_identity<RawAsyncSubject>{});
      break;
    default:
      body(std::type_identity<PluginSubject>{});
      break;
  }
}

// Calls `body(subject)` with a subject of the environment's kind, built on this thread.
template <class Body>
void with_subject(Environment& environment, Body&& body) {
  dispatch_subject(environment.subject(), [&](auto type) {
    typename decltype(type)::type subject(environment);
    body(subject);
  });
}

// --- running a benchmark ------------------------------------------------------------------------

// The environment of one benchmark run, shared by its threads: the first thread to arrive builds
// it, the last to leave destroys it. A failure to build it is seen by every thread.
class SharedEnvironment {
 public:
  // `options`: what each Runtime built here is given (its environment; hermetic by default).
  explicit SharedEnvironment(RuntimeOptions options = RuntimeOptions::hermetic())
      : options_(std::move(options)) {}

  // Null (with `why` set) when the environment could not be built.
  std::shared_ptr<Environment> acquire(Backend backend, Subject subject, std::string& why);
  void release();

 private:
  RuntimeOptions options_;
  std::mutex mutex_;
  int users_ = 0;
  std::shared_ptr<Environment> environment_;
  std::string failure_;
};

// Builds the environment (or shares it, for threaded benchmarks) and runs `body(environment)`.
// Any failure — no GPU, a driver error, a plugin error — becomes SkipWithError with its message
// ("no GPU: ..." for a missing GPU) so the other benchmarks still run.
template <class Body>
void run_benchmark(benchmark::State& state, SharedEnvironment& shared, Backend backend,
                   Subject subject, Body&& body) {
  std::string why;
  std::shared_ptr<Environment> environment = shared.acquire(backend, subject, why);
  if (!environment) {
    state.SkipWithError(why.c_str());
    shared.release();
    return;
  }
  try {
    body(*environment);
  } catch (const std::exception& error) {
    const std::string message = std::string(name_of(subject)) + " on " +
                                std::string(name_of(backend)) + ": " + error.what();
    state.SkipWithError(message.c_str());
  }
  environment.reset();
  shared.release();
}

// --- helpers ------------------------------------------------------------------------------------

// A deterministic generator (SplitMix64): the same sequence on every platform and library, so
// every subject replays exactly the same sizes and order.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [low, high] (the tiny modulo bias is irrelevant here).
  std::uint64_t uniform(std::uint64_t low, std::uint64_t high) noexcept {
    return low + next() % (high - low + 1);
  }

 private:
  std::uint64_t state_;
};

inline constexpr std::uint64_t kSeed = 20200917;  // fixed: every run replays the same trace

// Wall-clock seconds of the timed loop, measured around it (as real_time, without the
// framework's own bookkeeping): for per-operation counters.
class Stopwatch {
 public:
  void start() { begin_ = std::chrono::steady_clock::now(); }
  double stop_ns() const {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point begin_;
};

// Records in the JSON context which backends ran and on what (device name, driver version).
void add_backend_context();

// benchmark::Initialize + run + Shutdown, after `add_backend_context()`.
int run_main(int argc, char** argv);

}  // namespace emm::bench
