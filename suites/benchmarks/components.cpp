#include "components.hpp"

#include "bench_common.hpp"
#include "emm/errors.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/pending_deallocs.hpp"

#ifdef EMM_BENCH_HAVE_POOL
#include "emm/examples/slab_allocator.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace emm::bench {
namespace {

// A plugin whose memalloc returns copies of one preallocated pointer: what remains of a
// Context::memalloc + release is the host's dispatch (make current, initialised check, virtual
// call) and the shared_ptr traffic.
class DispatchProbe : public HostOnlyCUDAMemoryManager {
 public:
  explicit DispatchProbe(Context* context)
      : HostOnlyCUDAMemoryManager(context),
        memory_(std::make_shared<MemoryPointer>(context, CUdeviceptr{0x1000}, 256)) {}
  std::shared_ptr<MemoryPointer> memalloc(std::size_t) override { return memory_; }
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>&) override {
    throw NotImplementedError("DispatchProbe: no IPC");
  }
  MemoryInfo get_memory_info() override {
    throw NotImplementedError("DispatchProbe: no memory info");
  }
  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  std::shared_ptr<MemoryPointer> memory_;
};

void skip_on_error(benchmark::State& state, const char* what, const std::exception& error) {
  // "no GPU: ..." stays first, so reports tell a missing GPU from a failure.
  if (dynamic_cast<const DriverUnavailableError*>(&error) != nullptr) {
    state.SkipWithError(error.what());
  } else {
    state.SkipWithError((std::string(what) + ": " + error.what()).c_str());
  }
}

void ctx_get_current(benchmark::State& state, Backend backend) {
  try {
    Runtime runtime(make_driver(backend), RuntimeOptions::hermetic());
    runtime.get_context(0);
    Driver& driver = runtime.driver();
    for (auto _ : state) benchmark::DoNotOptimize(driver.ctx_get_current());
  } catch (const std::exception& error) {
    skip_on_error(state, "ctx_get_current", error);
  }
}

void context_memalloc_dispatch(benchmark::State& state, Backend backend) {
  try {
    Runtime runtime(make_driver(backend), RuntimeOptions::hermetic());
    runtime.set_memory_manager<DispatchProbe>();
    Context& context = runtime.get_context(0);
    for (auto _ : state) {
      std::shared_ptr<MemoryPointer> memory = context.memalloc(256);
      benchmark::DoNotOptimize(memory.get());
    }
  } catch (const std::exception& error) {
    skip_on_error(state, "context_memalloc_dispatch", error);
  }
}

// The limit of the reference manager's strategy: 256-byte cuMemAlloc pairs whose frees run in
// batches of `batch` (11 is its default flush: the 11th pending free), with no host overhead at
// all. Counters: per_pair_ns, and alloc_ns / free_ns per driver call.
void driver_batched_pairs(benchmark::State& state, Backend backend, std::size_t batch) {
  double alloc_ns = 0;
  double free_ns = 0;
  try {
    Runtime runtime(make_driver(backend), RuntimeOptions::hermetic());
    runtime.get_context(0);
    Driver& driver = runtime.driver();
    std::vector<CUdeviceptr> pointers(batch);
    for (auto _ : state) {
      Stopwatch watch;
      watch.start();
      for (CUdeviceptr& pointer : pointers) pointer = driver.mem_alloc(256);
      alloc_ns += watch.stop_ns();
      watch.start();
      for (CUdeviceptr& pointer : pointers) driver.mem_free(pointer);
      free_ns += watch.stop_ns();
    }
  } catch (const std::exception& error) {
    skip_on_error(state, "driver_batched_pairs", error);
    return;
  }
  if (state.iterations() > 0) {
    const double calls = static_cast<double>(state.iterations()) * static_cast<double>(batch);
    state.counters["per_pair_ns"] = (alloc_ns + free_ns) / calls;
    state.counters["alloc_ns"] = alloc_ns / calls;
    state.counters["free_ns"] = free_ns / calls;
  }
}

