// REG and LIFE as properties of sequences: the interface version and the version probe at any
// point, initialize() and reset() anywhere, a plugin constructed with no context current, late
// finalizers after reset() and close(), everything released at reset().
#include "core/host_only_base.hpp"
#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

// REG-1: interface_version() is 1 whatever the plugin has been through.
class InterfaceVersionOne final : public Property {
 public:
  // No allocation: the version is the plugin's word about its interface, asked among the calls
  // that change its state without memory (a failing memalloc is ALLOC-1's to report).
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::interface_version, 3},
            {CommandKind::initialize, 1},
            {CommandKind::reset, 1},
            {CommandKind::enter_guard, 1},
            {CommandKind::exit_guard, 1},
            {CommandKind::probe_instance, 1}};
  }
  void interface_version(Session& session, int version) const override {
    if (version == 1) return;
    session.fail(str("expected interface_version() to return 1 (kSupportedInterfaceVersion, NBEP "
                     "7's only interface); seen: ",
                     version),
                 "EXPECT_EQ(context().memory_manager().interface_version(), 1);",
                 "assert ctx.memory_manager.interface_version == 1");
  }
};

// REG-2: a null-context instance (the version probe set_memory_manager builds) can be made at
// any point: it makes no driver call and leaves the live instances' memory alone.
class NullContextProbe final : public Property {
 public:
  // No context: the probe is all that is made (a memalloc or initialize() that misbehaves is
  // its own clause's to report).
  Start start() const override { return Start::none; }
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::probe_instance, 1}};
  }
  // Destroying the probe releases everything it took: nothing stays, however many were made.
  void torn_down(Session& session, const Snapshot&) const override {
    expect_back_to(session, session.baseline(),
                   "after null-context instances were built and "
                   "destroyed",
                   "before the first", ": destroying one must release everything");
  }
  void probed(Session& session, const ProbeReport& report) const override {
    if (!report.failure.empty()) {
      session.fail(
          str("expected a null-context instance to be constructed, answer "
              "interface_version() and be destroyed; seen: ",
              report.failure));
    }
    if (report.driver_calls && *report.driver_calls > 0) {
      session.fail(
          str("expected a null-context instance to make no driver call (it has no "
              "context to make them in); seen: ",
              *report.driver_calls, " driver call(s) while it was built and destroyed"));
    }
    if (!report.damage.empty()) {
      session.fail(
          str("expected building and destroying a null-context instance to leave the "
              "other instances' memory alone; seen: ",
              report.damage, " (state shared between instances?)"));
    }
  }
};

// LIFE-2: initialize() again, at any point, changes nothing: live allocations keep their bytes
// and their finalizers, no memory is taken, the figures stay.
class InitializeIdempotent final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{{CommandKind::memalloc, 4}, {CommandKind::initialize, 5},
                              {CommandKind::release, 3},  {CommandKind::reference, 1},
                              {CommandKind::burst, 1},    {CommandKind::memhostalloc, 1},
                              {CommandKind::verify, 1}};
    if (plan.capabilities.managed_memory) mix.push_back({CommandKind::memallocmanaged, 1});
    return mix;
  }
  void initialized(Session& session, const Initialized& seen) const override {
    for (const auto& [id, a] : session.allocations()) {
      if (!live(a) || !on_device(a.model.source) || !a.block) continue;
      const std::optional<AddressRange> now = session.backend().driver_block(a.device_pointer);
      if (!now || now->base != a.block->base) {
        session.fail(
            str("expected initialize() called again to leave live allocations alone; "
                "seen: initialize() freed live memory: the driver block [",
                hex(a.block->base), ", ", hex(a.block->base + a.block->size), ") holding the live ",
                a.name, " is no longer allocated"));
      }
    }
    expect_all_intact(session, "after initialize() was called again");
    const Snapshot& before = seen.before;
    const Snapshot& now = seen.after;
    const std::size_t slack = session.backend().memory_slack();
    if (now.device_bytes > before.device_bytes + slack) {
      session.fail(
          str("expected initialize() called again to take no memory; seen: device "
              "memory in use went from ",
              before.device_bytes, " to ", now.device_bytes,
              " bytes: initialize() must not allocate per call (a pool or cache made "
              "again on every call leaks)"));
    }
    if (now.host_allocations && before.host_allocations &&
        *now.host_allocations > *before.host_allocations) {
      session.fail(str("expected initialize() called again to take no pinned host memory; seen: ",
                       *now.host_allocations - *before.host_allocations,
                       " more cuMemHostAlloc block(s)"));
    }
    if (seen.info_before && seen.info_after && seen.info_before->total != seen.info_after->total) {
      session.fail(str("expected get_memory_info() of device ", seen.device,
                       " to be unchanged by initialize(); seen: total went from ",
                       seen.info_before->total, " to ", seen.info_after->total));
    }
  }
  std::optional<CommandKind> leaks_blamed_on() const override { return CommandKind::initialize; }
  // What initialize() took and forgot (a cache emptied without freeing it) shows after the final
  // reset(): blamed on initialize() when the same sequence without its initialize() calls
  // leaves nothing behind (a leak of another call is LIFE-7's).
  void torn_down(Session& session, const Snapshot&) const override {
    const std::size_t slack = session.backend().memory_slack();
    const Snapshot now = session.snapshot();
    const std::size_t leaked = now.device_bytes > session.baseline().device_bytes
                                   ? now.device_bytes - session.baseline().device_bytes
                                   : 0;
    if (leaked <= slack) return;
    const std::optional<std::size_t> without = session.leak_without(CommandKind::initialize);
    if (!without || *without > slack) return;
    session.fail(
        str("expected initialize() called again to keep what the plugin holds; seen: ", leaked,
            " bytes of device memory stayed allocated after the final reset(), "
            "and none do when the same sequence runs without its initialize() calls: "
            "initialize() forgot memory the plugin held (it leaks)"));
  }
};

