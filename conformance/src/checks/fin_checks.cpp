// FIN — finalizers and pointer lifetime (spec §4, §7): exactly once, only after the last
// reference, and only the allocation whose last reference went.
//
// Judged on the pointer (the kit's pointer types say whether and how often a finalizer ran)
// and by reuse safety: the bytes of a live allocation are never handed out again while any
// reference to it lives. Whether the driver block was freed is evidence only for a plugin that
// declares no_caching (spec §7): a caching pool keeps blocks it no longer hands out.
#include <algorithm>
#include <array>
#include <numeric>
#include <random>

#include "checks/checks.hpp"

namespace emm::conformance::checks {
namespace {

constexpr std::array<const char*, 6> kReferenceNames = {
    "the pointer memalloc returned", "a copy of it", "its own()", "its view(0)", "its view(1)",
    "its view(16, 4096)->view(8)"};

// For a plugin declaring no_caching: after the last reference and a flush point, a block the
// plugin took straight from the driver is back with the driver.
void expect_returned_to_driver(ClauseRun& run, const std::optional<AddressRange>& block,
                               CUdeviceptr pointer, std::size_t size, std::string_view when) {
  if (!run.capabilities().no_caching || !exact_driver_allocation(block, pointer, size)) return;
  if (exact_driver_allocation(run.backend().driver_block(pointer), pointer, size)) {
    run.fail(str(when, ", the driver allocation at ", hex(pointer),
                 " is still allocated although the plugin declares no_caching: its finalizer "
                 "did not free it (declare no_caching=false if the plugin keeps freed memory)"));
  }
}

// A new allocation overlapping `pointer` while references to it live (its finalizer has not
// run: that is checked first).
void expect_not_handed_out(ClauseRun& run, const std::shared_ptr<MemoryPointer>& probe,
                           CUdeviceptr pointer, std::size_t size, std::string_view state) {
  if (!overlap(probe->device_pointer(), probe->size(), pointer, size)) return;
  run.fail(str("a new memalloc(", probe->size(), ") at ", hex(probe->device_pointer()),
               " overlaps the allocation at ", hex(pointer), " ", state,
               ": the plugin handed out memory that is still in use (its finalizer has not "
               "run)"));
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

  std::vector<std::shared_ptr<MemoryPointer>> refs = six_references(memory);
  memory.reset();

  std::vector<std::size_t> dropped;
  for (std::size_t step = 0; step + 1 < order.size(); ++step) {
    refs[order[step]].reset();
    dropped.push_back(order[step]);
    std::vector<std::size_t> remaining(order.begin() + static_cast<long>(step) + 1, order.end());
    const std::string state =
        str("after dropping ", reference_names(kReferenceNames, dropped), " while ",
            reference_names(kReferenceNames, remaining), " still reference(s) it ", where);
    if (!alive(base)) run.fail("the finalizer ran " + state);
    if (block && !run.backend().driver_block(pointer)) {
      run.fail("the driver allocation was freed " + state);
    }
    expect_pattern(run, pointer, kSize, seed, "the allocation " + state);
    auto probe = allocate(run, context, kSize, "probe for early reuse");
    expect_not_handed_out(run, probe, pointer, kSize, state);
  }
  refs[order.back()].reset();
  if (!finalized(base)) {
    run.fail(str("after dropping every reference ", where,
                 " the allocation is still alive with its finalizer pending (does the plugin "
                 "keep a std::shared_ptr to what it returned?)"));
  }
  flush_point(context.memory_manager());
  expect_returned_to_driver(
      run, block, pointer, kSize,
      str("after dropping every reference ", where, " and flushing the deferred-free queue"));
}

// Reuse safety under churn: many live allocations, each holding a pattern and held through a
// random kind of reference, released in random order while new ones are made. A new allocation
// never overlaps a live one, and every live one keeps its bytes.
void churn(ClauseRun& run, Context& context) {
  constexpr std::uint64_t kSeed = 0xF1A1;
  constexpr int kOperations = 600;
  std::mt19937_64 random(kSeed);
  struct Live {
    std::shared_ptr<MemoryPointer> reference;  // the pointer, own() or a view of it
    CUdeviceptr pointer;
    std::size_t size;
    std::uint64_t seed;
    std::weak_ptr<MemoryPointer> base;
  };
  std::vector<Live> live;
  auto verify = [&](const Live& item, std::string_view when) {
    if (finalized(item.base)) {
      run.fail(str("churn (seed ", kSeed, "): the finalizer of the memalloc(", item.size, ") at ",
                   hex(item.pointer), " ran while a reference was held, ", when));
    }
    expect_pattern(run, item.pointer, item.size, item.seed,
                   str("churn (seed ", kSeed, "): the live memalloc(", item.size, ") at ",
                       hex(item.pointer), " ", when));
  };
  for (int op = 0; op < kOperations; ++op) {
    if (live.empty() || (live.size() < 48 && random() % 100 < 55)) {
      const unsigned bucket = random() % 10;
      const std::size_t size = bucket < 6   ? 1 + random() % 1024
                               : bucket < 9 ? 1024 + random() % (64 * KiB)
                                            : 64 * KiB + random() % MiB;
      auto memory = allocate(run, context, size, "churn");
      const CUdeviceptr pointer = memory->device_pointer();
      for (const Live& other : live) {
        if (overlap(pointer, size, other.pointer, other.size)) {
          run.fail(str(
              "churn (seed ", kSeed, ", operation ", op, "): memalloc(", size, ") at ",
              hex(pointer), " overlaps the live memalloc(", other.size, ") at ", hex(other.pointer),
              finalized(other.base) ? ": its finalizer ran while a reference was held"
                                    : ": the plugin handed out memory that is still in use"));
        }
      }
      const std::uint64_t seed = kSeed + static_cast<std::uint64_t>(op);
      write_pattern(run, pointer, size, seed, str("churn memalloc(", size, ")"));
      std::weak_ptr<MemoryPointer> base = memory->owner();
      std::shared_ptr<MemoryPointer> reference;
      switch (random() % 3) {
        case 0:
          reference = std::move(memory);
          break;
        case 1:
          reference = memory->own();
          break;
        default:
          reference = memory->view(0);
          break;
      }
      live.push_back({std::move(reference), pointer, size, seed, std::move(base)});
    } else {
      const std::size_t victim = random() % live.size();
      std::swap(live[victim], live.back());
      live.pop_back();
    }
    if (op % 100 == 99) {
      for (const Live& item : live) verify(item, str("after ", op + 1, " operations"));
    }
  }
  for (const Live& item : live) verify(item, "at the end");
  run.record("churn_operations", static_cast<std::size_t>(kOperations));
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
  churn(run, context);

  // Not twice: the driver saw no double free, and no block is handed out twice.
  flush_point(context.memory_manager());
  expect_no_ignored_exceptions(run, capture, "while references were dropped");
  expect_no_invalid_frees(run, invalid_before,
                          "while references were dropped: a finalizer freed its memory twice");
  // A released block is handed out at most once: for the drop orders' size and for sizes a
  // cache may treat apart (page multiples, a small and a large class), release one block, then
  // hold many of that size together.
  for (const std::size_t size :
       {std::size_t{8192 + 40}, std::size_t{4096}, std::size_t{256}, std::size_t{64 * KiB}}) {
    allocate(run, context, size, "before a release")->view(0);  // made and released at once
    flush_point(context.memory_manager());
    IntervalSet live;
    std::vector<std::shared_ptr<MemoryPointer>> held;
    for (int i = 0; i < 16; ++i) {
      auto memory = allocate(run, context, size, "after the drop orders");
      if (auto other = live.insert(memory->device_pointer(), memory->size(),
                                   str("allocation at ", hex(memory->device_pointer())))) {
        run.fail(str("two live allocations made after the drop orders overlap (", *other,
                     " and one at ", hex(memory->device_pointer()),
                     "): a block freed twice was handed out twice"));
      }
      held.push_back(std::move(memory));
    }
  }

  // Not never, through the driver: repeated allocate/release cycles must not make device memory
  // grow. Evidence only for a plugin that declares no_caching (spec §8: how much memory grows
  // while a plugin holds it is its business until reset()); for the others "not never" is the
  // pointer's finalizer, which the property checks after every last release.
  if (!run.capabilities().no_caching) {
    run.note(
        "memory growth over release cycles not judged: the plugin may hold what it frees "
        "(it does not declare no_caching); the finalizers' runs are");
    return;
  }
  // 32 MiB go through; a leak keeps all of it (more than the allowance plus the gpu's
  // measurement slack).
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

// FIN-5: dropping a buffer frees it and no other, whatever the release order.
EMM_CHECK(FIN_5) {
  Diagnostics::Capture capture;
  const std::optional<std::size_t> invalid_before = run.backend().invalid_frees();
  Context& context = run.host().context();
  const std::array<std::size_t, 4> sizes = {4096 + 7, 64 * KiB + 9, 256, MiB + 3};
  struct Buffer {
    std::shared_ptr<MemoryPointer> memory;
    CUdeviceptr pointer;
    std::size_t size;
    std::uint64_t seed;
    std::optional<AddressRange> block;
    std::weak_ptr<MemoryPointer> base;
  };

  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 random(2501);
  constexpr int kOrders = 6;
  for (int round = 0; round < kOrders; ++round) {
    if (round == 1) std::reverse(order.begin(), order.end());
    if (round >= 2) std::shuffle(order.begin(), order.end(), random);
    std::vector<Buffer> buffers;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto memory = allocate(run, context, sizes[i]);
      const std::uint64_t seed = 2500 + 10 * static_cast<std::uint64_t>(round) + i;
      write_pattern(run, memory->device_pointer(), sizes[i], seed, str("memalloc(", sizes[i], ")"));
      buffers.push_back({memory, memory->device_pointer(), sizes[i], seed,
                         run.backend().driver_block(memory->device_pointer()), memory->owner()});
    }
    for (std::size_t step = 0; step < order.size(); ++step) {
      Buffer& victim = buffers[order[step]];
      const std::string dropped =
          str("memalloc(", victim.size, ") (release order #", round + 1, ", step ", step + 1, ")");
      victim.memory.reset();
      flush_point(context.memory_manager());
      if (!finalized(victim.base)) {
        run.fail(str("dropping the only reference to ", dropped, " did not run its finalizer"));
      }
      expect_returned_to_driver(run, victim.block, victim.pointer, victim.size,
                                str("after dropping ", dropped, " and a flush point"));
      for (std::size_t later = step + 1; later < order.size(); ++later) {
        const Buffer& survivor = buffers[order[later]];
        const std::string what = str("memalloc(", survivor.size, ") (not dropped)");
        if (!alive(survivor.base)) {
          run.fail(str("dropping ", dropped, " ran the finalizer of ", what));
        }
        if (survivor.block && !run.backend().driver_block(survivor.pointer)) {
          run.fail(str("dropping ", dropped, " freed ", what, " in the driver"));
        }
        expect_pattern(run, survivor.pointer, survivor.size, survivor.seed,
                       str(what, " after dropping ", dropped));
        for (int k = 0; k < 2; ++k) {
          auto fresh = allocate(run, context, victim.size, "after the drop");
          if (overlap(fresh->device_pointer(), victim.size, survivor.pointer, survivor.size)) {
            run.fail(str("after dropping ", dropped, ", a new memalloc(", victim.size, ") at ",
                         hex(fresh->device_pointer()), " overlaps the live ", what, " at ",
                         hex(survivor.pointer), ": the wrong block was freed"));
          }
        }
      }
    }
  }
  run.record("release_orders", static_cast<std::size_t>(kOrders));
  flush_point(context.memory_manager());
  expect_no_ignored_exceptions(run, capture, "while buffers were dropped");
  expect_no_invalid_frees(run, invalid_before, "while buffers were dropped one at a time");
}

}  // namespace emm::conformance::checks
