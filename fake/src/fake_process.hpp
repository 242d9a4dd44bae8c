// FakeDriver::Process — the state of one simulated process: what it has allocated, mapped,
// pinned and created, its primary-context retains, call counters and pending faults.
//
// Private to fake/src. The FakeDriver entry points are split by concern; each file defines them
// together with the Process helpers of its concern:
//   fake_process.cpp        process lifetime, entering a call, fault injection, observers
//   fake_devices.cpp        driver version and device queries
//   fake_contexts.cpp       primary contexts and the current context
//   fake_device_memory.cpp  device allocations, address ranges, copies and memsets
//   fake_host_memory.cpp    page-locked host memory (cuMemHostAlloc, cuMemHostRegister)
//   fake_ipc.cpp            IPC handles
//   fake_handles.cpp        streams, events and modules
//   fake_pools.cpp          the stream-ordered allocator
// The state the processes of one system share is fake_system_state.hpp.
//
// Thread-safety: every member but the atomics of yield_in_calls (Interleaving) is guarded by the
// system's mutex (system.mutex); enter() takes it, and the helpers expect the caller to hold it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "emm/fake/fake_driver.hpp"
#include "fake_system_state.hpp"

namespace emm {
namespace fake_detail {

// "0x1f00" for diagnostics.
std::string hex(std::uintptr_t value);
std::string hex(const void* pointer);

// Whether [address, address + bytes) lies inside [base, base + size).
inline bool contains(std::uintptr_t base, std::size_t size, std::uintptr_t address,
                     std::size_t bytes) {
  if (address < base) return false;
  const std::uintptr_t offset = address - base;
  return offset < size && bytes <= size - offset;
}

// The entry of `ranges` (keyed by start, disjoint) whose [start, start + size) holds `address`.
template <class Map, class SizeOf>
auto find_containing(Map& ranges, std::uintptr_t address, SizeOf size_of) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return contains(it->first, size_of(it->second), address, 1) ? it : ranges.end();
}

// Handles of streams, events, modules and pools: a tag in the high bits, then a serial that
// is never reused, so destroying a handle twice is always detected.
enum class HandleTag : std::uintptr_t { stream = 0x5, event = 0xE, module = 0xD, pool = 0xB };

}  // namespace fake_detail

struct FakeDriver::Process {
  struct Mapping {
    std::uint64_t block = 0;
    std::size_t size = 0;
    bool imported = false;   // a cuIpcOpenMemHandle mapping
    int context_device = 0;  // the context it belongs to (destroyed with it)
    std::size_t opens = 1;   // imported: cuIpcOpenMemHandle calls not yet closed
  };
  struct HostAllocation {
    std::size_t size = 0;
    std::size_t length = 0;  // of the mapping behind it (whole pages)
    unsigned flags = 0;
    int device = 0;
  };
  struct Registration {
    std::size_t size = 0;
    unsigned flags = 0;
    int device = 0;
  };
  struct Fault {
    DriverCall call;
    CUresult result;
    std::size_t skip;       // calls to let through before the first failure
    std::size_t remaining;  // failures still to inject
  };

  // --- fake_process.cpp --------------------------------------------------------------------------
  explicit Process(fake_detail::SystemState& system_state);

  // Every entry point starts here: lock the system, count the call, inject a pending fault.
  std::unique_lock<fake_detail::SystemMutex> enter(DriverCall call);

  [[noreturn]] static void fail(DriverCall call, CUresult result, std::string detail);
  // fail(), counted by invalid_frees(): a free, unregister, close or destroy of nothing live.
  [[noreturn]] void invalid_free(DriverCall call, CUresult result, std::string detail);

  int device_count() const { return static_cast<int>(system.devices.size()); }
  void check_device(DriverCall call, int device) const;
  fake_detail::SystemState::Device& device_state(int device) {
    return system.devices[static_cast<std::size_t>(device)];
  }

  template <class T>
  T make_handle(fake_detail::HandleTag tag) {
    const std::uintptr_t value = (static_cast<std::uintptr_t>(tag) << 56) |
                                 (static_cast<std::uintptr_t>(system.next_handle_value()) << 4);
    return reinterpret_cast<T>(value);
  }

  // Releases everything this process holds in the context of `device` (the end of the process).
  void release_device(int device);
  // Destroys this process's primary context on `device` with everything in it, as the driver
  // does when the last retain is released and on cuDevicePrimaryCtxReset: what it held is
  // counted in `reclaimed` and remembered in `destroyed`, so that a later free of it is told why
  // it fails.
  void destroy_context(int device);
  // Forgets the destroyed ranges that start in [start, start + size): the addresses are in use
  // again.
  void forget_destroyed(std::uintptr_t start, std::size_t size);
  // " (it was freed when ...)" when `address` started something a destroyed context took.
  std::string destroyed_note(std::uintptr_t address) const;

