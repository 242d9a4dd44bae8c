// MANAGED — managed (unified) memory, optional by the capability managed_memory: the kind, size
// and attach flag of what memallocmanaged returns (MANAGED-1), one range seen alike by the host
// and the device (MANAGED-2), and its lifetime (MANAGED-3).
//
// The attach flag is the driver's record (Backend::managed_attach_flags): the fake keeps it; no
// GPU query reports it. The host touches managed memory through ManagedMemory::host_pointer().
// On the fake a pointer that is not managed memory is refused before the host touches it; on a
// GPU such a pointer faults and the clause ends as a crash. Judging lifetime follows FIN: the
// pointer types show whether a finalizer ran, and the driver's figures are evidence only for a
// plugin that declares no_caching.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <random>

#include "checks/checks.hpp"
#include "emm/errors.hpp"
#include "emm/managed_memory.hpp"

namespace emm::conformance::checks {
namespace {

constexpr std::array<bool, 2> kAttachValues = {true, false};

std::string call_text(std::size_t size, bool attach_global, std::string_view why = {}) {
  std::string text =
      str("memallocmanaged(", size, ", attach_global=", attach_global ? "true" : "false", ")");
  if (!why.empty()) text += str(" (", why, ")");
  return text;
}

std::string flag_text(unsigned flags) {
  if (flags == CU_MEM_ATTACH_GLOBAL) return "CU_MEM_ATTACH_GLOBAL";
  if (flags == CU_MEM_ATTACH_HOST) return "CU_MEM_ATTACH_HOST";
  return str("flags ", hex(flags));
}

// False (with a note) when the device cannot allocate managed memory at all: nothing of the
// clause can be observed there, and the plugin is not to blame.
bool device_has_managed_memory(ClauseRun& run) {
  const int device = run.host().context().device();
  int supported = 0;
  try {
    supported = run.driver().device_get_attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, device);
  } catch (...) {
    run.fail(str("reading CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY of device ", device,
                 " failed: ", describe_current_exception()));
  }
  if (supported != 0) return true;
  run.unobservable(str("managed memory (device ", device, " has none)"));
  return false;
}

// Context::memallocmanaged; any exception fails the clause naming the call. Checks that the
// result is non-null and has the requested size.
std::shared_ptr<MemoryPointer> allocate_managed(ClauseRun& run, Context& context, std::size_t size,
                                                bool attach_global, std::string_view why = {}) {
  const std::string call = call_text(size, attach_global, why);
  std::shared_ptr<MemoryPointer> memory;
  try {
    memory = context.memallocmanaged(size, attach_global);
  } catch (const NotImplementedError& error) {
    run.fail(str(call, " threw NotImplementedError (", error.what(),
                 ") although the plugin declares managed_memory=true"));
  } catch (...) {
    run.fail(str(call, " threw ", describe_current_exception()));
  }
  if (!memory) run.fail(str(call, " returned a null std::shared_ptr"));
  if (memory->size() != size) {
    run.fail(str(call, " returned a pointer of size ", memory->size(), ", expected ", size));
  }
  if (memory->device_pointer() == 0) run.fail(str(call, " returned a null device pointer"));
  return memory;
}

// The ManagedMemory behind what memallocmanaged returned.
ManagedMemory& managed_of(ClauseRun& run, const std::shared_ptr<MemoryPointer>& memory,
                          std::string_view call) {
  ManagedMemory* managed = managed_memory(memory);
  if (managed == nullptr) {
    run.fail(str(call, " returned a MemoryPointer at ", hex(memory->device_pointer()),
                 " that neither is nor owns an emm::ManagedMemory; wrap cuMemAllocManaged "
                 "memory in a ManagedMemory and return its own()"));
  }
  return *managed;
}

// The attach flag the driver recorded for the managed allocation holding `pointer`; nullopt
// where the backend cannot tell (it notes that itself). Fails when no managed allocation holds
// it, saying what follows (`consequence`).
std::optional<unsigned> driver_attach_flag(ClauseRun& run, CUdeviceptr pointer,
                                           std::string_view call, std::string_view consequence) {
  const std::optional<unsigned> flags = run.backend().managed_attach_flags(pointer);
  if (!flags) return std::nullopt;
  if (*flags == 0) {
    run.fail(str(call, " returned ", hex(pointer),
                 ", which lies in no cuMemAllocManaged allocation: the memory is not managed "
                 "memory; ",
                 consequence));
  }
  return flags;
}

void synchronize(ClauseRun& run, std::string_view when) {
  try {
    run.driver().ctx_synchronize();
  } catch (...) {
    run.fail(str("cuCtxSynchronize ", when, " failed: ", describe_current_exception()));
  }
}

// A flush point whose failure (a queued free that throws: memory freed twice) fails the clause.
void flush(ClauseRun& run, Context& context, std::string_view when) {
  try {
    flush_point(context.memory_manager());
  } catch (...) {
    run.fail(str("flushing the deferred-free queue ", when, " threw ", describe_current_exception(),
                 " (was managed memory freed twice?)"));
  }
}

constexpr std::array<const char*, 6> kReferenceNames = {"the pointer memallocmanaged returned",
                                                        "a copy of it",
                                                        "its own()",
                                                        "its view(0)",
                                                        "its view(1)",
                                                        "its view(16, 4096)->view(8)"};

// One allocation, referenced six ways and released in `order`: the finalizer runs only after
// the last release, and then it runs.
void lifetime(ClauseRun& run, Context& context, const std::vector<std::size_t>& order,
              std::size_t number, bool attach_global) {
  constexpr std::size_t kSize = 8192 + 40;
  const std::string call = call_text(kSize, attach_global);
  const std::string where = str("(drop order #", number, ")");
  auto memory = allocate_managed(run, context, kSize, attach_global);
  if (memory->refct() < 1) {
    run.fail(str(call, " returned a pointer whose refct() is ", memory->refct(),
                 " at rest: taking and dropping a view would free it while it is referenced; "
                 "return ManagedMemory::own(), not the bare ManagedMemory"));
  }
  const CUdeviceptr pointer = memory->device_pointer();
  const std::uint64_t seed = 3300 + number;
  write_pattern(run, pointer, kSize, seed, call);
  const std::optional<AddressRange> block = run.backend().driver_block(pointer);
  const std::weak_ptr<MemoryPointer> base = memory->owner();

  std::vector<std::shared_ptr<MemoryPointer>> refs = six_references(memory);
  memory.reset();

  std::vector<std::size_t> dropped;
  for (std::size_t step = 0; step + 1 < order.size(); ++step) {
    refs[order[step]].reset();
    dropped.push_back(order[step]);
    const std::vector<std::size_t> remaining(order.begin() + static_cast<long>(step) + 1,
                                             order.end());
    const std::string state =
        str("after dropping ", reference_names(kReferenceNames, dropped), " while ",
            reference_names(kReferenceNames, remaining), " still reference(s) it ", where);
    if (!alive(base)) run.fail(str("the finalizer of ", call, " ran ", state));
    if (block && !run.backend().driver_block(pointer)) {
      run.fail(str("the driver allocation of ", call, " at ", hex(pointer), " was freed ", state));
    }
    expect_pattern(run, pointer, kSize, seed, str(call, " ", state));
    auto probe = allocate_managed(run, context, kSize, attach_global, "probe for early reuse");
    if (overlap(probe->device_pointer(), kSize, pointer, kSize)) {
      run.fail(str("a new ", call, " at ", hex(probe->device_pointer()), " overlaps the one at ",
                   hex(pointer), " ", state, ": the plugin handed out memory still in use"));
    }
  }
  refs[order.back()].reset();
  if (!finalized(base)) {
    run.fail(str("after dropping every reference to ", call, " ", where,
                 " its finalizer has not run (does the plugin keep a std::shared_ptr to what "
                 "it returned?)"));
  }
  flush(run, context, str("after dropping every reference to ", call, " ", where));
  if (run.capabilities().no_caching && exact_driver_allocation(block, pointer, kSize) &&
      exact_driver_allocation(run.backend().driver_block(pointer), pointer, kSize)) {
    run.fail(str("after dropping every reference to ", call, " ", where,
                 " and a flush point, the driver allocation at ", hex(pointer),
                 " is still allocated although the plugin declares no_caching: its finalizer "
                 "did not free it"));
  }
}

// A plugin declaring managed_memory=false: memallocmanaged throws NotImplementedError (the
// default of BaseCUDAMemoryManager), or works uncertified (a HostOnlyCUDAMemoryManager subclass
// inherits it, so plugins written before managed memory was certified stay certifiable).
// Anything else fails.
[[noreturn]] void expect_declined(ClauseRun& run, Context& context) {
  constexpr const char* kCall = "memallocmanaged(4096, attach_global=true)";
  std::shared_ptr<MemoryPointer> memory;
  try {
    memory = context.memallocmanaged(4096, true);
  } catch (const NotImplementedError&) {
    run.not_supported(
        "the plugin declares managed_memory=false and memallocmanaged() throws "
        "NotImplementedError, as required");
  } catch (...) {
    run.fail(
        str("the plugin declares managed_memory=false, so memallocmanaged() must throw "
            "emm::NotImplementedError; ",
            kCall, " threw ", describe_current_exception()));
  }
  if (!memory || memory->device_pointer() == 0) {
    run.fail(
        str("the plugin declares managed_memory=false, so memallocmanaged() must throw "
            "emm::NotImplementedError; ",
            kCall, " returned ", memory ? "a null device pointer" : "a null std::shared_ptr"));
  }
  memory.reset();
  run.not_supported(
      str("the plugin declares managed_memory=false, yet ", kCall,
          " works (inherited from HostOnlyCUDAMemoryManager?): declare managed_memory=true to "
          "have it certified"));
}

}  // namespace

