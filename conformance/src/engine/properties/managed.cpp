// MANAGED as properties of sequences: managed memory of any size and either attach flag, among
// views, releases and resets.
#include <cstring>

#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

bool managed_made(const Allocation& a) { return a.model.source == Source::memallocmanaged; }

std::string call_of(const Allocation& a) {
  return str("memallocmanaged(", a.model.size,
             ", attach_global=", a.model.attach_global ? "true" : "false", ")");
}

std::vector<Weighted> managed_mix() {
  return {{CommandKind::memallocmanaged, 5},
          {CommandKind::release, 3},
          {CommandKind::reference, 2},
          {CommandKind::verify, 1},
          {CommandKind::reset, 1}};
}

// MANAGED-1: the kind (ManagedMemory or its own()), the size and the attach flag the driver was
// given.
class KindSizeAndAttachFlag final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override { return managed_mix(); }
  void allocated(Session& session, const Allocation& a) const override {
    if (!managed_made(a)) return;
    if (a.host_pointer == nullptr) {
      session.fail(str("expected ", call_of(a),
                       " to return ManagedMemory (or its own()); seen: "
                       "another kind of pointer"));
    }
    if (a.reported_size != a.model.size) {
      session.fail(str("expected ", call_of(a), " to have size ", a.model.size,
                       "; seen: ", a.reported_size));
    }
    const std::optional<unsigned> flags = session.backend().managed_attach_flags(a.device_pointer);
    if (!flags) return;  // not observable here: the backend noted it
    const unsigned expected = a.model.attach_global ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST;
    if (*flags != expected) {
      session.fail(str(
          "expected ", call_of(a), " to come from cuMemAllocManaged with ",
          a.model.attach_global ? "CU_MEM_ATTACH_GLOBAL" : "CU_MEM_ATTACH_HOST", "; seen: ",
          *flags == 0
              ? str(hex(a.device_pointer), " lies in no cuMemAllocManaged allocation")
              : str("flags ", hex(*flags), " (the attach flag did not reach cuMemAllocManaged)")));
    }
  }
};

// MANAGED-2: one range for host and device: [p, p+n) lies in one driver allocation, and bytes
// written through the host pointer are what the driver reads at the device pointer.
class HostAndDeviceAlias final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override { return managed_mix(); }
  void allocated(Session& session, const Allocation& a) const override {
    if (!managed_made(a) || a.host_pointer == nullptr) return;
    // The host must not touch what is not managed memory (on a GPU it would fault).
    if (const std::optional<unsigned> flags =
            session.backend().managed_attach_flags(a.device_pointer);
        flags && *flags == 0) {
      session.fail(str("expected ", a.name,
                       " to be managed memory the host reaches through its "
                       "host pointer; seen: ",
                       hex(a.device_pointer),
                       " lies in no cuMemAllocManaged allocation, so the "
                       "host cannot reach it through its host pointer"));
    }
    if (!a.block || a.device_pointer + a.model.size > a.block->base + a.block->size) {
      session.fail(str("expected [p, p+n) of ", a.name,
                       " to lie inside one driver allocation; seen: ",
                       a.block ? "it does not lie inside the driver allocation holding p (it "
                                 "runs past its end)"
                               : "no allocation holds it"));
    }
    const std::size_t n = std::min<std::size_t>(a.model.size, 64);
    std::vector<std::byte> written(n);
    for (std::size_t i = 0; i < n; ++i) written[i] = static_cast<std::byte>(0xA5 ^ i);
    std::memcpy(a.host_pointer, written.data(), n);
    std::vector<std::byte> seen(n);
    try {
      session.driver().memcpy_dtoh(seen.data(), a.device_pointer, n);
    } catch (...) {
      session.fail(str("expected the driver to read ", a.name,
                       " at its device pointer; seen: ", describe_current_exception()));
    }
    if (seen != written) {
      session.fail(str("expected bytes written through ", a.name,
                       "'s host pointer to be read by the driver at its device pointer; seen: "
                       "other bytes (not one range for host and device)"));
    }
    session.write_pattern(session.allocation(a.model.id));
  }
};

// MANAGED-3: managed memory is finalized exactly once, after its last reference; nothing live
// is handed out again; reset() releases it.
class FreedOnceAfterLastReference final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override { return managed_mix(); }
  void allocated(Session& session, const Allocation& a) const override {
    if (managed_made(a)) expect_no_overlap(session, a, "MANAGED-3: reuse safety");
  }
  void released(Session& session, const Allocation& a, bool last) const override {
    if (!managed_made(a) || a.orphaned) return;
    if (last) {
      expect_finalized(session, a);
    } else if (!a.freed) {
      expect_not_finalized(session, a, "other references to it are held");
    }
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
  void torn_down(Session& session, const Snapshot&) const override {
    expect_back_to(session, session.baseline(),
                   "after every managed allocation was released "
                   "and reset()",
                   "before the plugin was constructed", ": managed memory was not released");
  }
};

}  // namespace

const Property& managed_1() { return the<KindSizeAndAttachFlag>(); }
const Property& managed_2() { return the<HostAndDeviceAlias>(); }
const Property& managed_3() { return the<FreedOnceAfterLastReference>(); }

}  // namespace emm::conformance::engine::properties
