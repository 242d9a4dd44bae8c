// What NumPy arrays in page-locked memory buy (examples/nep49_pinned), on the fake backend and
// on a GPU:
//   Nep49HtoD/<memory>/<backend>/<bytes>   cuMemcpyHtoD of a host buffer of `bytes` into device
//       memory: `pageable` (malloc, where NumPy's default handler puts arrays) against `pinned`
//       (the pinned handler's blocks: the plugin's memhostalloc). Bytes per second.
//   Nep49Alloc/<handler>/<backend>/<bytes> one malloc + free through the handler: `libc`
//       (NumPy 1.x's default handler above its small-block cache), `pinned_reference` (the
//       reference manager's memhostalloc), `pinned_pool` (the pool example's).
// On the fake backend a copy is a memcpy and a host allocation is the fake's bookkeeping: its
// figures only prove the benchmarks run; docs/performance.md quotes the GPU's.
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_common.hpp"
#include "emm/examples/pinned_handler.hpp"

namespace emm::bench {
namespace {

using emm::examples::PinnedHandler;

constexpr std::size_t kSizes[] = {std::size_t{1} << 20, std::size_t{64} << 20,
                                  std::size_t{1} << 30};

// Binds the pinned handler to an environment's runtime for one benchmark.
struct PinnedBinding {
  explicit PinnedBinding(Environment& environment) {
    PinnedHandler::use_runtime(&environment.runtime());
  }
  ~PinnedBinding() { PinnedHandler::use_runtime(nullptr); }
  PinnedBinding(const PinnedBinding&) = delete;
  PinnedBinding& operator=(const PinnedBinding&) = delete;
};

emm::nep49::Handler& pinned() { return *PinnedHandler::instance(false).handler(); }

void htod(benchmark::State& state, Backend backend, bool use_pinned) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  try {
    Environment environment(backend, Subject::reference);
    PinnedBinding binding(environment);
    emm::nep49::Allocator& a = pinned().allocator;
    void* host = use_pinned ? a.malloc(a.ctx, bytes) : std::malloc(bytes);
    if (host == nullptr) {
      state.SkipWithError("no host buffer of that size");
      return;
    }
    std::memset(host, 1, bytes);  // pageable pages are touched, as a filled NumPy array's are
    auto device = environment.context().memalloc(bytes);
    for (auto _ : state) {
      environment.driver().memcpy_htod(device->device_pointer(), host, bytes);
    }
    environment.driver().ctx_synchronize();
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(bytes));
    device.reset();
    if (use_pinned) {
      a.free(a.ctx, host, bytes);
    } else {
      std::free(host);
    }
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
  }
}

enum class AllocHandler { libc, pinned_reference, pinned_pool };

void alloc(benchmark::State& state, Backend backend, AllocHandler which) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  try {
    if (which == AllocHandler::libc) {
      for (auto _ : state) {
        void* p = std::malloc(bytes);
        benchmark::DoNotOptimize(p);
        std::free(p);
      }
      return;
    }
    if (which == AllocHandler::pinned_pool && !is_built(Subject::pool)) {
      state.SkipWithError("the pool example is not built");
      return;
    }
    Environment environment(
        backend, which == AllocHandler::pinned_pool ? Subject::pool : Subject::reference);
    PinnedBinding binding(environment);
    emm::nep49::Allocator& a = pinned().allocator;
    for (auto _ : state) {
      void* p = a.malloc(a.ctx, bytes);
      if (p == nullptr) {
        state.SkipWithError("the pinned handler returned NULL");
        break;
      }
      a.free(a.ctx, p, bytes);
    }
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
  }
}

void register_all() {
  for (const Backend backend : kBackends) {
    const std::string b(name_of(backend));
    for (const bool use_pinned : {false, true}) {
      auto* bench = benchmark::RegisterBenchmark(
          ("Nep49HtoD/" + std::string(use_pinned ? "pinned" : "pageable") + "/" + b).c_str(),
          [backend, use_pinned](benchmark::State& state) { htod(state, backend, use_pinned); });
      for (const std::size_t size : kSizes) bench->Arg(static_cast<std::int64_t>(size));
      bench->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
    for (const auto& [which, name] : {std::pair{AllocHandler::libc, "libc"},
                                      std::pair{AllocHandler::pinned_reference, "pinned_reference"},
                                      std::pair{AllocHandler::pinned_pool, "pinned_pool"}}) {
      if (which == AllocHandler::libc && backend == Backend::gpu) continue;  // no driver in it
      auto* bench = benchmark::RegisterBenchmark(
          ("Nep49Alloc/" + std::string(name) + "/" + (which == AllocHandler::libc ? "host" : b))
              .c_str(),
          [backend, which = which](benchmark::State& state) { alloc(state, backend, which); });
      for (const std::size_t size : kSizes) bench->Arg(static_cast<std::int64_t>(size));
      bench->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace emm::bench

int main(int argc, char** argv) {
  emm::bench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
