// The HostOnlyCUDAMemoryManager base of a plugin instance, as the HostOnly clauses (LIFE-10,
// DEFER-3) and the host's flush point (spec §2.4) read it: the C++ class's own table and queue,
// or what a language adapter exposes through emm::HostOnlyState (libemm_python: numba's Python
// HostOnlyCUDAMemoryManager). One place for the kit to ask, whatever language the plugin is in.
#pragma once

#include <cstddef>
#include <optional>

#include "emm/base_memory_manager.hpp"

namespace emm {
class HostOnlyCUDAMemoryManager;
class HostOnlyState;
}  // namespace emm

namespace emm::conformance {

class HostOnlyBase {
 public:
  // The base of `manager`, or nullopt when it has none (not derived from a HostOnly class).
  static std::optional<HostOnlyBase> of(BaseCUDAMemoryManager& manager);

  // Host allocations the base still tracks for reset().
  std::size_t tracked_allocations() const;
  // Frees queued and not yet run.
  std::size_t pending_frees() const;
  // Whether the queue is disabled (a defer_cleanup() scope of the base is open).
  bool deferring() const;
  // Runs every queued free unless deferring; throws what the plugin's code threw.
  void flush() const;

 private:
  HostOnlyCUDAMemoryManager* native_ = nullptr;
  HostOnlyState* foreign_ = nullptr;
};

}  // namespace emm::conformance
