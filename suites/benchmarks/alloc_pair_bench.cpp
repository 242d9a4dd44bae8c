// emm_bench_alloc_pair — host-side latency of one allocation + its release, per subject and
// backend (PERF-1/PERF-3 measured outside certification):
//
//   AllocPair/<subject>/<backend>/<bytes>        memalloc(bytes) then release, on an idle
//                                                 allocator, bytes in {256, 64 KiB, 1 MiB, 64 MiB}
//   LivePair/<subject>/<backend>/live:1000/bytes:256
//                                                 the same 256-byte pair while 1000 other
//                                                 allocations (sizes uniform in [1 B, 1 MiB])
//                                                 are live: the pool target's condition
//   LiveReplace/<subject>/<backend>/live:1000     free a random one of 1000 live allocations and
//                                                 allocate a new random size in [1 B, 1 MiB]
//   DeferralPair/reference/<backend>/<bytes>/max_count:<n>
//                                                 AllocPair of the reference manager with
//                                                 EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT=n in its
//                                                 Runtime's environment (n in {10 (NBEP 7's
//                                                 default), 20, 40, 63}; a flush every n+1
//                                                 frees, DEALLOC-1), bytes in {256, 64 KiB}:
//                                                 how far deferral alone takes it
//   Initialize/<plugin>/<backend>                 initialize() on an initialised plugin
//   Activate/<plugin>/<backend>                   Context::prepare_for_use() (what every
//                                                 activation costs: make current + initialize)
//   Component/...                                 the pieces of a pair, alone (components.hpp)
//
// Times are wall-clock host time per iteration (UseRealTime). raw_async's stream is
// synchronised after the timed loop, so its pairs are host-side enqueue cost, as CUDA's
// stream-ordered allocator is meant to be used.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"
#include "components.hpp"
#include "emm/host_only_memory_manager.hpp"

namespace emm::bench {
namespace {

constexpr std::size_t kLiveCount = 1000;
constexpr std::size_t kLiveMaxBytes = std::size_t{1} << 20;
constexpr std::size_t kLivePairBytes = 256;
constexpr double kMinTime = 0.1;
// DeferralPair's limits: 10 is NBEP 7's default (a flush every 11th free); 63 flushes every
// 64th, as the driver_batched_pairs batch:64 component does.
constexpr std::size_t kDeferralCounts[] = {10, 20, 40, 63};
constexpr std::size_t kDeferralSizes[] = {256, std::size_t{64} << 10};

template <class S>
using HandleOf = typename std::decay_t<S>::Handle;

// The timed loop of AllocPair and DeferralPair.
template <class S>
void time_pairs(benchmark::State& state, S& s, std::size_t bytes) {
  HandleOf<S> handle{};
  for (auto _ : state) {
    handle = s.allocate(bytes);
    benchmark::DoNotOptimize(handle);
    s.release(handle);
  }
  s.finish();
}

void alloc_pair(benchmark::State& state, SharedEnvironment& shared, Backend backend,
                Subject subject, std::size_t bytes) {
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    with_subject(environment, [&](auto& s) { time_pairs(state, s, bytes); });
  });
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["bytes"] = static_cast<double>(bytes);
}

// The reference manager's pairs with its pending-deallocation count limit set to `max_count`
// through the environment (`shared` was built with it). The limit the manager really got is
// checked first: an unparsed value would silently measure the default instead.
void deferral_pair(benchmark::State& state, SharedEnvironment& shared, Backend backend,
                   std::size_t bytes, std::size_t max_count) {
  run_benchmark(state, shared, backend, Subject::reference, [&](Environment& environment) {
    auto* manager =
        dynamic_cast<HostOnlyCUDAMemoryManager*>(&environment.context().memory_manager());
    if (manager == nullptr) throw std::logic_error("the context's manager is not the reference");
    const std::size_t configured = manager->deallocations().config().max_count;
    if (configured != max_count) {
      throw std::logic_error("EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT=" + std::to_string(max_count) +
                             " gave the manager max_count " + std::to_string(configured));
    }
    PluginSubject subject(environment);
    time_pairs(state, subject, bytes);
  });
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["max_count"] = static_cast<double>(max_count);
}

// Fills `live` with kLiveCount allocations of seeded random sizes in [1, kLiveMaxBytes].
template <class S>
void fill_live(S& s, std::vector<HandleOf<S>>& live, SplitMix64& random) {
  live.reserve(kLiveCount);
  for (std::size_t i = 0; i < kLiveCount; ++i) {
    live.push_back(s.allocate(random.uniform(1, kLiveMaxBytes)));
  }
}

template <class S>
void release_all(S& s, std::vector<HandleOf<S>>& live) {
  for (auto& handle : live) s.release(handle);
  live.clear();
  s.finish();
}

