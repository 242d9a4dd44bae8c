// ALLOC (device memory) and FIN as properties of sequences: sizes, alignment, reuse safety,
// out of memory, refct and finalizers, under any order of releases, views and threads.
#include <optional>
#include <set>

#include "emm/host_only_memory_manager.hpp"
#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

bool memalloc_made(const Allocation& allocation) {
  return allocation.model.source == Source::memalloc;
}

// ALLOC-1: memalloc(n) of any size returns n bytes in the current context's device, aligned to
// 16 bytes, inside one driver allocation, writable and readable over the whole range.
class MemallocBasics final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 6},
            {CommandKind::release, 3},
            {CommandKind::burst, 1},
            {CommandKind::reference, 1},
            {CommandKind::verify, 1}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (!memalloc_made(a)) return;
    const std::size_t n = a.model.size;
    if (a.reported_size != n) {
      session.fail(str("expected memalloc(", n, ") to return a pointer of size ", n,
                       "; seen: size ", a.reported_size),
                   str("EXPECT_EQ(", a.name, "->size(), ", n, "u);"),
                   str("assert ", a.name, ".size == ", n));
    }
    if (a.device_pointer % 16 != 0) {
      session.fail(str("expected memalloc(", n,
                       ") to be aligned to 16 bytes (with other small "
                       "allocations live too); seen: ",
                       hex(a.device_pointer)),
                   str("EXPECT_EQ(", a.name, "->device_pointer() % 16, 0u);"),
                   str("assert ", a.name, ".device_pointer.value % 16 == 0"));
    }
    Context& context = session.context(a.model.device);
    if (a.reported_context != &context) {
      session.fail(str("expected ", a.name, "->context() to be the allocating context; seen: ",
                       a.reported_context, " instead of ", &context),
                   str("EXPECT_EQ(", a.name, "->context(), &context(", a.model.device, "));"), "");
    }
    if (!a.block) {
      session.fail(str("expected ", a.name, " at ", hex(a.device_pointer),
                       " to lie in a device allocation the driver knows; seen: none holds it"));
    }
    if (a.device_pointer + n > a.block->base + a.block->size) {
      session.fail(str("expected [", hex(a.device_pointer), ", ", hex(a.device_pointer + n),
                       ") of ", a.name, " to lie inside its driver allocation [",
                       hex(a.block->base), ", ", hex(a.block->base + a.block->size),
                       "); seen: it runs past its end"));
    }
    if (const std::optional<int> where = session.backend().block_device(a.device_pointer);
        where && *where != a.model.device) {
      session.fail(str("expected memalloc under device ", a.model.device,
                       "'s context to return memory of device ", a.model.device,
                       " (spec §7: \"in the current context\"); seen: its driver block lives on "
                       "device ",
                       *where));
    }
    expect_intact(session, a, "right after it was written (readable and writable)");
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
};

// ALLOC-2: live allocations never overlap and keep their bytes, whatever sizes were asked for
// and whatever was released, reset or re-initialized before.
class NoOverlap final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    // No reset(): what is handed out after one is LIFE-6's to judge, and a plugin that cannot
    // allocate after reset() would fail here for LIFE-6's reason.
    return {
        {CommandKind::memalloc, 6},    {CommandKind::release, 4},    {CommandKind::burst, 2},
        {CommandKind::reference, 1},   {CommandKind::verify, 2},     {CommandKind::initialize, 1},
        {CommandKind::enter_guard, 1}, {CommandKind::exit_guard, 1}, {CommandKind::free, 1}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (memalloc_made(a)) expect_no_overlap(session, a, "ALLOC-2: live allocations never overlap");
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name,
                       " to keep its bytes (no other allocation may share them); seen: ", damage));
    }
  }
};

