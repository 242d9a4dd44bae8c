// emm/host_only_state.hpp — for language adapters, not for plugin authors: the
// HostOnlyCUDAMemoryManager base of a plugin written in another language, as the kit's HostOnly
// clauses (LIFE-10, DEFER-3) and the host's flush point (spec §2.4) read it.
//
// A C++ plugin derived from emm::HostOnlyCUDAMemoryManager needs nothing of this: the kit reads
// that class's own queue and table. An adapter whose C++ manager stands for a foreign instance
// (libemm_python's PythonMemoryManager: numba's Python HostOnlyCUDAMemoryManager, with its
// `allocations` table and `deallocations` queue) also derives from HostOnlyState and answers
// from the foreign object:
//
//   class PythonMemoryManager final : public BaseCUDAMemoryManager, public HostOnlyState { ... };
//
// Thread-safety: as the foreign base's (the kit calls these from the thread running a clause).
#pragma once

#include <cstddef>

namespace emm {

class HostOnlyState {
 public:
  // Whether the foreign instance has a HostOnly base at all (a Python class derived from
  // numba's HostOnlyCUDAMemoryManager); the other members are only called when it has.
  virtual bool has_host_only_base() const = 0;
  // Host allocations the base still tracks for reset() (numba: len(allocations)).
  virtual std::size_t tracked_allocations() const = 0;
  // Frees queued and not yet run (numba: len(deallocations)).
  virtual std::size_t pending_frees() const = 0;
  // Whether the queue is disabled, i.e. a defer_cleanup() scope of the base is open (numba:
  // deallocations.is_disabled).
  virtual bool deferring() const = 0;
  // The host's flush point: runs every queued free unless deferring (numba:
  // deallocations.clear()). Throws what the foreign call raised.
  virtual void flush() = 0;

 protected:
  HostOnlyState() = default;
  HostOnlyState(const HostOnlyState&) = default;
  HostOnlyState& operator=(const HostOnlyState&) = default;
  ~HostOnlyState() = default;
};

}  // namespace emm