void live_pair(benchmark::State& state, SharedEnvironment& shared, Backend backend,
               Subject subject) {
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    with_subject(environment, [&](auto& s) {
      SplitMix64 random(kSeed);
      std::vector<HandleOf<decltype(s)>> live;
      fill_live(s, live, random);
      HandleOf<decltype(s)> handle{};
      for (auto _ : state) {
        handle = s.allocate(kLivePairBytes);
        benchmark::DoNotOptimize(handle);
        s.release(handle);
      }
      release_all(s, live);
    });
  });
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["live"] = static_cast<double>(kLiveCount);
  state.counters["bytes"] = static_cast<double>(kLivePairBytes);
}

void live_replace(benchmark::State& state, SharedEnvironment& shared, Backend backend,
                  Subject subject) {
  // The (slot, size) sequence is drawn before timing and cycled through.
  constexpr std::size_t kSequence = 4096;
  std::vector<std::uint32_t> slots(kSequence);
  std::vector<std::uint32_t> sizes(kSequence);
  SplitMix64 sequence(kSeed + 1);
  for (std::size_t i = 0; i < kSequence; ++i) {
    slots[i] = static_cast<std::uint32_t>(sequence.uniform(0, kLiveCount - 1));
    sizes[i] = static_cast<std::uint32_t>(sequence.uniform(1, kLiveMaxBytes));
  }
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    with_subject(environment, [&](auto& s) {
      SplitMix64 random(kSeed);
      std::vector<HandleOf<decltype(s)>> live;
      fill_live(s, live, random);
      std::size_t next = 0;
      for (auto _ : state) {
        auto& slot = live[slots[next]];
        s.release(slot);
        slot = s.allocate(sizes[next]);
        next = (next + 1) % kSequence;
      }
      release_all(s, live);
    });
  });
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["live"] = static_cast<double>(kLiveCount);
}

void initialize(benchmark::State& state, SharedEnvironment& shared, Backend backend,
                Subject subject) {
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    BaseCUDAMemoryManager& manager = environment.context().memory_manager();
    for (auto _ : state) manager.initialize();
  });
}

void activate(benchmark::State& state, SharedEnvironment& shared, Backend backend,
              Subject subject) {
  run_benchmark(state, shared, backend, subject, [&](Environment& environment) {
    Context& context = environment.context();
    for (auto _ : state) context.prepare_for_use();
  });
}

using Body = void (*)(benchmark::State&, SharedEnvironment&, Backend, Subject);

benchmark::internal::Benchmark* add(const std::string& name, Body body, Backend backend,
                                    Subject subject) {
  auto shared = std::make_shared<SharedEnvironment>();
  return benchmark::RegisterBenchmark(
             name.c_str(), [=](benchmark::State& state) { body(state, *shared, backend, subject); })
      ->UseRealTime()
      ->MinTime(kMinTime);
}

void register_all() {
  constexpr std::size_t kPairSizes[] = {256, std::size_t{64} << 10, std::size_t{1} << 20,
                                        std::size_t{64} << 20};
  for (Backend backend : kBackends) {
    const std::string b(name_of(backend));
    for (Subject subject : kSubjects) {
      const std::string s(name_of(subject));
      for (std::size_t bytes : kPairSizes) {
        auto shared = std::make_shared<SharedEnvironment>();
        auto* bench = benchmark::RegisterBenchmark(
            ("AllocPair/" + s + "/" + b + "/" + std::to_string(bytes)).c_str(),
            [=](benchmark::State& state) { alloc_pair(state, *shared, backend, subject, bytes); });
        bench->UseRealTime();
        // 64 MiB pairs on a GPU cost tens of microseconds up to milliseconds (stream_ordered
        // maps fresh memory every time): a shorter minimum keeps the run bounded.
        bench->MinTime(bytes >= (std::size_t{64} << 20) ? kMinTime / 2 : kMinTime);
      }
      add("LivePair/" + s + "/" + b + "/live:1000/bytes:256", live_pair, backend, subject);
      add("LiveReplace/" + s + "/" + b + "/live:1000", live_replace, backend, subject);
    }
    for (std::size_t bytes : kDeferralSizes) {
      for (std::size_t max_count : kDeferralCounts) {
        const std::string count = std::to_string(max_count);
        const std::string name =
            "DeferralPair/reference/" + b + "/" + std::to_string(bytes) + "/max_count:" + count;
        auto shared = std::make_shared<SharedEnvironment>(
            RuntimeOptions::hermetic({{"EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT", count}}));
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& state) {
                                       deferral_pair(state, *shared, backend, bytes, max_count);
                                     })
            ->UseRealTime()
            ->MinTime(kMinTime);
      }
    }
    for (Subject subject : kPlugins) {
      const std::string s(name_of(subject));
      add("Initialize/" + s + "/" + b, initialize, backend, subject);
      add("Activate/" + s + "/" + b, activate, backend, subject);
    }
  }
}

}  // namespace
}  // namespace emm::bench

int main(int argc, char** argv) {
  emm::bench::register_all();
  emm::bench::register_components();
  return emm::bench::run_main(argc, argv);
}
