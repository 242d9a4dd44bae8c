// PERF — measurements (spec §4): recorded on the certificate, never part of the verdict.
// A check fails only when the plugin throws.
#include <algorithm>
#include <chrono>

#include "checks/checks.hpp"

namespace emm::conformance::checks {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::nth_element(samples.begin(), samples.begin() + static_cast<long>(samples.size() / 2),
                   samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

// PERF-1: median memalloc + release latency for 256 B and 1 MiB.
EMM_CHECK(PERF_1) {
  Context& context = run.host().context();
  constexpr int iterations = 300;
  for (const auto& [size, label] : {std::pair{std::size_t{256}, "256B"}, std::pair{MiB, "1MiB"}}) {
    for (int i = 0; i < 20; ++i) allocate(run, context, size, "warm-up");
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(iterations));
    for (int i = 0; i < iterations; ++i) {
      const auto start = Clock::now();
      auto memory = allocate(run, context, size);
      memory.reset();
      samples.push_back(elapsed_us(start));
    }
    run.record(str("alloc_free_", label, "_median_us"), median(samples));
  }
  run.record("iterations", static_cast<std::size_t>(iterations));
}

// PERF-2: the cost of one initialize() call.
EMM_CHECK(PERF_2) {
  Context& context = run.host().context();
  BaseCUDAMemoryManager& manager = context.memory_manager();
  std::vector<double> samples;
  for (int i = 0; i < 1000; ++i) {
    const auto start = Clock::now();
    try {
      manager.initialize();
    } catch (...) {
      run.fail(str("initialize() call #", i + 1, " threw ", describe_current_exception()));
    }
    samples.push_back(elapsed_us(start));
  }
  run.record("initialize_median_us", median(samples));
}

// PERF-3: pairwise allocate/free throughput, plugin against the raw driver.
EMM_CHECK(PERF_3) {
  Context& context = run.host().context();
  constexpr int pairs = 500;
  constexpr std::size_t kSize = 256;
  auto start = Clock::now();
  for (int i = 0; i < pairs; ++i) allocate(run, context, kSize);
  const double plugin_us = elapsed_us(start);
  flush_point(context.memory_manager());
  Driver& driver = context.driver();
  context.make_current();
  start = Clock::now();
  for (int i = 0; i < pairs; ++i) driver.mem_free(driver.mem_alloc(kSize));
  const double driver_us = elapsed_us(start);
  const double plugin_rate = plugin_us > 0 ? pairs / (plugin_us / 1e6) : 0.0;
  const double driver_rate = driver_us > 0 ? pairs / (driver_us / 1e6) : 0.0;
  run.record("plugin_pairs_per_s", plugin_rate);
  run.record("driver_pairs_per_s", driver_rate);
  run.record("plugin_over_driver", driver_rate > 0 ? plugin_rate / driver_rate : 0.0);
  run.record("pairs", static_cast<std::size_t>(pairs));
}

}  // namespace emm::conformance::checks
