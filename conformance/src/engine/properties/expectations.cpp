#include "engine/properties/expectations.hpp"

#include <algorithm>
#include <cstring>

namespace emm::conformance::engine::properties {

std::string describe(const Allocation& allocation) {
  const std::uintptr_t begin = allocation.address();
  return str(allocation.name, " = ", to_string(allocation.model.source), "(", allocation.model.size,
             ") at [", hex(begin), ", ", hex(begin + allocation.model.size), ")");
}

std::string describe(const std::optional<DeviceIdentity>& identity) {
  if (!identity) return "none";
  return str("PCI ", identity->pci_domain_id, ":", identity->pci_bus_id, ":",
             identity->pci_device_id);
}

void expect_no_overlap(Session& session, const Allocation& allocation, std::string_view rule) {
  const Allocation* other = session.overlapping(allocation);
  if (other == nullptr) return;
  const bool device = on_device(allocation.model.source);
  const std::string at = device ? "device_pointer()" : "host_pointer()";
  session.fail(
      str("expected ", allocation.name, " to overlap no live allocation (", rule,
          "); seen: ", describe(allocation), " overlaps the live ", describe(*other),
          ", whose references are still held: the plugin handed out memory that is in use"),
      str("EXPECT_TRUE(", allocation.name, "->", at, " + ", allocation.model.size,
          " <= ", other->name, "->", at, " || ", other->name, "->", at, " + ", other->model.size,
          " <= ", allocation.name, "->", at, ") << \"", allocation.name, " overlaps ", other->name,
          "\";"),
      str("# expected: ", allocation.name, " and ", other->name, " do not overlap"));
}

void expect_intact(Session& session, const Allocation& allocation, std::string_view when) {
  const std::string damage = session.pattern_damage(allocation);
  if (damage.empty()) return;
  session.fail(str("expected the live ", allocation.name, " to keep the bytes written into it ",
                   when, "; seen: ", damage));
}

void expect_all_intact(Session& session, std::string_view when, int device) {
  for (const auto& [id, allocation] : session.allocations()) {
    if (!live(allocation) || (device >= 0 && allocation.model.device != device)) continue;
    if (Session::finalized(allocation)) {
      session.fail(str("expected the live ", allocation.name,
                       " (its references are held) to stay "
                       "valid ",
                       when, "; seen: its finalizer has run"));
    }
    session.context(allocation.model.device);
    expect_intact(session, allocation, when);
  }
}

void expect_finalized(Session& session, const Allocation& allocation) {
  if (Session::finalized(allocation)) return;
  session.fail(str("expected the finalizer of ", allocation.name,
                   " to have run once its last reference was dropped; seen: it has not run (does "
                   "the plugin keep a std::shared_ptr to what it returned, or hand out a pointer "
                   "without a finalizer?)"));
}

void expect_not_finalized(Session& session, const Allocation& allocation, std::string_view when) {
  if (!Session::finalized(allocation)) return;
  session.fail(str("expected the finalizer of ", allocation.name, " not to run while ", when,
                   "; seen: it has run (the memory may be handed out again while in use)"));
}

void expect_no_ignored_exceptions(Session& session, std::string_view when) {
  const std::vector<DiagnosticEvent> thrown = session.ignored_exceptions();
  if (thrown.empty()) return;
  session.fail(str("expected finalizers and destructors not to throw ", when,
                   "; seen: ", thrown.size(), " exception(s) the host caught; first, in ",
                   thrown.front().where, ": ", thrown.front().message));
}

void expect_no_invalid_frees(Session& session, const Snapshot& before, std::string_view when) {
  const std::optional<std::size_t> now = session.backend().invalid_frees();
  if (!now || !before.invalid_frees || *now <= *before.invalid_frees) return;
  const std::vector<std::string> seen = session.backend().invalid_free_descriptions();
  session.fail(str("expected no free of memory that is not allocated ", when,
                   "; seen: the driver refused ", *now - *before.invalid_frees,
                   " free(s), unregister(s) or close(s) of something not live (a double free)",
                   seen.empty() ? "" : "; the last: " + seen.back()));
}

namespace {

// Whether device memory that grew by `grown` bytes over a sequence (as cuMemGetInfo says, on
// the gpu backend) is the driver's own: it does not grow when the same sequence runs again. The
// driver sets up some of its memory the first time a process or a context needs it (unified
// memory's, about 126 MiB on an H100, at the first managed allocations; a memory pool's), and
// cuMemGetInfo cannot tell it from the plugin's; a leak of the plugin's grows again on the
// replay. Exact figures (the fake's, the gpu ledger's) count no memory of the driver's: there,
// nothing is excused.
bool driver_set_up(Session& session, std::size_t grown) {
  if (session.backend().memory_slack() == 0) return false;
  const std::optional<std::size_t> again = session.leak_on_replay();
  if (!again || *again > session.backend().memory_slack()) return false;
  const std::string note =
      str("device memory grew by ", grown,
          " bytes over a sequence and not when the same sequence ran again: taken as the "
          "driver's own set-up, not counted against the plugin (cuMemGetInfo cannot tell them "
          "apart)");
  ClauseRun& run = session.run();
  const bool noted = std::any_of(run.notes().begin(), run.notes().end(), [](const std::string& n) {
    return n.find("taken as the driver's own set-up") != std::string::npos;
  });
  if (!noted) run.note(note);
  return true;
}

}  // namespace

void expect_back_to(Session& session, const Snapshot& baseline, std::string_view when,
                    std::string_view than, std::string_view why) {
  const Snapshot now = session.snapshot();
  const std::size_t slack = session.backend().memory_slack();
  if (now.device_bytes > baseline.device_bytes + slack &&
      !driver_set_up(session, now.device_bytes - baseline.device_bytes)) {
    session.fail(str("expected device memory in use ", when, " to be back to ", than, " (",
                     baseline.device_bytes, " bytes); seen: ", now.device_bytes, " bytes, ",
                     now.device_bytes - baseline.device_bytes, " more", why));
  }
  if (now.host_allocations && baseline.host_allocations &&
      *now.host_allocations > *baseline.host_allocations) {
    session.fail(str("expected the live cuMemHostAlloc blocks ", when, " to be back to ", than,
                     " (", *baseline.host_allocations, "); seen: ", *now.host_allocations, why));
  }
  if (now.host_registrations && baseline.host_registrations &&
      *now.host_registrations > *baseline.host_registrations) {
    session.fail(str("expected the live cuMemHostRegister ranges ", when, " to be back to ", than,
                     " (", *baseline.host_registrations, "); seen: ", *now.host_registrations,
                     why));
  }
}

std::string compare_imported(const Allocation& allocation, std::size_t offset, std::size_t size,
                             const std::vector<std::byte>& imported) {
  if (imported.size() != size) {
    return str("the importing process read ", imported.size(), " bytes, not the view's ", size);
  }
  for (const auto& [start, length] : pattern_windows(allocation.model.size)) {
    const std::size_t from = std::max(start, offset);
    const std::size_t to = std::min(start + length, offset + size);
    if (from >= to) continue;
    const std::vector<std::byte> expected = pattern_bytes(allocation.seed, from, to - from);
    if (std::memcmp(imported.data() + (from - offset), expected.data(), expected.size()) != 0) {
      return str("byte ", from, " of ", allocation.name, " (offset ", from - offset,
                 " in the view) differs from what the exporter wrote there");
    }
  }
  return "";
}

}  // namespace emm::conformance::engine::properties
