// engine/session.hpp — the system under test of one generated sequence: the plugin, hosted by a
// fresh reference runtime on the clause's backend, and the real objects the model stands for.
//
// A Session is built for every sequence the engine runs (and for every shrink it tries), so
// that sequences do not see each other's state. It holds the references the model lists, in the
// same order (a command that drops model reference 3 drops session reference 3), the open
// guards, the host buffers mempin pins, and a record of every allocation made, kept after it is
// released so that later checks can name it. Commands act through it and report what happened
// to the running clause's Property (property.hpp), which judges.
//
//   Session session(run, property, trace);
//   Context& context = session.context(0);
//   session.begin_call({"auto m1 = context.memalloc(4097);", "m1 = ctx.memalloc(4097)"});
//
// The session records every call it makes (the trace) so that a failure names the call it
// happened at and a reproducer can list the calls. Its destructor releases everything it
// holds and closes its runtime; it never throws.
//
// Not thread-safe: one sequence runs on one thread (commands that use threads join them).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "emm/conformance/clause_run.hpp"
#include "emm/diagnostics.hpp"
#include "emm/host_allocation.hpp"
#include "emm/runtime.hpp"
#include "engine/model.hpp"

namespace emm::conformance::engine {

class Property;
enum class CommandKind;

// One call of a sequence, in the two languages a reproducer is written in.
struct Call {
  std::string cpp;     // "auto m1 = context.memalloc(4097);"
  std::string python;  // "m1 = ctx.memalloc(4097)"
};

// The calls of one sequence so far, and what a failure said about them.
struct Trace {
  std::vector<Call> calls;
  // Host buffers the calls pin (their declarations open a reproducer): index -> bytes.
  std::map<int, std::size_t> buffers;
  int devices = 1;    // contexts the sequence uses: context(0), context(1)
  bool bare = false;  // the plugin constructed while no context was current, nothing called
  // Called with each call as it begins (a sequence run in a child process tells its parent
  // what it was doing when it crashed); empty: nothing.
  std::function<void(const Call&)> on_call;
  // The failing check, as a statement a reproducer can end with (C++ and Python); empty when
  // the failing call itself throws or no plain statement can show it.
  std::string assertion_cpp;
  std::string assertion_python;
};

// What the backend shows of the machine at one moment.
struct Snapshot {
  std::size_t device_bytes = 0;
  std::optional<std::size_t> host_allocations;
  std::optional<std::size_t> host_registrations;
  std::optional<std::size_t> invalid_frees;
  std::optional<std::size_t> driver_frees;
};

// The harness's record of one allocation of the sequence.
struct Allocation {
  ModelAllocation model;           // as it was made
  std::string name;                // "m3"
  CUdeviceptr device_pointer = 0;  // device and managed memory; the device alias of mapped memory
  void* host_pointer = nullptr;    // host memory, and managed memory's host address
  // What holds the allocation's finalizer: the owner() of what memalloc / memallocmanaged
  // returned, or of a mapped host allocation's pointer; the PinnedMemory of a pinned one.
  std::weak_ptr<MemoryPointer> base;
  std::weak_ptr<PinnedMemory> pinned;
  std::optional<AddressRange> block;  // the driver block holding it when it was made
  std::uint64_t seed = 0;             // of the pattern written into it
  bool orphaned = false;              // its context was reset or closed
  bool freed = false;                 // free() was called on it
  bool released = false;              // its last reference is gone
  // What the returned object said of itself when it was made.
  std::size_t reported_size = 0;
  const Context* reported_context = nullptr;
  long refct = 0;
  bool reported_mapped = false;  // host memory: a MappedMemory came back (else PinnedMemory)
  bool owner_kept = false;       // mempin: HostAllocation::owned() is the owner it was given
  void* reported_host_pointer = nullptr;
  // A property has confirmed that the driver block went back to the driver (FIN-5).
  bool free_confirmed = false;

  // The first address it occupies and its size, in the one address space the checks compare
  // allocations in (device addresses for device memory, host addresses for host memory).
  std::uintptr_t address() const noexcept;
};

class Session {
 public:
  Session(ClauseRun& run, const Property& property, const Model& initial, Trace& trace);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ClauseRun& run() noexcept { return run_; }
  const Property& property() const noexcept { return property_; }
  Backend& backend() noexcept { return run_.backend(); }
  Driver& driver() noexcept { return run_.driver(); }
  const Capabilities& capabilities() const noexcept { return run_.capabilities(); }

  // --- the host ------------------------------------------------------------------------------
  // Device `device`'s context, made current on this thread: created (plugin constructed and
  // initialized) on first use; on a bare start, constructed with no context current and not
  // initialized (LIFE-4, LIFE-5).
  Context& context(int device);
  BaseCUDAMemoryManager& manager(int device) { return context(device).memory_manager(); }
  // Closes the runtime: every context is reset and its plugin instance destroyed; the next
  // context(d) makes new ones.
  void close_runtime();
  // A reference runtime over the backend's driver with the plugin registered.
  std::unique_ptr<Runtime> make_runtime();
  // The session's runtime (made on first use), for commands that reach contexts from threads
  // of their own; not on a bare start.
  Runtime& runtime();

  // --- what the model lists -------------------------------------------------------------------
  struct Held {
    std::shared_ptr<MemoryPointer> pointer;  // device, managed and mapped memory
    HostAllocation host;                     // memhostalloc / mempin results
    int allocation = 0;                      // the id of what it references
    std::string name;                        // "m3_view2"
  };
  struct HeldGuard {
    CleanupGuard guard;
    int id = 0;
    int device = 0;
  };
  std::vector<Held>& references() noexcept { return references_; }
  std::vector<HeldGuard>& guards() noexcept { return guards_; }
  Allocation& allocation(int id) { return allocations_.at(id); }
  const std::map<int, Allocation>& allocations() const noexcept { return allocations_; }
  Allocation& record(Allocation allocation);
  // The harness's host buffer `index` (page-aligned) and the owner mempin is given for it.
  std::byte* buffer(int index) const;
  std::shared_ptr<void> buffer_owner(int index) const;

