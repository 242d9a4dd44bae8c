// engine/properties/expectations.hpp — the postconditions several properties share, each
// failing through Session::fail with what was expected and what was seen.
//
// Private to the engine's properties. Stateless functions.
#pragma once

#include <string>
#include <string_view>

#include "engine/property.hpp"
#include "engine/session.hpp"

namespace emm::conformance::engine::properties {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

// Held by the caller and its memory still valid: not released, not orphaned by a reset, not
// freed by free().
inline bool live(const Allocation& allocation) {
  return !allocation.released && !allocation.orphaned && !allocation.freed;
}

// "m3 = [0x7f00, 0x7f20)".
std::string describe(const Allocation& allocation);
// "PCI 0:2:0", or "none".
std::string describe(const std::optional<DeviceIdentity>& identity);

// Reuse safety: `allocation`, just made, overlaps no live allocation (spec §7, §8 (a)).
void expect_no_overlap(Session& session, const Allocation& allocation, std::string_view rule);
// The allocation's pattern is intact.
void expect_intact(Session& session, const Allocation& allocation, std::string_view when);
// Every live allocation (of `device`, or of every device when -1) is intact and not finalized.
void expect_all_intact(Session& session, std::string_view when, int device = -1);
// After its last reference: the finalizer ran (spec 2.2: exactly once, at the last reference).
void expect_finalized(Session& session, const Allocation& allocation);
// While references remain: the finalizer has not run.
void expect_not_finalized(Session& session, const Allocation& allocation, std::string_view when);
// No exception thrown by a finalizer or destructor was caught by the host since the last ask.
void expect_no_ignored_exceptions(Session& session, std::string_view when);
// The driver saw no invalid free (a double free) since `before`.
void expect_no_invalid_frees(Session& session, const Snapshot& before, std::string_view when);
// Device memory in use is at most `baseline` (plus the backend's slack), and host blocks and
// registrations are back to the baseline's counts.
void expect_back_to(Session& session, const Snapshot& baseline, std::string_view when,
                    std::string_view than, std::string_view why);

// What another process read through an IPC handle of [offset, offset + size) of `allocation`,
// against the pattern written there: "" when the bytes the session wrote match.
std::string compare_imported(const Allocation& allocation, std::size_t offset, std::size_t size,
                             const std::vector<std::byte>& imported);

}  // namespace emm::conformance::engine::properties
