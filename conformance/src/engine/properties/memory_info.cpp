// INFO as properties of sequences: memory info read at any point, among allocations, releases
// and resets.
#include "emm/errors.hpp"
#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

std::string describe(const MemoryInfo& info) {
  return str("{free=", info.free, ", total=", info.total, "}");
}

// INFO-1: free <= total, total > 0 and steady, and (for a plugin that does not pool) free drops
// by at least what the plugin took from the driver between two reads with only allocations in
// between. What the plugin took is the driver's figure, so a cache serving from freed blocks is
// not asked to show them again.
class MemoryInfoShape final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    // Out of memory, too: a plugin's out-of-memory path gives cached memory back, and its
    // figures must stay true after that as after any other call.
    return {{CommandKind::memalloc, 4}, {CommandKind::memory_info, 4},
            {CommandKind::release, 2},  {CommandKind::burst, 1},
            {CommandKind::fill, 1},     {CommandKind::out_of_memory, 1},
            {CommandKind::reset, 1},    {CommandKind::initialize, 1}};
  }
  void memory_info(Session& session, int device, const std::optional<MemoryInfo>& info,
                   const Snapshot& now) const override {
    if (!info) {
      session.fail_thrown("get_memory_info() to return figures (the plugin declares memory_info)");
    }
    if (info->total == 0 || info->free > info->total) {
      session.fail(
          str("expected get_memory_info() to return free <= total and total > 0; seen: ",
              describe(*info)),
          "EXPECT_LE(context().get_memory_info().free, context().get_memory_info().total);",
          "assert ctx.get_memory_info().free <= ctx.get_memory_info().total");
    }
    // Memory the caller holds is not free: with the device's total reported, free + what the
    // caller's live allocations of the device take cannot exceed it (a cache that counts a
    // block it handed out again as free breaks this).
    if (info->total == session.backend().device_capacity(device)) {
      std::size_t held = 0;
      for (const auto& [id, a] : session.allocations()) {
        if (live(a) && on_device(a.model.source) && a.model.device == device) held += a.model.size;
      }
      if (info->free + held > info->total) {
        session.fail(str("expected get_memory_info().free to leave out the ", held,
                         " bytes the caller's live allocations hold (free + held <= total); "
                         "seen: ",
                         describe(*info), ", free + held = ", info->free + held,
                         " (memory counted as free twice?)"));
      }
    }
    Reads& reads = session.state<Reads>();
    Read& last = reads.by_device[device];
    const std::size_t in_use = session.backend().device_bytes_in_use_on(device);
    if (last.info) {
      if (last.info->total != info->total) {
        session.fail(str("expected get_memory_info().total to stay the same; seen: ",
                         last.info->total, " then ", info->total));
      }
      const std::size_t slack = session.backend().memory_info_slack();
      const std::size_t took = in_use > last.in_use ? in_use - last.in_use : 0;
      const std::size_t drop = last.info->free > info->free ? last.info->free - info->free : 0;
      if (last.only_allocations && !session.capabilities().pooling && took > slack &&
          drop + slack < took) {
        session.fail(str("expected get_memory_info().free to drop by at least the ", took,
                         " bytes the plugin took from the driver since the last read (only "
                         "allocations in between); seen: ",
                         describe(*last.info), " then ", describe(*info), " (a drop of ", drop,
                         "; a plugin that reports pool-level figures declares pooling)"));
      }
    }
    last = {info, in_use, true};
    (void)now;
  }
  void released(Session& session, const Allocation&, bool) const override { disturb(session); }
  void was_reset(Session& session, int, const Snapshot&) const override { disturb(session); }
  void out_of_memory(Session& session, const OutOfMemory&) const override { disturb(session); }

 private:
  struct Read {
    std::optional<MemoryInfo> info;
    std::size_t in_use = 0;
    bool only_allocations = true;
  };
  struct Reads {
    std::map<int, Read> by_device;
  };
  // Something other than an allocation happened: the next read is compared for shape only.
  static void disturb(Session& session) {
    for (auto& [device, read] : session.state<Reads>().by_device) read.only_allocations = false;
  }
};

// INFO-2: a plugin that declares no memory info throws emm::NotImplementedError from
// get_memory_info(), at any point of a sequence.
class NotProvidedThrows final : public Property {
 public:
  bool prepare(ClauseRun& run) const override { return !run.capabilities().memory_info; }
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 3},
            {CommandKind::memory_info, 4},
            {CommandKind::release, 2},
            {CommandKind::reset, 1}};
  }
  void memory_info(Session& session, int, const std::optional<MemoryInfo>& info,
                   const Snapshot&) const override {
    if (info) {
      session.fail(
          str("expected get_memory_info() to throw emm::NotImplementedError (the plugin "
              "declares memory_info=false); seen: it returned ",
              describe(*info), " (declare memory_info=true if the figures are real)"));
    }
    try {
      throw;
    } catch (const NotImplementedError&) {
    } catch (...) {
      session.fail_thrown(
          "get_memory_info() to throw emm::NotImplementedError (memory_info=false)");
    }
  }
};

}  // namespace

const Property& info_1() { return the<MemoryInfoShape>(); }
const Property& info_2() { return the<NotProvidedThrows>(); }

}  // namespace emm::conformance::engine::properties