  // Ends the sequence the way a program ends: every guard released (last entered first), every
  // reference dropped (last taken first), the host's flush point, then every context reset. Each
  // step is a call of the trace, and the property's hooks judge it (released, settled, torn_down).
  void finish();

  // The device memory left allocated after the final reset() by this same sequence with every
  // command of `kind` left out, run in a fresh session whose hooks check nothing; nullopt when
  // the engine cannot replay.
  std::optional<std::size_t> leak_without(CommandKind kind);
  // The same for the whole sequence run again: on the gpu backend, memory the driver sets up for
  // itself the first time (unified memory, a memory pool's machinery) grows cuMemGetInfo once,
  // a leak of the plugin's every time (expect_back_to()).
  std::optional<std::size_t> leak_on_replay();
  using Replay = std::function<std::optional<std::size_t>(std::optional<CommandKind> left_out)>;
  void set_replay(Replay replay) { replay_ = std::move(replay); }

  // Per-sequence state a property keeps between its hooks, made on first use.
  template <class T>
  T& state() {
    std::shared_ptr<void>& slot = states_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_shared<T>();
    return *static_cast<T*>(slot.get());
  }

  // --- the trace --------------------------------------------------------------------------------
  // Appends `call` before it is made; failures name the last call begun.
  void begin_call(Call call);
  std::size_t call_number() const noexcept { return trace_.calls.size(); }
  Trace& trace() noexcept { return trace_; }

  // --- verdict
  // ------------------------------------------------------------------------------------ Fails the
  // clause at the current call: "[ID] at call N (<call>): <what>".
  [[noreturn]] void fail(std::string_view what);
  // The same, with a statement a reproducer ends with to show the failure.
  [[noreturn]] void fail(std::string_view what, std::string_view assertion_cpp,
                         std::string_view assertion_python);
  // Inside a catch block: the current call threw; `expected` says what it should have done.
  [[noreturn]] void fail_thrown(std::string_view expected = "it to return");
  // Remembers the last lifecycle call made on `device` ("reset()", "initialize() again",
  // "close()"), which failure messages of later calls on it mention.
  void note_lifecycle(int device, std::string what) { lifecycle_[device] = std::move(what); }
  // " (after reset() of device 0)", or "" when no lifecycle call came before on `device`.
  std::string after_lifecycle(int device) const;

  // --- observations
  // -------------------------------------------------------------------------------
  Snapshot snapshot();
  const Snapshot& baseline() const noexcept { return baseline_; }
  // The live, not orphaned allocation (other than `self`) whose bytes overlap `self`'s.
  const Allocation* overlapping(const Allocation& self) const;
  // Writes the allocation's pattern (its first and last bytes and a window in the middle; all
  // of it when small) through the driver, or through the host pointer for host memory.
  void write_pattern(Allocation& allocation);
  // "" when the pattern is intact; otherwise what differs ("byte 17 of m3 is 0x00, expected
  // 0x5c"). A read the driver refuses is reported the same way.
  std::string pattern_damage(const Allocation& allocation);
  // Exceptions finalizers threw (the host caught and reported them) since the last call.
  std::vector<DiagnosticEvent> ignored_exceptions();
  // Whether the allocation's finalizer has run (or the object holding it is gone).
  static bool finalized(const Allocation& allocation);
  // The size of each host buffer mempin pins in.
  std::size_t buffer_size() const noexcept { return buffer_size_; }

 private:
  struct Buffer;
  void release_everything() noexcept;

  ClauseRun& run_;
  const Property& property_;
  Trace& trace_;
  bool bare_ = false;
  int devices_ = 1;
  std::unique_ptr<Runtime> runtime_;
  // A bare start's contexts: constructed by the session, not by the runtime.
  std::vector<CUcontext> retained_;
  std::map<int, std::unique_ptr<Context>> bare_contexts_;
  std::vector<Held> references_;
  std::vector<HeldGuard> guards_;
  std::map<std::type_index, std::shared_ptr<void>> states_;
  std::map<int, std::string> lifecycle_;
  Replay replay_;
  int contexts_ = 0;  // devices with a context: 0 for Start::none
  std::map<int, Allocation> allocations_;
  // overlapping()'s index: allocations by start address, with the largest extent recorded. An
  // entry whose allocation was released (or recorded again elsewhere) since is dropped when a
  // query meets it, so a long sequence's queries stay logarithmic rather than scanning every
  // allocation it ever made.
  mutable std::multimap<std::uintptr_t, int> by_address_;
  std::size_t largest_extent_ = 1;
  std::vector<std::shared_ptr<Buffer>> buffers_;
  std::size_t buffer_size_ = 0;
  Snapshot baseline_;
  std::unique_ptr<Diagnostics::Capture> capture_;
  std::size_t exceptions_seen_ = 0;
};

// Where Session::write_pattern writes an allocation of `size` bytes: all of a small one; the
// first, middle and last bytes of a larger one (an overlap shows at a block's edges, and the
// driver refuses an access past the end). Pairs of (offset, length).
std::vector<std::pair<std::size_t, std::size_t>> pattern_windows(std::size_t size);

// Bytes of the pattern with `seed` at [offset, offset + size): each byte depends on the seed and
// on its offset, so a window read anywhere is compared with what was written there.
std::vector<std::byte> pattern_bytes(std::uint64_t seed, std::size_t offset, std::size_t size);

}  // namespace emm::conformance::engine