// MANAGED-1: kind, size and attach flag, for both attach values and several sizes.
EMM_CHECK(MANAGED_1) {
  run.require_capability();
  if (!device_has_managed_memory(run)) return;
  Context& context = run.host().context();
  std::size_t checked = 0;
  for (const bool attach_global : kAttachValues) {
    for (const std::size_t size : {std::size_t{1}, std::size_t{8}, std::size_t{4096}, MiB + 3}) {
      const std::string call = call_text(size, attach_global);
      auto memory = allocate_managed(run, context, size, attach_global);
      managed_of(run, memory, call);
      const unsigned expected = attach_global ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST;
      const std::optional<unsigned> seen =
          driver_attach_flag(run, memory->device_pointer(), call,
                             "it came from another allocator (use cuMemAllocManaged)");
      if (seen && *seen != expected) {
        run.fail(str(call, ": the driver allocated ", hex(memory->device_pointer()), " with ",
                     flag_text(*seen), ", expected ", flag_text(expected),
                     ": the attach_global argument did not reach cuMemAllocManaged"));
      }
      ++checked;
    }
  }
  run.record("allocations_checked", checked);
}

// MANAGED-2: the host and the device see the same bytes over the whole range.
EMM_CHECK(MANAGED_2) {
  run.require_capability();
  if (!device_has_managed_memory(run)) return;
  Context& context = run.host().context();
  std::uint64_t seed = 3200;
  for (const bool attach_global : kAttachValues) {
    for (const std::size_t size : {std::size_t{1}, std::size_t{4096 + 3}, MiB + 5}) {
      const std::string call = call_text(size, attach_global);
      auto memory = allocate_managed(run, context, size, attach_global);
      ManagedMemory& managed = managed_of(run, memory, call);
      const CUdeviceptr pointer = memory->device_pointer();

      // Before the host touches anything: the range is managed memory and lies inside one
      // driver allocation.
      const std::optional<unsigned> flag = driver_attach_flag(
          run, pointer, call, "the host cannot reach it through its host pointer (not touched)");
      const std::optional<AddressRange> block = run.backend().driver_block(pointer);
      if (!block && flag) {
        run.fail(str(call, " returned ", hex(pointer), ", which lies in no driver allocation"));
      }
      if (!block) {
        // Where managed memory cannot be told apart, no address range may mean the driver does
        // not report one for managed memory: not evidence against the plugin.
        run.unobservable("the driver allocation holding managed memory (cuMemGetAddressRange)");
      } else if (pointer < block->base || pointer - block->base + size > block->size) {
        run.fail(str(call, " returned [", hex(pointer), ", +", size,
                     "), which does not lie inside the driver allocation holding it, [",
                     hex(block->base), ", +", block->size,
                     "): host and device accesses would run past it"));
      }
      auto* host =
          static_cast<std::byte*>(managed.host_pointer()) + (pointer - managed.device_pointer());

      const std::vector<std::byte> from_host = pattern(size, ++seed);
      std::memcpy(host, from_host.data(), size);
      synchronize(run, str("after writing through the host pointer of ", call));
      expect_same_bytes(run, read_device(run, pointer, size, call), from_host,
                        str(call,
                            ": bytes written through the host pointer, read by the driver "
                            "at the device pointer"));

      const std::vector<std::byte> from_device = pattern(size, ++seed);
      write_device(run, pointer, from_device, call);
      synchronize(run, str("after the driver wrote ", call));
      expect_same_bytes(run, std::vector<std::byte>(host, host + size), from_device,
                        str(call,
                            ": bytes the driver wrote at the device pointer (cuMemcpyHtoD), "
                            "read through the host pointer"));

      constexpr unsigned char kFill = 0xA5;
      try {
        memory->memset(kFill);
      } catch (...) {
        run.fail(str("memset of ", call, " (cuMemsetD8) threw ", describe_current_exception()));
      }
      synchronize(run, str("after cuMemsetD8 of ", call));
      expect_same_bytes(run, std::vector<std::byte>(host, host + size),
                        std::vector<std::byte>(size, std::byte{kFill}),
                        str(call,
                            ": bytes the driver set (cuMemsetD8), read through the host "
                            "pointer"));
    }
  }
}

