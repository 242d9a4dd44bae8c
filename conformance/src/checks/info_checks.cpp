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

// INFO-1: free <= total, total > 0, free drops as the plugin's memory use grows.
EMM_CHECK(INFO_1) {
  run.require_capability();
  Context& context = run.host().context();
  const MemoryInfo before = query(run, context, "at rest");
  expect_shape(run, before, "at rest");
  std::vector<std::shared_ptr<MemoryPointer>> held;
  std::size_t allocated = 0;
  held.push_back(allocate(run, context, 64 * MiB));
  allocated += 64 * MiB;
  for (int i = 0; i < 8; ++i) {
    held.push_back(allocate(run, context, MiB));
    allocated += MiB;
  }
  const MemoryInfo after = query(run, context, "with 72 MiB allocated");
  expect_shape(run, after, "with 72 MiB allocated");
  run.record("total_bytes", before.total);
  run.record("free_bytes_at_rest", before.free);
  run.record("free_bytes_with_72MiB", after.free);
  const std::size_t drop = before.free > after.free ? before.free - after.free : 0;
  if (run.capabilities().pooling) {
    // Pool-level figures may move by other amounts than the bytes handed out, but 72 MiB in use
    // must show.
    if (drop == 0) {
      run.fail(str("get_memory_info().free stayed at ", before.free, " -> ", after.free, " while ",
                   allocated,
                   " bytes were allocated; even pool-level figures must "
                   "drop as the plugin's memory use grows"));
    }
    run.note("declared pooling: free must drop, by any amount (pool-level figures)");
    return;
  }
  if (drop + run.backend().memory_slack() < allocated) {
    run.fail(str("get_memory_info().free went from ", before.free, " to ", after.free, " while ",
                 allocated,
                 " bytes were allocated; expected it to drop by at least "
                 "that much (a pooling plugin declares pooling=true)"));
  }
}

// INFO-2: not provided => NotImplementedError; provided => sane figures.
EMM_CHECK(INFO_2) {
  Context& context = run.host().context();
  if (run.capabilities().memory_info) {
    expect_shape(run, query(run, context, "(memory_info declared)"), "(memory_info declared)");
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

// INFO-3: memory info is provided (a warning when declared absent).
EMM_CHECK(INFO_3) {
  run.require_capability();
  Context& context = run.host().context();
  expect_shape(run, query(run, context, "(memory_info declared)"), "(memory_info declared)");
}

}  // namespace emm::conformance::checks