// LIFE-4 and LIFE-5: a plugin constructed while no context is current (nothing else called yet)
// works through any mix of reset(), initialize() and use, reset() first included.
class BareStart : public Property {
 public:
  Start start() const override { return Start::bare; }
  void allocated(Session& session, const Allocation& allocation) const override {
    expect_intact(session, allocation, "right after it was made");
  }
  void verified(Session& session, const Allocation& allocation,
                const std::string& damage) const override {
    if (damage.empty()) return;
    session.fail(str("expected the live ", allocation.name, " to keep its bytes; seen: ", damage));
  }
};

class ConstructedWithoutContext final : public BareStart {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 3}, {CommandKind::initialize, 2},
            {CommandKind::release, 2},  {CommandKind::reset, 1},
            {CommandKind::verify, 1},   {CommandKind::memhostalloc, 1}};
  }
};

class ResetFirst final : public BareStart {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::reset, 4},    {CommandKind::initialize, 3},
            {CommandKind::memalloc, 3}, {CommandKind::release, 2},
            {CommandKind::verify, 1},   {CommandKind::memhostalloc, 1}};
  }
};

// LIFE-6: after reset(), with or without initialize() again, the plugin works: what it hands
// out is usable and overlaps nothing live.
class UsableAfterReset final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    // Guards too: a reset() inside a defer_cleanup scope must leave the plugin usable once the
    // scope ends (blocks released in the scope belong to the memory reset() freed).
    return {
        {CommandKind::memalloc, 4},     {CommandKind::reset, 3},  {CommandKind::release, 3},
        {CommandKind::initialize, 1},   {CommandKind::verify, 2}, {CommandKind::reference, 1},
        {CommandKind::memhostalloc, 1}, {CommandKind::mempin, 1}, {CommandKind::enter_guard, 1},
        {CommandKind::exit_guard, 1},   {CommandKind::burst, 1},  {CommandKind::reset_in_scope, 1}};
  }
  void allocated(Session& session, const Allocation& allocation) const override {
    expect_intact(session, allocation, "right after it was made");
    expect_no_overlap(session, allocation, "also after reset()");
  }
  void verified(Session& session, const Allocation& allocation,
                const std::string& damage) const override {
    if (damage.empty()) return;
    session.fail(str("expected the live ", allocation.name, " to keep its bytes; seen: ", damage));
  }
};

// LIFE-7: reset() releases everything the plugin holds: once the caller has released its
// references too, device memory, pinned blocks and registrations are back to where they were
// before the plugin was constructed. Judged whenever that state is reached, and at the end.
class ResetReleasesEverything final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{
        {CommandKind::memalloc, 4},   {CommandKind::release, 3},     {CommandKind::reset, 2},
        {CommandKind::reference, 1},  {CommandKind::burst, 1},       {CommandKind::memhostalloc, 2},
        {CommandKind::mempin, 1},     {CommandKind::enter_guard, 1}, {CommandKind::exit_guard, 1},
        {CommandKind::initialize, 1}, {CommandKind::flush, 1}};
    if (plan.capabilities.memory_info) mix.push_back({CommandKind::memory_info, 1});
    if (plan.capabilities.ipc) mix.push_back({CommandKind::export_ipc, 1});
    if (plan.capabilities.managed_memory) mix.push_back({CommandKind::memallocmanaged, 1});
    return mix;
  }
  void was_reset(Session& session, int, const Snapshot&) const override {
    if (!session.references().empty() || !session.guards().empty()) return;
    expect_back_to(session, session.baseline(), "after reset() with no reference held",
                   "before the plugin was constructed",
                   ": reset() must release everything the plugin allocated in the context");
  }
  void torn_down(Session& session, const Snapshot&) const override {
    expect_back_to(session, session.baseline(),
                   "after every reference was released and every context reset",
                   "before the plugin was constructed",
                   ": reset() must release everything the plugin allocated in the context");
  }
};

