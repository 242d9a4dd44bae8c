// DEFER as properties of sequences: nested defer_cleanup() scopes, the plugin's and the host's,
// ended in any order among allocations and releases of every kind. Nothing is freed inside a
// scope (spec §8); what was deferred is freed after it for a plugin that keeps nothing, and by
// reset() for every plugin.
#include "core/host_only_base.hpp"
#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

std::optional<HostOnlyBase> host_only(Session& session, int device) {
  return HostOnlyBase::of(session.manager(device));
}

// DEFER-2: defer_cleanup() returns a guard usable as a scope; guards nest, end in any order
// (the host's and the plugin's mixed) and leave the plugin consistent; while any is open the
// plugin frees nothing to the driver.
class GuardScopes final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    // reset() inside a scope too: it may release what the plugin holds, but the scope is still
    // open afterwards, and what is released in it must still wait.
    std::vector<Weighted> mix{{CommandKind::memalloc, 3},   {CommandKind::enter_guard, 3},
                              {CommandKind::exit_guard, 3}, {CommandKind::release, 3},
                              {CommandKind::burst, 2},      {CommandKind::memhostalloc, 1},
                              {CommandKind::reference, 1},  {CommandKind::verify, 1},
                              {CommandKind::reset, 1},      {CommandKind::reset_in_scope, 1}};
    if (plan.capabilities.host_only_derived) mix.push_back({CommandKind::flush, 1});
    return mix;
  }
  void allocated(Session& session, const Allocation& a) const override {
    expect_no_overlap(session, a, "DEFER-2: guards leave the plugin consistent");
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
  void step(Session& session, const StepInfo& info) const override {
    if (info.guards_before == 0 || session.guards().empty()) return;  // not inside a scope
    if (info.kind == CommandKind::reset) return;  // reset() releases what the plugin holds
    const std::optional<std::size_t> frees = session.backend().driver_frees();
    if (!frees || !info.before.driver_frees) return;  // not observable: the backend noted it
    if (*frees > *info.before.driver_frees) {
      session.fail(str(
          "expected nothing to be freed to the driver while a defer_cleanup() guard "
          "is open (spec §8: deferral forbids freeing inside a scope); seen: ",
          *frees - *info.before.driver_frees, " cuMemFree/cuMemFreeHost call(s) during this call",
          session.after_lifecycle(0).find("reset()") == std::string::npos
              ? ""
              : " (a reset() inside a scope does not end the scope)"));
    }
  }
  void guard_exited(Session& session, int device, const Snapshot&) const override {
    const std::optional<HostOnlyBase> manager = host_only(session, device);
    if (!manager) return;
    const bool open = std::any_of(session.guards().begin(), session.guards().end(),
                                  [&](const Session::HeldGuard& g) { return g.device == device; });
    if (!open && manager->deferring()) {
      session.fail(
          "expected the HostOnlyCUDAMemoryManager queue to be enabled again once every "
          "guard was released; seen: it is still disabled (a guard kept its parent's "
          "hold)");
    }
  }
};

// DEFER-3: a HostOnlyCUDAMemoryManager subclass holds the parent's guard for the whole scope of
// every guard it returns: the parent's queue is disabled exactly while a guard is open, so host
// frees wait.
class HoldsParentGuard final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::enter_guard, 3},  {CommandKind::exit_guard, 3},
            {CommandKind::memhostalloc, 2}, {CommandKind::release, 3},
            {CommandKind::memalloc, 2},     {CommandKind::flush, 2}};
  }
  void step(Session& session, const StepInfo& info) const override {
    for (int device = 0; device < session.trace().devices; ++device) {
      const std::optional<HostOnlyBase> manager = host_only(session, device);
      if (!manager) {
        session.fail(
            "expected a HostOnlyCUDAMemoryManager (host_only_derived is set from the "
            "type); seen: the instance is not one");
      }
      const bool open =
          std::any_of(session.guards().begin(), session.guards().end(),
                      [&](const Session::HeldGuard& g) { return g.device == device; });
      if (manager->deferring() != open) {
        session.fail(str("expected the HostOnlyCUDAMemoryManager queue to be ",
                         open ? "disabled while a defer_cleanup() guard is open"
                              : "enabled once every guard was released",
                         "; seen: it is ", open ? "enabled" : "disabled",
                         ": an override of defer_cleanup() must hold "
                         "HostOnlyCUDAMemoryManager::defer_cleanup()'s guard for its whole scope "
                         "(NBEP 7)"));
      }
    }
    if (info.guards_before == 0 || session.guards().empty()) return;
    const Snapshot now = session.snapshot();
    if (now.host_allocations && info.before.host_allocations &&
        *now.host_allocations < *info.before.host_allocations) {
      session.fail(
          str("expected pinned host memory released inside defer_cleanup() to wait "
              "until the scope ends; seen: ",
              *info.before.host_allocations - *now.host_allocations,
              " cuMemHostAlloc block(s) freed inside it"));
    }
  }
};

// DEFER-4: what was deferred is executed: for a plugin that keeps nothing (no_caching), device
// memory and pinned blocks are back at rest once every scope ended and the flush point passed;
// for every plugin, after reset().
class DeferredFreesExecuted final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{{CommandKind::memalloc, 3},   {CommandKind::enter_guard, 3},
                              {CommandKind::exit_guard, 3}, {CommandKind::release, 3},
                              {CommandKind::burst, 1},      {CommandKind::memhostalloc, 2},
                              {CommandKind::reference, 1}};
    if (plan.capabilities.host_only_derived) mix.push_back({CommandKind::flush, 2});
    return mix;
  }
  void settled(Session& session) const override {
    if (!session.capabilities().no_caching) return;
    expect_back_to(session, session.state<AtStart>().snapshot(session),
                   "after every defer_cleanup scope ended, every reference was released and the "
                   "flush point passed",
                   "what the plugin held before the sequence",
                   ": frees deferred during a scope were never executed (the plugin declares "
                   "no_caching)");
  }
  void torn_down(Session& session, const Snapshot&) const override {
    expect_back_to(session, session.baseline(), "after the deferred frees and reset()",
                   "before the plugin was constructed",
                   ": frees deferred during a scope were never executed, not even by reset()");
  }

 private:
  // What the plugin holds before the sequence's first call (its initialize() may keep memory):
  // the session's baseline plus what the contexts' creation took, taken at the first step.
  struct AtStart {
    std::optional<Snapshot> taken;
    const Snapshot& snapshot(Session& session) {
      if (!taken) taken = session.baseline();
      return *taken;
    }
  };

 public:
  void step(Session& session, const StepInfo& info) const override {
    AtStart& at_start = session.state<AtStart>();
    if (!at_start.taken) at_start.taken = info.before;
  }
};

}  // namespace

const Property& defer_2() { return the<GuardScopes>(); }
const Property& defer_3() { return the<HoldsParentGuard>(); }
const Property& defer_4() { return the<DeferredFreesExecuted>(); }

}  // namespace emm::conformance::engine::properties
