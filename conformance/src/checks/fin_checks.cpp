// FIN — finalizers and pointer lifetime (spec §4): exactly once, only after the last
// reference, and only the allocation whose last reference went.
#include <algorithm>
#include <array>
#include <numeric>
#include <random>

#include "checks/checks.hpp"
#include "emm/host_only_memory_manager.hpp"

namespace emm::conformance::checks {
namespace {

constexpr std::array<const char*, 6> kReferenceNames = {
    "the pointer memalloc returned", "a copy of it", "its own()", "its view(0)", "its view(1)",
    "its view(16, 4096)->view(8)"};

std::string names(const std::vector<std::size_t>& indices) {
  std::string text;
  for (std::size_t i : indices) {
    if (!text.empty()) text += ", ";
    text += kReferenceNames[i];
  }
  return text;
}

// True while the allocation behind `base` has not been finalized.
bool alive(const std::weak_ptr<MemoryPointer>& base) {
  const auto owner = base.lock();
  return owner && (!owner->is_managed() || owner->finalizer_alive());
}

bool finalized(const std::weak_ptr<MemoryPointer>& base) {
  const auto owner = base.lock();
  return !owner || (owner->is_managed() && !owner->finalizer_alive());
}

// True when the driver block at `pointer` is exactly this allocation (the plugin allocates
// straight from the driver), so the driver shows when it is freed.
bool exact_driver_allocation(const std::optional<AddressRange>& block, CUdeviceptr pointer,
                             std::size_t size) {
  return block && block->base == pointer && block->size == size;
}

void scenario(ClauseRun& run, Context& context, const std::vector<std::size_t>& order,
              std::size_t number) {
  constexpr std::size_t kSize = 8192 + 40;
  const std::string where = str("(drop order #", number, ")");
  auto memory = allocate(run, context, kSize);
  const CUdeviceptr pointer = memory->device_pointer();
  const std::uint64_t seed = 2100 + number;
  write_pattern(run, pointer, kSize, seed, "memalloc(8232)");
  const std::optional<AddressRange> block = run.backend().driver_block(pointer);
  const std::weak_ptr<MemoryPointer> base = memory->owner();

  std::vector<std::shared_ptr<MemoryPointer>> refs(kReferenceNames.size());
  refs[0] = memory;
  refs[1] = memory;
  refs[2] = memory->own();
  refs[3] = memory->view(0);
  refs[4] = memory->view(1);
  refs[5] = memory->view(16, 4096)->view(8);
  memory.reset();

  std::vector<std::size_t> dropped;
  for (std::size_t step = 0; step + 1 < order.size(); ++step) {
    refs[order[step]].reset();
    dropped.push_back(order[step]);
    std::vector<std::size_t> remaining(order.begin() + static_cast<long>(step) + 1, order.end());
    const std::string state = str("after dropping ", names(dropped), " while ", names(remaining),
                                  " still reference(s) it ", where);
    if (!alive(base)) run.fail("the finalizer ran " + state);
    if (block && !run.backend().driver_block(pointer))
      run.fail("the driver allocation was freed " + state);
    expect_pattern(run, pointer, kSize, seed, "the allocation " + state);
    auto probe = allocate(run, context, kSize, "probe for early reuse");
    if (overlap(probe->device_pointer(), kSize, pointer, kSize)) {
      run.fail(str("a new memalloc(", kSize, ") at ", hex(probe->device_pointer()),
                   " overlaps the allocation at ", hex(pointer), " ", state,
                   ": its block was returned early"));
    }
  }
  refs[order.back()].reset();
  if (!finalized(base)) {
    run.fail(str("after dropping every reference ", where,
                 " the allocation is still alive with its finalizer pending (does the plugin "
                 "keep a std::shared_ptr to what it returned?)"));
  }
  flush_point(context.memory_manager());
  if (dynamic_cast<HostOnlyCUDAMemoryManager*>(&context.memory_manager()) != nullptr &&
      exact_driver_allocation(block, pointer, kSize) &&
      exact_driver_allocation(run.backend().driver_block(pointer), pointer, kSize)) {
    run.fail(str("after dropping every reference ", where,
                 " and flushing the deferred-free queue, the driver allocation at ", hex(pointer),
                 " is still allocated: the finalizer did not free it"));
  }
}

}  // namespace

// FIN-1: each finalizer exactly once, only after the last reference, never never.
EMM_CHECK(FIN_1) {
  Diagnostics::Capture capture;
  const std::optional<std::size_t> invalid_before = run.backend().invalid_frees();
  Context& context = run.host().context();

  std::vector<std::size_t> order(kReferenceNames.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 random(2101);
  std::size_t number = 0;
  scenario(run, context, order, ++number);
  std::reverse(order.begin(), order.end());
  scenario(run, context, order, ++number);
  for (int i = 0; i < 10; ++i) {
    std::shuffle(order.begin(), order.end(), random);
    scenario(run, context, order, ++number);
  }
  run.record("drop_orders", number);

  // Not twice: the driver saw no double free, and no block is handed out twice.
  flush_point(context.memory_manager());
  expect_no_ignored_exceptions(run, capture, "while references were dropped");
  expect_no_invalid_frees(run, invalid_before,
                          "while references were dropped: a finalizer freed its memory twice");
  {
    IntervalSet live;
    std::vector<std::shared_ptr<MemoryPointer>> held;
    for (int i = 0; i < 16; ++i) {
      auto memory = allocate(run, context, 8192 + 40, "after the drop orders");
      if (auto other = live.insert(memory->device_pointer(), memory->size(),
                                   str("allocation at ", hex(memory->device_pointer())))) {
        run.fail(str("two live allocations made after the drop orders overlap (", *other,
                     " and one at ", hex(memory->device_pointer()),
                     "): a block freed twice was handed out twice"));
      }
      held.push_back(std::move(memory));
    }
  }

  // Not never: repeated allocate/release cycles must not make device memory grow.
  // 32 MiB go through; a caching pool may keep a few slabs of it, a leak keeps all of it (more
  // than the allowance plus the gpu's measurement slack).
  constexpr int kCycles = 512;
  constexpr std::size_t kCycleSize = 64 * KiB;
  constexpr std::size_t kAllowedGrowth = 4 * MiB;
  flush_point(context.memory_manager());
  const std::size_t before = run.backend().device_bytes_in_use();
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    auto memory = allocate(run, context, kCycleSize, "release cycle");
    auto view = memory->view(1);
    memory.reset();
    view.reset();
  }
  flush_point(context.memory_manager());
  const std::size_t growth = expect_no_growth(
      run, before, str("after ", kCycles, " cycles of memalloc(", kCycleSize, ") and release"),
      "before them", ": released allocations are never freed (finalizer never runs or never frees)",
      kAllowedGrowth);
  run.record("cycle_growth_bytes", growth);
}

// FIN-5: dropping a buffer frees it and no other.
EMM_CHECK(FIN_5) {
  Diagnostics::Capture capture;
  const std::optional<std::size_t> invalid_before = run.backend().invalid_frees();
  Context& context = run.host().context();
  const bool host_only =
      dynamic_cast<HostOnlyCUDAMemoryManager*>(&context.memory_manager()) != nullptr;
  const std::array<std::size_t, 3> sizes = {4096 + 7, 64 * KiB + 9, MiB + 3};

  for (std::size_t victim = 0; victim < sizes.size(); ++victim) {
    struct Buffer {
      std::shared_ptr<MemoryPointer> memory;
      CUdeviceptr pointer;
      std::optional<AddressRange> block;
      std::weak_ptr<MemoryPointer> base;
    };
    std::vector<Buffer> buffers;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto memory = allocate(run, context, sizes[i]);
      write_pattern(run, memory->device_pointer(), sizes[i], 2500 + 10 * victim + i,
                    str("memalloc(", sizes[i], ")"));
      buffers.push_back({memory, memory->device_pointer(),
                         run.backend().driver_block(memory->device_pointer()), memory->owner()});
    }
    const std::string dropped = str("memalloc(", sizes[victim], ")");
    buffers[victim].memory.reset();
    flush_point(context.memory_manager());
    if (!finalized(buffers[victim].base)) {
      run.fail(str("dropping the only reference to ", dropped, " did not run its finalizer"));
    }
    if (host_only &&
        exact_driver_allocation(buffers[victim].block, buffers[victim].pointer, sizes[victim]) &&
        exact_driver_allocation(run.backend().driver_block(buffers[victim].pointer),
                                buffers[victim].pointer, sizes[victim])) {
      run.fail(str("dropping ", dropped,
                   " and flushing the deferred-free queue did not free it in the driver"));
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (i == victim) continue;
      const std::string survivor = str("memalloc(", sizes[i], ") (not dropped)");
      if (!alive(buffers[i].base)) {
        run.fail(str("dropping ", dropped, " ran the finalizer of ", survivor));
      }
      if (buffers[i].block && !run.backend().driver_block(buffers[i].pointer)) {
        run.fail(str("dropping ", dropped, " freed ", survivor, " in the driver"));
      }
      expect_pattern(run, buffers[i].pointer, sizes[i], 2500 + 10 * victim + i,
                     str(survivor, " after dropping ", dropped));
    }
    for (int k = 0; k < 4; ++k) {
      auto fresh = allocate(run, context, sizes[victim], "after the drop");
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (i != victim &&
            overlap(fresh->device_pointer(), sizes[victim], buffers[i].pointer, sizes[i])) {
          run.fail(str("after dropping ", dropped, ", a new memalloc(", sizes[victim], ") at ",
                       hex(fresh->device_pointer()), " overlaps the live memalloc(", sizes[i],
                       ") at ", hex(buffers[i].pointer), ": the wrong block was freed"));
        }
      }
    }
  }
  flush_point(context.memory_manager());
  expect_no_ignored_exceptions(run, capture, "while buffers were dropped");
  expect_no_invalid_frees(run, invalid_before, "while buffers were dropped one at a time");
}

}  // namespace emm::conformance::checks