// LIFE-8: references released after reset() or after the runtime closed (their context gone)
// run their finalizers without throwing and without freeing anything twice.
class LateFinalizers final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{
        {CommandKind::memalloc, 4}, {CommandKind::release, 4},     {CommandKind::reset, 3},
        {CommandKind::close, 2},    {CommandKind::reference, 2},   {CommandKind::memhostalloc, 2},
        {CommandKind::mempin, 1},   {CommandKind::enter_guard, 1}, {CommandKind::exit_guard, 1}};
    // Finalizers racing reset() on other threads, as a garbage collector runs them; only for a
    // plugin that says it can be called from many threads.
    if (plan.capabilities.thread_safe) mix.push_back({CommandKind::reset_releasing, 2});
    if (plan.capabilities.managed_memory) mix.push_back({CommandKind::memallocmanaged, 1});
    return mix;
  }
  void released(Session& session, const Allocation& allocation, bool) const override {
    if (!allocation.orphaned) {
      (void)session.ignored_exceptions();  // not late: FIN-6 and FIN-1 judge those
      return;
    }
    expect_no_ignored_exceptions(session, str("when ", allocation.name,
                                              " is released after its context was reset or "
                                              "closed"));
    // A late finalizer frees nothing that is not its own: what was allocated since (perhaps at
    // the same address) is intact.
    expect_all_intact(
        session, str("after ", allocation.name, ", made before reset() or close(), was released"));
  }
  void step(Session& session, const StepInfo& info) const override {
    if (info.kind == CommandKind::release || info.kind == CommandKind::reset ||
        info.kind == CommandKind::close) {
      expect_no_invalid_frees(session, info.before,
                              "when references outlive reset() or close(), or afterwards");
    }
  }
  void torn_down(Session& session, const Snapshot& at_rest) const override {
    expect_no_invalid_frees(session, at_rest, "at the final reset()");
  }
  void threads(Session& session, const ThreadReport& report) const override {
    if (!report.failure.empty()) {
      session.fail(
          str("expected reset() to return while ", report.threads,
              " threads released the last references to its memory; seen: ", report.failure));
    }
    expect_no_ignored_exceptions(session,
                                 "when references are released on other threads while "
                                 "reset() runs");
    expect_no_invalid_frees(session, report.before,
                            "when references are released on other threads while reset() runs");
  }
};

// LIFE-10: a HostOnlyCUDAMemoryManager subclass lets the parent's reset() run: afterwards the
// parent tracks no allocation and has no pending free, whatever was allocated, pinned, released
// or deferred before.
class HostOnlyResetDuties final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memhostalloc, 3}, {CommandKind::mempin, 2}, {CommandKind::memalloc, 2},
            {CommandKind::release, 3},      {CommandKind::reset, 3},  {CommandKind::enter_guard, 1},
            {CommandKind::exit_guard, 1},   {CommandKind::flush, 1}};
  }
  void was_reset(Session& session, int device, const Snapshot&) const override {
    const std::optional<HostOnlyBase> host_only = HostOnlyBase::of(session.manager(device));
    if (!host_only) {
      session.fail(
          "expected a HostOnlyCUDAMemoryManager (host_only_derived is set from the "
          "type); seen: the instance is not one");
    }
    const std::size_t tracked = host_only->tracked_allocations();
    // Inside a defer_cleanup scope the parent's flush is a no-op: its frees stay pending until
    // the scope ends (DEFER-3), which is not reset()'s to undo.
    const bool deferring =
        std::any_of(session.guards().begin(), session.guards().end(),
                    [&](const Session::HeldGuard& g) { return g.device == device; });
    const std::size_t pending = deferring ? 0 : host_only->pending_frees();
    if (tracked == 0 && pending == 0) return;
    session.fail(
        str("expected HostOnlyCUDAMemoryManager to track no allocation and hold no "
            "pending free after reset(); seen: ",
            tracked, " allocation(s) and ", pending,
            " pending free(s): the override of reset() does not call "
            "HostOnlyCUDAMemoryManager::reset() (NBEP 7: it \"must also call the "
            "method from super()\")"));
  }
};

}  // namespace

const Property& reg_1() { return the<InterfaceVersionOne>(); }
const Property& reg_2() { return the<NullContextProbe>(); }
const Property& life_2() { return the<InitializeIdempotent>(); }
const Property& life_4() { return the<ConstructedWithoutContext>(); }
const Property& life_5() { return the<ResetFirst>(); }
const Property& life_6() { return the<UsableAfterReset>(); }
const Property& life_7() { return the<ResetReleasesEverything>(); }
const Property& life_8() { return the<LateFinalizers>(); }
const Property& life_10() { return the<HostOnlyResetDuties>(); }

}  // namespace emm::conformance::engine::properties