// ALLOC-3: a request larger than the device is a CudaDriverError CUDA_ERROR_OUT_OF_MEMORY that
// leaks nothing and leaves the plugin usable; and out of memory is never reported for a request
// that releasing the plugin's held memory would satisfy (spec §8 (c)).
class OutOfMemoryRules final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    // Guards too: after a defer_cleanup scope ended, the plugin must again give back what it
    // holds (a fill runs only outside scopes).
    // Bursts: hundreds of blocks of one size released at once, which fill a cache's lists to
    // their bounds before the fill asks for everything back.
    return {{CommandKind::memalloc, 3},      {CommandKind::release, 3},
            {CommandKind::out_of_memory, 3}, {CommandKind::fill, 2},
            {CommandKind::reset, 1},         {CommandKind::verify, 1},
            {CommandKind::enter_guard, 1},   {CommandKind::exit_guard, 1},
            {CommandKind::burst, 1}};
  }
  void out_of_memory(Session& session, const OutOfMemory& report) const override {
    if (report.host) return;  // fill_host's: ALLOC-6 judges pinned memory
    if (!report.other.empty()) {
      session.fail(str("expected memalloc(", report.request,
                       ") to throw emm::CudaDriverError with CUDA_ERROR_OUT_OF_MEMORY (or a "
                       "documented subclass); seen: ",
                       report.other));
    }
    const std::size_t slack = session.backend().memory_slack();
    if (report.threw_out_of_memory &&
        report.after.device_bytes > report.before.device_bytes + slack &&
        !report.after_reset_succeeded) {
      session.fail(str("expected a refused memalloc(", report.request,
                       ") to leak nothing; seen: device memory in use went from ",
                       report.before.device_bytes, " to ", report.after.device_bytes, " bytes"));
    }
    if (report.after_reset_succeeded) {
      session.fail(str("expected memalloc(", report.request,
                       ") not to report out of memory while the caller held nothing and the "
                       "plugin's own held memory would satisfy it (spec §8 (c)); seen: it threw "
                       "CUDA_ERROR_OUT_OF_MEMORY, and after reset() released what the plugin "
                       "held the same request succeeded: release cached memory and retry "
                       "before reporting out of memory"));
    }
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name,
                       " to keep its bytes after out of memory; "
                       "seen: ",
                       damage));
    }
  }
};

// ALLOC-5: what memalloc returns has refct >= 1 at rest, and dropping a view, an own() or a copy
// while another reference lives does not run the finalizer.
class RefcountAtRest final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 4},
            {CommandKind::reference, 4},
            {CommandKind::release, 4},
            {CommandKind::verify, 1}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (!memalloc_made(a) || a.refct >= 1) return;
    session.fail(str("expected ", a.name, "->refct() >= 1 at rest; seen: ", a.refct,
                     " (return AutoFreePointer::own(), not a bare AutoFreePointer, whose first "
                     "dropped view frees the buffer)"),
                 str("EXPECT_GE(", a.name, "->refct(), 1);"),
                 str("assert ", a.name, ".refct >= 1"));
  }
  void released(Session& session, const Allocation& a, bool last) const override {
    if (last || !memalloc_made(a) || a.orphaned || a.freed) return;
    expect_not_finalized(session, a, "other references to it are held");
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
};

// ALLOC-10: many threads allocating and releasing at once keep ALLOC-1/2 and lose nothing.
class ConcurrentAllocation final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::threads, 3},
            {CommandKind::memalloc, 2},
            {CommandKind::release, 2},
            {CommandKind::reset_releasing, 1},
            {CommandKind::first_use, 1}};
  }
  void threads(Session& session, const ThreadReport& report) const override {
    if (!report.failure.empty()) {
      session.fail(str(
          "expected ", report.threads,
          " threads allocating and releasing at once to keep ALLOC-1/2; seen: ", report.failure));
    }
    expect_no_invalid_frees(session, report.before,
                            str("while ", report.threads, " threads allocated and released"));
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (memalloc_made(a)) expect_no_overlap(session, a, "after threads allocated and released");
  }
};

// ALLOC-11 (SHOULD): device pointers are aligned to 256 bytes, as cuMemAlloc's are.
class Alignment256 final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 6}, {CommandKind::release, 3}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (!memalloc_made(a) || a.device_pointer % 256 == 0) return;
    session.fail(str("expected memalloc(", a.model.size,
                     ") to be aligned to 256 bytes, as cuMemAlloc's pointers are; seen: ",
                     hex(a.device_pointer)),
                 str("EXPECT_EQ(", a.name, "->device_pointer() % 256, 0u);"),
                 str("assert ", a.name, ".device_pointer.value % 256 == 0"));
  }
};

// FIN-1: each allocation's finalizer runs exactly once, after the last of its references
// (pointer, copies, own(), views of views) is released in whatever order and on whatever thread;
// never earlier, never twice (a block freed twice is handed out twice: reuse safety), never not.
class FinalizerExactlyOnce final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{
        {CommandKind::memalloc, 4},   {CommandKind::reference, 4}, {CommandKind::release, 5},
        {CommandKind::verify, 1},     {CommandKind::burst, 1},     {CommandKind::enter_guard, 1},
        {CommandKind::exit_guard, 1}, {CommandKind::reset, 1},     {CommandKind::free, 2}};
    if (plan.capabilities.host_only_derived) mix.push_back({CommandKind::flush, 1});
    return mix;
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (memalloc_made(a)) {
      expect_no_overlap(session, a, "FIN-1: a block whose finalizer has not run is still in use");
    }
  }
  void released(Session& session, const Allocation& a, bool last) const override {
    if (!memalloc_made(a)) return;
    if (last) {
      expect_finalized(session, a);
    } else if (!a.orphaned && !a.freed) {
      expect_not_finalized(session, a, "other references to it are held");
    }
  }
  void freed(Session& session, const Allocation& a) const override {
    if (!memalloc_made(a) || Session::finalized(a)) return;
    session.fail(str("expected free() to run the finalizer of ", a.name,
                     " at once (spec 2.2: at the first free() or the last release, whichever is "
                     "first); seen: it has not run"));
  }
  void step(Session& session, const StepInfo& info) const override {
    if (info.kind != CommandKind::reset) {
      expect_no_invalid_frees(session, info.before,
                              "(a finalizer ran twice, or freed a block twice)");
    }
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
};

