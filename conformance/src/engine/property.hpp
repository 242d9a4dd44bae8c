// engine/property.hpp — a plugin clause as a property of every sequence of host operations
// (spec §8): the commands its sequences are made of, and the postconditions it checks after
// them.
//
// Each plugin clause that is about the plugin's behaviour has one Property (properties/*.cpp,
// registered by clause in property.cpp). The engine (explore.hpp) generates sequences
// from the property's commands, runs each in a fresh Session, and calls the property's hooks
// after the commands that concern them; a hook that finds a violation calls session.fail(),
// which names the clause and the call. Hooks run only for the clause being certified, so a
// property judges its own rule and nothing else.
//
//   class Alloc11 final : public Property {
//     std::vector<Weighted> commands(const Plan&) const override {
//       return {{CommandKind::memalloc, 6}, {CommandKind::release, 4}};
//     }
//     void allocated(Session& session, const Allocation& a) const override {
//       if (a.device_pointer % 256 != 0) session.fail(...);
//     }
//   };
//
// To add a postcondition: override the hook of the event it follows (or `step`, after every
// command) in the clause's property. To add a command: commands.hpp.
//
// Immutable; one instance per clause for the whole process.
#pragma once

#include <optional>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/plugin_clauses.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/memory_info.hpp"
#include "engine/session.hpp"

namespace emm::conformance::engine {

// Every operation a sequence can contain (commands.hpp).
enum class CommandKind {
  memalloc,         // memalloc(n), n from the sizes a plugin meets (1, odd, 2^k, 2^k +- 1, pages)
  burst,            // k allocations of one size back to back, then all released in some order
  memallocmanaged,  // memallocmanaged(n, attach_global)
  memhostalloc,     // memhostalloc(n, mapped, portable, wc): all 8 flag combinations
  mempin,           // mempin of a range of a harness buffer: unaligned, adjacent, re-pinned
  reference,        // a copy, own() or view(start, stop) of a held reference
  release,          // drop a held reference, here or on another thread
  free,             // free() on a device allocation's pointer: its finalizer runs now
  verify,           // read back the pattern of a held allocation
  initialize,       // initialize() again
  reset,            // Context::reset() (plugin reset first)
  flush,            // the host's flush point: the HostOnly queue is cleared
  enter_guard,      // defer_cleanup(), the plugin's or the context's
  exit_guard,       // release an open guard, in any order
  close,            // close the runtime: every context reset, instances dropped
  memory_info,      // get_memory_info()
  export_ipc,       // get_ipc_handle(reference), opened in another process
  interface_version,
  probe_instance,   // a null-context instance built and destroyed (REG-2)
  out_of_memory,    // a request no device can satisfy
  fill,             // allocate large blocks until out of memory, release them, ask again
  fill_host,        // the same with memhostalloc, where page-locked memory has a known limit
  reset_in_scope,   // a block released in a scope, reset(), the same size again, scope ends
  first_use,        // the runtime closed, then two threads make the contexts of two devices
  threads,          // many threads allocating and releasing at once
  reset_releasing,  // reset() while other threads drop the last references to device memory
};

struct Weighted {
  CommandKind kind;
  int weight;
};

// What a property can tell about the run when it picks its commands.
struct Plan {
  Capabilities capabilities;
  BackendKind backend = BackendKind::fake;
  int devices = 1;  // devices the sequences use (Property::devices)
  bool can_map_host_memory = true;
  bool pins_share_pages = false;         // Property::pins_share_pages
  bool foreign_exports = false;          // Property::foreign_exports
  std::size_t page_locked_capacity = 0;  // Backend::page_locked_capacity(); 0: not known
};

// How a sequence starts.
enum class Start {
  used,  // device contexts made the host's way: plugin constructed, then initialize()
  bare,  // plugin constructed while no context is current; nothing called yet (LIFE-4/5)
  none,  // no context at all: only null-context instances (REG-2)
};

// What an out-of-memory or fill command saw.
struct OutOfMemory {
  bool host = false;  // a memhostalloc request (fill_host), not a memalloc one
  std::size_t request = 0;
  bool threw_out_of_memory = false;  // CudaDriverError CUDA_ERROR_OUT_OF_MEMORY (or subclass)
  std::string other;                 // another outcome ("returned a pointer", another exception)
  Snapshot before;
  Snapshot after;
  // A fill: what releasing everything the caller held made possible.
  bool after_reset_succeeded = false;  // the same request, after reset(), succeeded
  std::size_t held_by_caller = 0;      // references the caller still held at the failure
};

// What a threads command saw (ALLOC-10).
struct ThreadReport {
  int threads = 0;
  std::size_t operations = 0;
  std::string failure;  // the first thing that went wrong, or ""
  Snapshot before;
  Snapshot after;
};

// What a probe_instance command saw (REG-2).
struct ProbeReport {
  std::string failure;  // construction or destruction threw, or interface_version() did
  std::optional<std::size_t> driver_calls;  // made meanwhile; nullopt: not observable
  int interface_version = 0;
  // A live allocation whose bytes changed or whose finalizer ran meanwhile: "" when none.
  std::string damage;
};

// What an initialize command saw.
struct Initialized {
  int device = 0;
  Snapshot before;                        // just before initialize()
  Snapshot after;                         // just after it
  std::optional<MemoryInfo> info_before;  // get_memory_info() before `before`
  std::optional<MemoryInfo> info_after;   // and after `after`
};

// What an export_ipc command did.
struct Exported {
  const Allocation& allocation;  // what the exported memory belongs to
  ModelReference reference;      // the reference exported, or the one a foreign pointer copies
  std::string name;  // "m3_view2", or "a foreign MemoryPointer over m3_view2" (owner() itself)
  std::shared_ptr<MemoryPointer> pointer;          // what get_ipc_handle() was given
  const IpcHandle* handle = nullptr;               // what it returned; null: it threw
  std::optional<std::vector<std::byte>> imported;  // what another process read through it
  std::string import_error;                        // why that process read nothing
};

// What every command leaves for Property::step.
struct StepInfo {
  CommandKind kind;
  Snapshot before;                // taken just before the command
  std::size_t guards_before = 0;  // guards open before it
};

class Property {
 public:
  virtual ~Property() = default;