  // --- fake_contexts.cpp -------------------------------------------------------------------------
  CUcontext current_context() const;
  void set_current_context(CUcontext context);  // null: none is current on this thread
  // The device whose primary context `context` is; nullopt if it is none of this process's.
  std::optional<int> context_device(CUcontext context) const;
  // The device of the current context, for calls that act in it.
  int require_context(DriverCall call) const;

  // --- fake_device_memory.cpp --------------------------------------------------------------------
  // What CUDA allocated, mapped or registered in this process at an address
  // (cuPointerGetAttribute).
  struct Located {
    enum class Kind { device, managed, pool, ipc_mapping, host_allocation, registration };
    Kind kind = Kind::device;
    std::uintptr_t base = 0;
    std::size_t size = 0;
    int device = 0;  // of the memory, or (host memory) current when it was made
  };
  std::optional<Located> locate(std::uintptr_t address) const;
  [[noreturn]] void out_of_memory(DriverCall call, int device, std::size_t bytes);
  CUdeviceptr allocate(DriverCall call, int device, std::size_t bytes, fake_detail::BlockKind kind);
  void release_mapping(std::map<CUdeviceptr, Mapping>::iterator it);
  // cuMemFree / cuMemFreeAsync of `pointer`.
  void free_device(DriverCall call, CUdeviceptr pointer);
  // The bytes behind the device range [address, address + bytes), when the whole range lies in
  // one allocation, IPC mapping or mapped host range of this process.
  std::byte* resolve(CUdeviceptr address, std::size_t bytes);
  std::byte* resolve_or_fail(DriverCall call, CUdeviceptr address, std::size_t bytes,
                             const char* role);

  // --- fake_host_memory.cpp ----------------------------------------------------------------------
  const HostAllocation* mapped_host_allocation(std::uintptr_t address, std::size_t bytes) const;
  const Registration* mapped_registration(std::uintptr_t address, std::size_t bytes) const;
  bool is_mapped_host(std::uintptr_t address, std::size_t bytes) const;
  // Whether [start, start + size) overlaps page-locked memory of this process.
  // Which page-locked memory, if any, shares a byte with [start, start + size).
  enum class HostOverlap { none, allocation, registration };
  HostOverlap overlaps_locked(std::uintptr_t start, std::size_t size) const;
  void free_host(std::map<std::uintptr_t, HostAllocation>::iterator it);

  // --- fake_handles.cpp --------------------------------------------------------------------------
  // A live stream of this process, or a default stream with a current context.
  void check_stream(DriverCall call, CUstream stream) const;
  void check_event(DriverCall call, CUevent event) const;

  // --- fake_pools.cpp ----------------------------------------------------------------------------
  void check_pool(DriverCall call, CUmemoryPool pool) const;

  fake_detail::SystemState& system;
  const std::uint64_t serial;  // names this process; never reused
  std::vector<int> retains;    // primary context retain counts, per device
  // Per device: whether the primary context exists (retained since it was last destroyed). Its
  // handle stays the same; a destroyed one that is current answers CUDA_ERROR_CONTEXT_IS_DESTROYED.
  std::vector<bool> context_live;
  std::vector<bool> context_was_live;  // per device: retained at least once
  // Start address -> device, of what destroyed contexts took with them and is not reused yet.
  std::map<std::uintptr_t, int> destroyed;
  FakeDriver::ContextReclaims reclaimed;
  std::map<CUdeviceptr, Mapping> mappings;
  std::map<std::uintptr_t, HostAllocation> host_allocations;
  std::map<std::uintptr_t, Registration> registrations;
  std::unordered_map<std::uintptr_t, int> streams;  // handle -> device
  std::unordered_map<std::uintptr_t, int> events;
  std::unordered_map<std::uintptr_t, int> modules;
  std::unordered_map<std::uintptr_t, int> pools;
  std::array<std::size_t, kDriverCallCount> calls{};
  std::vector<Fault> faults;
  std::size_t invalid_frees = 0;
  std::size_t invalid_accesses = 0;
  // FakeDriver::yield_in_calls(): used by enter() before it locks, so atomics, not guarded by
  // the mutex. The stride thins the yields when the process is starved of CPU (yield_pacing.hpp).
  struct Interleaving {
    std::atomic<bool> on{false};
    std::atomic<std::uint64_t> calls{0};   // yielding calls since it was turned on
    std::atomic<std::uint32_t> stride{1};  // yield at every stride-th of them
    // The review window's start: wall time (steady clock) and the process's CPU time, in ns.
    std::atomic<std::int64_t> window_wall_ns{0};
    std::atomic<std::int64_t> window_cpu_ns{0};
    std::atomic<bool> reviewing{false};

    void start() noexcept;
    // Before a yielding call: yields unless the stride skips this call.
    void before_call() noexcept;

   private:
    void review() noexcept;
  };
  Interleaving yield_in_calls;
};

}  // namespace emm
