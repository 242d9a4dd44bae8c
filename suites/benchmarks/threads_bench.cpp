// emm_bench_threads — 1, 2, 4, 8 and 16 threads allocating and freeing concurrently on one
// context (the scaling half of ALLOC-10, measured).
//
//   Threads/<subject>/<backend>/real_time/threads:<n>
//
// Every thread keeps a ring of kRing live allocations and, per iteration, frees the oldest and
// allocates a new one (sizes uniform in [1 B, 64 KiB] from a per-thread seed): one
// alloc+free pair per iteration, with live neighbours, as a multi-threaded application would.
// All threads share one Runtime and Context (one plugin instance). Reported:
// items_per_second (pairs per second over all threads, against the wall time) and the counter
// pairs_per_second (the same, from each thread's own clock, summed); the report divides the
// n-thread figure by the 1-thread one for the scaling.
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "bench_common.hpp"

namespace emm::bench {
namespace {

constexpr std::size_t kRing = 16;
constexpr std::size_t kMaxBytes = std::size_t{64} << 10;

// Google Benchmark's threads meet at a barrier when their timed loop starts and when it ends,
// so a thread that left early would hang the others: every thread runs the loop to its end, and
// an error (setup or during the loop) turns the remaining iterations into no-ops and is reported
// after the loop.
template <class S>
double run_thread(benchmark::State& state, Environment& environment, std::string& error) {
  SplitMix64 random(kSeed + static_cast<std::uint64_t>(state.thread_index()));
  constexpr std::size_t kSizes = 1024;
  std::array<std::uint32_t, kSizes> sizes{};
  for (auto& size : sizes) size = static_cast<std::uint32_t>(random.uniform(1, kMaxBytes));
  std::optional<S> s;
  std::array<typename S::Handle, kRing> ring{};
  try {
    s.emplace(environment);
    for (std::size_t i = 0; i < kRing; ++i) ring[i] = s->allocate(sizes[i]);
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::size_t next = 0;
  Stopwatch watch;
  watch.start();
  for (auto _ : state) {
    if (!error.empty()) continue;
    try {
      auto& slot = ring[next % kRing];
      s->release(slot);
      slot = s->allocate(sizes[next % kSizes]);
      ++next;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  const double elapsed_ns = watch.stop_ns();
  if (s) {
    try {
      for (auto& handle : ring) {
        if (handle) s->release(handle);
      }
      s->finish();
      s.reset();
    } catch (const std::exception& e) {
      if (error.empty()) error = e.what();
    }
  }
  return elapsed_ns;
}

void threads(benchmark::State& state, SharedEnvironment& shared, Backend backend, Subject subject) {
  double elapsed_ns = 0;
  std::string error;
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    dispatch_subject(subject, [&](auto type) {
      elapsed_ns = run_thread<typename decltype(type)::type>(state, environment, error);
    });
  });
  if (!error.empty()) {
    const std::string message =
        std::string(name_of(subject)) + " on " + std::string(name_of(backend)) + ": " + error;
    state.SkipWithError(message.c_str());
    return;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  if (elapsed_ns > 0) {
    // Summed over the threads by the framework: the aggregate throughput.
    state.counters["pairs_per_second"] = static_cast<double>(state.iterations()) * 1e9 / elapsed_ns;
  }
}

void register_all() {
  for (Backend backend : kBackends) {
    for (Subject subject : kSubjects) {
      auto shared = std::make_shared<SharedEnvironment>();
      const std::string name =
          "Threads/" + std::string(name_of(subject)) + "/" + std::string(name_of(backend));
      benchmark::RegisterBenchmark(
          name.c_str(), [=](benchmark::State& state) { threads(state, *shared, backend, subject); })
          ->ThreadRange(1, 16)
          ->UseRealTime()
          ->MinTime(0.1);
    }
  }
}

}  // namespace
}  // namespace emm::bench

int main(int argc, char** argv) {
  emm::bench::register_all();
  return emm::bench::run_main(argc, argv);
}
