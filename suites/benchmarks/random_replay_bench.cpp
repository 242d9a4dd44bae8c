// emm_bench_random_replay — an RMM-style random-allocations replay.
//
//   Replay/<subject>/<backend>/<N>     N in {1000, 10000, 100000}
//
// The trace is RMM's random_allocations pattern (cpp/benchmarks/random_allocations): sizes
// uniform in [1 B, 1 MiB]; while fewer than N allocations have been made, each step allocates
// with probability 73 % (always when nothing is live, never when it would take the live bytes
// over kMaxLiveBytes) and otherwise frees a random live allocation; then the rest are freed in
// random order. Every trace holds exactly N allocations and N frees. It is drawn once from a
// fixed seed, so every subject and backend replays the very same operations.
//
// Reported: the counter ns_per_op = wall time / (2 N) per replay, the figure RMM's published
// numbers are quoted in (0.33 µs/op arena, 0.65 µs/op pool, ~35 µs/op cudaMalloc/cudaFree);
// on the fake backend also driver_allocs_per_op / driver_frees_per_op, the device allocations
// and frees the subject asked the driver for per operation (what dominates on a GPU).
// raw_async's stream is synchronised at the end of each replay, inside the timing.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm::bench {
namespace {

constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
// RMM bounds the live bytes too (max_usage); 1 GiB keeps the largest trace within every GPU and
// the fake device, and within this machine's memory for the fake's host backing.
constexpr std::size_t kMaxLiveBytes = std::size_t{1} << 30;
constexpr unsigned kAllocatePercent = 73;

struct Operation {
  // Allocation: `value` is the size. Free: `value` is the index in the live list, which is
  // compacted by moving its last element into the freed place.
  bool allocate;
  std::uint32_t value;
};

struct Trace {
  std::vector<Operation> operations;
  std::size_t peak_live = 0;
  std::size_t peak_live_bytes = 0;
};

Trace make_trace(std::size_t allocations) {
  Trace trace;
  trace.operations.reserve(2 * allocations);
  SplitMix64 random(kSeed);
  std::vector<std::size_t> live;  // sizes, in the order the replay keeps its handles
  std::size_t live_bytes = 0;
  std::size_t made = 0;
  auto free_one = [&] {
    const auto index = static_cast<std::size_t>(random.uniform(0, live.size() - 1));
    trace.operations.push_back({false, static_cast<std::uint32_t>(index)});
    live_bytes -= live[index];
    live[index] = live.back();
    live.pop_back();
  };
  while (made < allocations) {
    const std::size_t size = random.uniform(1, kMaxBytes);
    const bool allocate = live.empty() || (random.uniform(0, 99) < kAllocatePercent &&
                                           live_bytes + size <= kMaxLiveBytes);
    if (allocate) {
      trace.operations.push_back({true, static_cast<std::uint32_t>(size)});
      live.push_back(size);
      live_bytes += size;
      ++made;
      if (live.size() > trace.peak_live) trace.peak_live = live.size();
      if (live_bytes > trace.peak_live_bytes) trace.peak_live_bytes = live_bytes;
    } else {
      free_one();
    }
  }
  while (!live.empty()) free_one();
  return trace;
}

// One trace per N, shared by every subject and backend.
const Trace& trace_for(std::size_t allocations) {
  static std::mutex mutex;
  static std::map<std::size_t, std::unique_ptr<Trace>> traces;
  std::lock_guard lock(mutex);
  auto& trace = traces[allocations];
  if (!trace) trace = std::make_unique<Trace>(make_trace(allocations));
  return *trace;
}

void replay(benchmark::State& state, SharedEnvironment& shared, Backend backend, Subject subject,
            std::size_t allocations) {
  const Trace& trace = trace_for(allocations);
  double elapsed_ns = 0;
  std::size_t driver_allocations = 0;
  std::size_t driver_frees = 0;
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    // On the fake backend the driver counts its calls: how often a subject reaches the driver
    // per operation (the pool's slab traffic, the reference's cuMemAlloc per allocation).
    auto* fake = dynamic_cast<FakeDriver*>(&environment.driver());
    with_subject(environment, [&](auto& s) {
      std::vector<typename std::decay_t<decltype(s)>::Handle> live;
      live.reserve(trace.peak_live);
      if (fake != nullptr) fake->reset_call_counts();
      Stopwatch watch;
      watch.start();
      for (auto _ : state) {
        for (const Operation& operation : trace.operations) {
          if (operation.allocate) {
            live.push_back(s.allocate(operation.value));
          } else {
            auto& handle = live[operation.value];
            s.release(handle);
            handle = std::move(live.back());
            live.pop_back();
          }
        }
        s.finish();
      }
      elapsed_ns = watch.stop_ns();
      if (fake != nullptr) {
        driver_allocations = fake->call_count(DriverCall::cuMemAlloc) +
                             fake->call_count(DriverCall::cuMemAllocFromPoolAsync);
        driver_frees =
            fake->call_count(DriverCall::cuMemFree) + fake->call_count(DriverCall::cuMemFreeAsync);
      }
    });
  });
  const double operations = static_cast<double>(trace.operations.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(trace.operations.size()));
  state.counters["allocations"] = static_cast<double>(allocations);
  state.counters["peak_live"] = static_cast<double>(trace.peak_live);
  if (state.iterations() > 0) {
    const double total = static_cast<double>(state.iterations()) * operations;
    state.counters["ns_per_op"] = elapsed_ns / total;
    if (backend == Backend::fake) {
      state.counters["driver_allocs_per_op"] = static_cast<double>(driver_allocations) / total;
      state.counters["driver_frees_per_op"] = static_cast<double>(driver_frees) / total;
    }
  }
}

void register_all() {
  constexpr std::size_t kCounts[] = {1000, 10000, 100000};
  for (Backend backend : kBackends) {
    for (Subject subject : kSubjects) {
      for (std::size_t count : kCounts) {
        auto shared = std::make_shared<SharedEnvironment>();
        const std::string name = "Replay/" + std::string(name_of(subject)) + "/" +
                                 std::string(name_of(backend)) + "/" + std::to_string(count);
        benchmark::RegisterBenchmark(
            name.c_str(),
            [=](benchmark::State& state) { replay(state, *shared, backend, subject, count); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond)
            // One replay of 100 000 allocations through cuMemAlloc takes seconds on a GPU;
            // a short minimum keeps it to a single replay there.
            ->MinTime(0.1);
      }
    }
  }
}

}  // namespace
}  // namespace emm::bench

int main(int argc, char** argv) {
  emm::bench::register_all();
  return emm::bench::run_main(argc, argv);
}