// FIN-5: dropping an allocation's last reference frees that allocation and no other: every
// other live allocation keeps its bytes; for a plugin that declares no_caching, its driver block
// is back with the driver at the next flush point (outside defer_cleanup).
class FreesOnlyItsAllocation final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{{CommandKind::memalloc, 4}, {CommandKind::release, 4},
                              {CommandKind::burst, 1},    {CommandKind::reference, 1},
                              {CommandKind::verify, 1},   {CommandKind::free, 1}};
    if (plan.capabilities.host_only_derived) mix.push_back({CommandKind::flush, 2});
    return mix;
  }
  void released(Session& session, const Allocation& a, bool last) const override {
    if (!last || !memalloc_made(a) || a.orphaned) return;
    session.state<Dropped>().what.push_back(str("dropping the last reference to ", a.name));
  }
  void freed(Session& session, const Allocation& a) const override {
    if (memalloc_made(a)) session.state<Dropped>().what.push_back(str(a.name, "->free()"));
  }
  // Judged once per command rather than per release: a burst drops thousands of allocations in
  // one call, and reading every live allocation after each would take quadratic time.
  void step(Session& session, const StepInfo&) const override { expect_others_intact(session); }
  void settled(Session& session) const override { expect_others_intact(session); }
  void flushed(Session& session, int, const Snapshot&) const override { confirm_frees(session); }

 private:
  // What the current command freed, in order: "dropping the last reference to m3", "m4->free()".
  struct Dropped {
    std::vector<std::string> what;
  };

  static void expect_others_intact(Session& session) {
    std::vector<std::string>& dropped = session.state<Dropped>().what;
    if (dropped.empty()) return;
    const std::string what =
        dropped.size() == 1
            ? dropped.front()
            : str(dropped.front(), " (and ", dropped.size() - 1, " more frees in this call)");
    dropped.clear();
    for (const auto& [id, other] : session.allocations()) {
      if (!live(other) || !memalloc_made(other)) continue;
      const std::string damage = session.pattern_damage(other);
      if (!damage.empty()) {
        session.fail(str("expected ", what,
                         " to free that allocation and no other; seen: the live ", other.name,
                         " was damaged: ", damage));
      }
    }
    if (!session.capabilities().host_only_derived) confirm_frees(session);
  }

  // no_caching: every released allocation that was a whole driver block of its own is no longer
  // allocated once a flush point passed outside defer_cleanup.
  static void confirm_frees(Session& session) {
    if (!session.capabilities().no_caching || !session.guards().empty()) return;
    std::optional<std::set<CUdeviceptr>> live_blocks;  // made on first need
    for (const auto& [id, released] : session.allocations()) {
      if (!(released.released || released.freed) || released.orphaned || released.free_confirmed ||
          !memalloc_made(released) || !released.block ||
          released.block->base != released.device_pointer ||
          released.block->size != released.model.size) {
        continue;
      }
      session.allocation(id).free_confirmed = true;
      const std::optional<AddressRange> now =
          session.backend().driver_block(released.device_pointer);
      if (!now || now->base != released.device_pointer) continue;
      if (!live_blocks) {
        live_blocks.emplace();
        for (const auto& [other_id, other] : session.allocations()) {
          if (live(other) && other.block) live_blocks->insert(other.block->base);
        }
      }
      if (live_blocks->count(released.device_pointer) == 0) {
        session.fail(str("expected dropping the last reference to ", released.name,
                         " to free that allocation and no other by the flush point (the plugin "
                         "declares no_caching); seen: its driver allocation at ",
                         hex(released.device_pointer),
                         " is still allocated (declare no_caching=false if the plugin keeps "
                         "freed memory)"));
      }
    }
  }
};

}  // namespace

const Property& alloc_1() { return the<MemallocBasics>(); }
const Property& alloc_2() { return the<NoOverlap>(); }
const Property& alloc_3() { return the<OutOfMemoryRules>(); }
const Property& alloc_5() { return the<RefcountAtRest>(); }
const Property& alloc_10() { return the<ConcurrentAllocation>(); }
const Property& alloc_11() { return the<Alignment256>(); }
const Property& fin_1() { return the<FinalizerExactlyOnce>(); }
const Property& fin_5() { return the<FreesOnlyItsAllocation>(); }

}  // namespace emm::conformance::engine::properties