  // --- what its sequences are made of ---------------------------------------------------------
  virtual std::vector<Weighted> commands(const Plan& plan) const = 0;
  virtual Start start() const { return Start::used; }
  // Devices its sequences use, of those available.
  virtual int devices(int /*available*/) const { return 1; }
  // Whether its sequences pin ranges that share a page with a live pin (model.hpp).
  virtual bool pins_share_pages() const { return false; }
  // Whether its sequences export "foreign" MemoryPointers over the plugin's memory (IPC-1:
  // spec §7, as Numba exports arrays it did not allocate).
  virtual bool foreign_exports() const { return false; }
  // The command whose calls a leak left after the final reset() is blamed on, when leaving them
  // out of the same sequence leaves no leak (LIFE-2: initialize()); nullopt: no such test.
  // torn_down() then gets the leak of the sequence without them (Session::leak_without()).
  virtual std::optional<CommandKind> leaks_blamed_on() const { return std::nullopt; }
  // Before any sequence: may end the clause as not_supported (an optional capability declared
  // absent; a backend with too few devices) or record notes. Returns false to skip exploring.
  virtual bool prepare(ClauseRun& run) const;

  // --- postconditions -------------------------------------------------------------------------
  // Each is called after the command that caused its event, with the allocation's record.
  virtual void allocated(Session&, const Allocation&) const {}
  // A further reference (copy, own(), view) was taken: `reference` as the model lists it.
  virtual void referenced(Session&, const Allocation&, const ModelReference&,
                          const std::shared_ptr<MemoryPointer>&) const {}
  // A reference was dropped: `last` when it was the allocation's last.
  virtual void released(Session&, const Allocation&, bool /*last*/) const {}
  // free() was called on the allocation's pointer (its references are still held).
  virtual void freed(Session&, const Allocation&) const {}
  // An explicit initialize() returned; `before` and `after` were taken just around it. The
  // memory info figures read before and after those are there when the plugin declares
  // memory_info.
  virtual void initialized(Session&, const Initialized&) const {}
  // The allocation's pattern was read back: `damage` says what differs ("" when intact).
  virtual void verified(Session&, const Allocation&, const std::string& /*damage*/) const {}
  // Context::reset() returned.
  virtual void was_reset(Session&, int /*device*/, const Snapshot& /*before*/) const {}
  virtual void closed(Session&, const Snapshot& /*before*/) const {}
  virtual void flushed(Session&, int /*device*/, const Snapshot& /*before*/) const {}
  virtual void guard_entered(Session&, int /*device*/, const Snapshot& /*before*/) const {}
  virtual void guard_exited(Session&, int /*device*/, const Snapshot& /*before*/) const {}
  // get_memory_info() returned `info`, or threw (`info` empty; called inside the catch block).
  virtual void memory_info(Session&, int /*device*/, const std::optional<MemoryInfo>& /*info*/,
                           const Snapshot& /*now*/) const {}
  // get_ipc_handle() was called (Exported says on what and what came of it; a handle that is
  // null means it threw, and the hook is then called inside the catch block).
  virtual void exported(Session&, const Exported&) const {}
  virtual void interface_version(Session&, int /*version*/) const {}
  virtual void probed(Session&, const ProbeReport&) const {}
  virtual void out_of_memory(Session&, const OutOfMemory&) const {}
  virtual void threads(Session&, const ThreadReport&) const {}
  // After every command.
  virtual void step(Session&, const StepInfo&) const {}
  // The sequence is over: every guard released, every reference dropped, the host's flush
  // point passed (no reset() yet).
  virtual void settled(Session&) const {}
  // ... and then every context reset: `at_rest` is the snapshot from settled().
  virtual void torn_down(Session&, const Snapshot& /*at_rest*/) const {}
};

// The property of `clause`; null for a clause judged only by its fixed scenario (PERF, the
// declaration checks).
const Property* property_for(PluginClause clause) noexcept;

}  // namespace emm::conformance::engine