// MANAGED-3: freed exactly once, only after the last reference; reset() releases it; a plugin
// without managed memory declines with NotImplementedError.
EMM_CHECK(MANAGED_3) {
  Context& context = run.host().context();
  if (!run.capabilities().managed_memory) expect_declined(run, context);
  if (!device_has_managed_memory(run)) return;
  Diagnostics::Capture capture;
  const std::optional<std::size_t> invalid_before = run.backend().invalid_frees();

  // Only after the last reference, and then: several release orders, both attach values.
  std::vector<std::size_t> order(kReferenceNames.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 random(3301);
  std::size_t number = 0;
  lifetime(run, context, order, ++number, true);
  std::reverse(order.begin(), order.end());
  lifetime(run, context, order, ++number, false);
  for (int i = 0; i < 4; ++i) {
    std::shuffle(order.begin(), order.end(), random);
    lifetime(run, context, order, ++number, i % 2 == 0);
  }
  run.record("drop_orders", number);

  // Not twice: the driver's count where it keeps one, then the errors a second free raises.
  flush(run, context, "after the drop orders");
  expect_no_invalid_frees(run, invalid_before,
                          "while references to managed memory were dropped: a finalizer freed "
                          "its memory twice");
  expect_no_ignored_exceptions(run, capture, "while references to managed memory were dropped");

  // reset() releases managed memory still referenced; the late releases free nothing twice.
  struct Record {
    std::string call;
    CUdeviceptr pointer;
    bool block_seen;  // the driver showed an allocation at `pointer` before reset()
  };
  std::vector<Record> records;
  std::vector<std::shared_ptr<MemoryPointer>> references;
  for (const bool attach_global : kAttachValues) {
    const std::size_t size = 64 * KiB + 3;
    auto memory = allocate_managed(run, context, size, attach_global, "held across reset()");
    const CUdeviceptr pointer = memory->device_pointer();
    records.push_back(
        {call_text(size, attach_global), pointer, run.backend().driver_block(pointer).has_value()});
    references.push_back(memory->view(1));
    references.push_back(std::move(memory));
  }
  try {
    context.reset();
  } catch (...) {
    run.fail("Context::reset() (which calls the plugin's reset()) threw " +
             describe_current_exception());
  }
  references.clear();
  flush(run, context, "after reset() and releasing every reference");
  for (const Record& record : records) {
    if (!record.block_seen) {
      run.unobservable("whether reset() freed managed memory (no driver allocation was shown)");
    } else if (run.backend().driver_block(record.pointer)) {
      run.fail(str("after reset() and releasing every reference, the driver allocation of ",
                   record.call, " at ", hex(record.pointer),
                   " is still allocated: reset() must release managed memory too"));
    }
  }
  expect_no_invalid_frees(run, invalid_before,
                          "when managed memory was released after reset(): it was freed by "
                          "reset() and again by its finalizer");
  expect_no_ignored_exceptions(run, capture, "when managed memory was released after reset()");
}

}  // namespace emm::conformance::checks