void memory_pointer_with_finalizer(benchmark::State& state) {
  std::uint64_t finalized = 0;
  for (auto _ : state) {
    auto memory = std::make_shared<MemoryPointer>(nullptr, CUdeviceptr{0x1000}, 256, nullptr,
                                                  [&finalized] { ++finalized; });
    benchmark::DoNotOptimize(memory.get());
  }
  benchmark::DoNotOptimize(finalized);
}

void auto_free_pointer_own(benchmark::State& state) {
  std::uint64_t finalized = 0;
  for (auto _ : state) {
    std::shared_ptr<MemoryPointer> owned =
        std::make_shared<AutoFreePointer>(nullptr, CUdeviceptr{0x1000}, 256, nullptr, [&finalized] {
          ++finalized;
        })->own();
    benchmark::DoNotOptimize(owned.get());
  }
  benchmark::DoNotOptimize(finalized);
}

void pending_deallocs_add_item(benchmark::State& state) {
  PendingDeallocs queue(DeallocConfig{}, std::size_t{80} << 30);
  std::uint64_t freed = 0;
  for (auto _ : state) queue.add_item([&freed] { ++freed; }, 256);
  queue.clear();
  benchmark::DoNotOptimize(freed);
}

void mutex_lock_unlock(benchmark::State& state) {
  std::mutex mutex;
  for (auto _ : state) {
    std::lock_guard lock(mutex);
    benchmark::ClobberMemory();
  }
}

#ifdef EMM_BENCH_HAVE_POOL
void slab_allocator_pair(benchmark::State& state) {
  using examples::SlabAllocator;
  SlabAllocator slabs;
  constexpr std::size_t kSlab = std::size_t{2} << 20;
  CUdeviceptr next_base = CUdeviceptr{1} << 40;
  SplitMix64 random(kSeed);
  std::vector<SlabAllocator::Block*> live;
  for (int i = 0; i < 1000; ++i) {
    const std::size_t size = random.uniform(1, std::size_t{1} << 20);
    SlabAllocator::Block* block = slabs.allocate(size);
    if (block == nullptr) {
      block = slabs.allocate_from(slabs.add_slab(next_base, kSlab), size);
      next_base += kSlab;
    }
    live.push_back(block);
  }
  for (auto _ : state) {
    SlabAllocator::Block* block = slabs.allocate(256);
    benchmark::DoNotOptimize(block);
    slabs.free(block);
  }
  for (SlabAllocator::Block* block : live) slabs.free(block);
}
#endif

void add(const std::string& name, std::function<void(benchmark::State&)> body) {
  benchmark::RegisterBenchmark(name.c_str(), [body](benchmark::State& state) { body(state); })
      ->UseRealTime()
      ->MinTime(0.05);
}

}  // namespace

void register_components() {
  for (Backend backend : kBackends) {
    const std::string b(name_of(backend));
    add("Component/ctx_get_current/" + b,
        [backend](benchmark::State& state) { ctx_get_current(state, backend); });
    add("Component/context_memalloc_dispatch/" + b,
        [backend](benchmark::State& state) { context_memalloc_dispatch(state, backend); });
    // 11: the reference manager's default flush; 64: what a larger
    // EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT would buy.
    for (std::size_t batch : {std::size_t{11}, std::size_t{64}}) {
      add("Component/driver_batched_pairs/" + b + "/batch:" + std::to_string(batch),
          [backend, batch](benchmark::State& state) {
            driver_batched_pairs(state, backend, batch);
          });
    }
  }
  add("Component/memory_pointer_with_finalizer/host", memory_pointer_with_finalizer);
  add("Component/auto_free_pointer_own/host", auto_free_pointer_own);
  add("Component/pending_deallocs_add_item/host", pending_deallocs_add_item);
  add("Component/mutex_lock_unlock/host", mutex_lock_unlock);
#ifdef EMM_BENCH_HAVE_POOL
  add("Component/slab_allocator_pair_1000_live/host", slab_allocator_pair);
#endif
}

}  // namespace emm::bench
