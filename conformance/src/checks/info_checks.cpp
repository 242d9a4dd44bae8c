// INFO — memory info (spec §4): shape and movement when provided, NotImplementedError when not.
#include "checks/checks.hpp"
#include "emm/errors.hpp"

namespace emm::conformance::checks {
namespace {

std::string describe(const MemoryInfo& info) {
  return str("{free=", info.free, ", total=", info.total, "}");
}

MemoryInfo query(ClauseRun& run, Context& context, std::string_view when) {
  try {
    return context.get_memory_info();
  } catch (const NotImplementedError& error) {
    run.fail(str("get_memory_info() ", when, " threw NotImplementedError (", error.what(),
                 ") although the plugin declares memory_info=true"));
  } catch (...) {
    run.fail(str("get_memory_info() ", when, " threw ", describe_current_exception()));
  }
}

void expect_shape(ClauseRun& run, const MemoryInfo& info, std::string_view when) {
  if (info.total == 0) {
    run.fail(str("get_memory_info() ", when, " returned ", describe(info), ": total must be > 0"));
  }
  if (info.free > info.total) {
    run.fail(
        str("get_memory_info() ", when, " returned ", describe(info), ": free must be <= total"));
  }
}

}  // namespace

// INFO-1: free <= total, total > 0, and free drops as the plugin's memory use grows — measured
// for each allocation separately. A plugin that does not pool must show every allocation's bytes;
// a pooling plugin may report pool-level figures, but a block larger than any pool chunk (one it
// must take from the driver for itself) must show in full.
EMM_CHECK(INFO_1) {
  run.require_capability();
  Context& context = run.host().context();
  const bool pooling = run.capabilities().pooling;
  const std::size_t slack = run.backend().memory_info_slack();
  const MemoryInfo at_rest = query(run, context, "at rest");
  expect_shape(run, at_rest, "at rest");
  run.record("total_bytes", at_rest.total);
  run.record("free_bytes_at_rest", at_rest.free);

  constexpr std::size_t kLarge = 256 * MiB;
  std::vector<std::shared_ptr<MemoryPointer>> held;
  std::size_t allocated = 0;
  MemoryInfo before = at_rest;
  for (const std::size_t size : {MiB, 4 * MiB, 16 * MiB, 64 * KiB, kLarge}) {
    held.push_back(allocate(run, context, size));
    allocated += size;
    const std::string when = str("after memalloc(", size, ")");
    const MemoryInfo after = query(run, context, when);
    expect_shape(run, after, when);
    if (after.total != before.total) {
      run.fail(str("get_memory_info().total changed from ", before.total, " to ", after.total, " ",
                   when, "; the total is the device's (or the pool's) capacity"));
    }
    const std::size_t drop = before.free > after.free ? before.free - after.free : 0;
    const bool must_show = !pooling || size == kLarge;
    if (must_show && drop + slack < size) {
      run.fail(str("get_memory_info().free went from ", before.free, " to ", after.free, " ", when,
                   " (a drop of ", drop, " bytes); expected it to drop by at least ", size,
                   pooling ? " (a block larger than any pool chunk is memory the plugin took "
                             "from the driver: it must show in memory info)"
                           : " (a pooling plugin declares pooling=true)"));
    }
    before = after;
  }
  const std::size_t total_drop = at_rest.free > before.free ? at_rest.free - before.free : 0;
  run.record("free_bytes_with_all_allocated", before.free);
  if (total_drop == 0) {
    run.fail(str("get_memory_info().free stayed at ", at_rest.free, " while ", allocated,
                 " bytes were allocated; even pool-level figures must drop as the plugin's "
                 "memory use grows"));
  }
  if (pooling) run.note("declared pooling: pool-level figures accepted for blocks up to 16 MiB");

  // Asking costs nothing: many calls leave device memory where it was.
  held.clear();
  const std::size_t in_use = run.backend().device_bytes_in_use();
  constexpr int kQueries = 64;
  for (int i = 0; i < kQueries; ++i) (void)query(run, context, "(repeated)");
  expect_no_growth(run, in_use, str("after ", kQueries, " get_memory_info() calls"), "before them",
                   ": get_memory_info() leaks device memory on every call");
}

// INFO-2: not provided => NotImplementedError. A plugin that declares memory info is INFO-1's to
// check: a bad figure is one failure (INFO-1), not also one here.
EMM_CHECK(INFO_2) {
  Context& context = run.host().context();
  if (run.capabilities().memory_info) {
    run.note("memory_info declared: INFO-1 checks the figures");
    return;
  }
  MemoryInfo info;
  try {
    info = context.get_memory_info();
  } catch (const NotImplementedError&) {
    run.note("get_memory_info() throws NotImplementedError, as declared (memory_info=false)");
    return;
  } catch (...) {
    run.fail(
        "the plugin declares memory_info=false, so get_memory_info() must throw "
        "emm::NotImplementedError; it threw " +
        describe_current_exception());
  }
  run.fail(
      str("the plugin declares memory_info=false, so get_memory_info() must throw "
          "emm::NotImplementedError; it returned ",
          describe(info), " (declare memory_info=true if the figures are real)"));
}

// INFO-3: memory info is provided (a warning when declared absent). Whether what is provided is
// right is INFO-1's to say, once.
EMM_CHECK(INFO_3) {
  run.require_capability();
  run.note("memory_info declared: INFO-1 checks the figures");
}

}  // namespace emm::conformance::checks
