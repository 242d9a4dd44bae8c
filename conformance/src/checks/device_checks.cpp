// DEV — several devices (spec 2.5, 2.8; docs/differences.md "Several devices"): one plugin
// instance per context, each allocation on the current context's device, memory info per device,
// IPC between devices staged through the importing context's plugin. Every check needs two
// devices; with one, the backend cannot run it (not_supported, with the note
// "<ID>: needs two devices; 1 present").
//
// Where memory lives is asked of the backend (Backend::block_device: the driver's record of the
// block), never read from the MemoryPointer's context, which is the plugin's own word.
#include <array>
#include <utility>

#include "checks/checks.hpp"
#include "emm/errors.hpp"
#include "emm/ipc_handle.hpp"

namespace emm::conformance::checks {
namespace {

// The devices the clause needs (the catalogue's trait devices=N: two for every DEV clause).
void require_devices(ClauseRun& run) {
  const int count = run.backend().device_count();
  const int needed = run.clause().devices;
  if (count < needed) {
    run.backend_cannot_run(needed == 2 ? str("needs two devices; ", count, " present")
                                       : str("needs ", needed, " devices; ", count, " present"),
                           needed == 2 ? str("a second device (", count, " present)")
                                       : str(needed, " devices (", count, " present)"));
  }
  run.record("devices", static_cast<std::size_t>(count));
}

// The run's context of `device`, created (plugin constructed, initialize() with that context
// current) on first use and made current every time.
Context& context_on(ClauseRun& run, int device) {
  Runtime& runtime = run.host().runtime();
  if (Context* existing = runtime.find_context(device)) {
    existing->make_current();
    return *existing;
  }
  try {
    return runtime.get_context(device);
  } catch (...) {
    run.fail(str("creating the device-", device,
                 " context (which constructs a plugin instance for it, then calls its "
                 "initialize()) failed: ",
                 describe_current_exception()));
  }
}

// Fails unless the driver block holding [pointer, pointer + size) lives on `device`.
void expect_on_device(ClauseRun& run, const MemoryPointer& memory, int device,
                      std::string_view what) {
  const CUdeviceptr pointer = memory.device_pointer();
  const std::optional<int> holder = run.backend().block_device(pointer);
  if (!holder) {
    run.fail(str(what, " at ", hex(pointer),
                 " lies in no device allocation the driver knows (freed, or not device memory)"));
  }
  if (*holder != device) {
    run.fail(str(what, " returned ", hex(pointer), ", which lies in a driver block on device ",
                 *holder, "; expected device ", device,
                 ", the device of the context that was current: memalloc must allocate in the "
                 "current context (CUDA's cuMemAlloc does), not in device 0's or in a pool made "
                 "for another device"));
  }
  if (memory.size() > 1) {
    const std::optional<int> last = run.backend().block_device(pointer + memory.size() - 1);
    if (last != holder) {
      run.fail(str(what, " returned [", hex(pointer), ", ", hex(pointer + memory.size()),
                   "), whose last byte does not lie in the same device-", device,
                   " allocation as its first"));
    }
  }
}

std::string describe(const MemoryInfo& info) {
  return str("{free=", info.free, ", total=", info.total, "}");
}

MemoryInfo info_on(ClauseRun& run, Context& context, std::string_view when) {
  context.make_current();
  try {
    return context.get_memory_info();
  } catch (...) {
    run.fail(str("get_memory_info() under device ", context.device(), "'s context ", when,
                 " threw ", describe_current_exception()));
  }
}

struct Held {
  std::string what;
  std::shared_ptr<MemoryPointer> memory;
  std::uint64_t seed;
};

// Fails unless every held allocation still lies in a live driver block and holds its pattern.
void expect_intact(ClauseRun& run, Context& owner, const std::vector<Held>& held,
                   std::string_view after) {
  owner.make_current();
  for (const Held& h : held) {
    const CUdeviceptr pointer = h.memory->device_pointer();
    if (!run.backend().driver_block(pointer)) {
      run.fail(str(after, ", ", h.what, " at ", hex(pointer),
                   " is no longer allocated although its pointer is alive: a plugin instance "
                   "released memory of another context (each context has its own instance, and "
                   "reset() releases only what that instance allocated)"));
    }
    expect_pattern(run, pointer, h.memory->size(), h.seed,
                   str(h.what, " (", after, "; another context's instance must not touch it)"));
  }
}

}  // namespace

// DEV-1: each context's instance serves only its context. Pointers name the context they were
// allocated in; initialize() and reset() of one context leave the other's memory live and
// unchanged, and both instances keep working.
EMM_CHECK(DEV_1) {
  require_devices(run);
  Context& zero = context_on(run, 0);
  Context& one = context_on(run, 1);
  if (&zero.memory_manager() == &one.memory_manager()) {
    run.fail(
        "the contexts of devices 0 and 1 share one plugin instance (the host must build one "
        "per context)");
  }
  std::array<std::vector<Held>, 2> held;
  const std::array<Context*, 2> contexts{&zero, &one};
  // Device 1 first: an instance that lazily builds shared state must not build it for both.
  for (const int device : {1, 0}) {
    Context& context = *contexts[static_cast<std::size_t>(device)];
    std::uint64_t seed = 5100 + 10 * static_cast<std::uint64_t>(device);
    for (const std::size_t size : {std::size_t{256}, 64 * KiB + 3, 2 * MiB}) {
      const std::string what = str("memalloc(", size, ") under device ", device, "'s context");
      context.make_current();
      auto memory = allocate(run, context, size, what);
      if (memory->context() != &context) {
        const Context* named = memory->context();
        run.fail(str(
            what, " returned a MemoryPointer whose context() is ",
            named == nullptr ? std::string("null") : str("device ", named->device(), "'s context"),
            "; each context has its own plugin instance, which makes pointers for its "
            "own context"));
      }
      write_pattern(run, memory->device_pointer(), size, ++seed, what);
      held[static_cast<std::size_t>(device)].push_back({what, std::move(memory), seed});
    }
  }

  // initialize() is called for every activation of a context (NBEP 7); for device 0's it
  // concerns device 0's instance only.
  for (int i = 0; i < 3; ++i) zero.prepare_for_use();
  expect_intact(run, one, held[1], "after initialize() of device 0's context");
  expect_intact(run, zero, held[0], "after initialize() of device 0's context");

  // reset() of one context releases that instance's memory only.
  held[0].clear();
  zero.reset();
  expect_intact(run, one, held[1], "after reset() of device 0's context");
  auto again = allocate(run, one, 4096,
                        "memalloc(4096) under device 1's context after reset() "
                        "of device 0's");
  expect_read_write(run, again->device_pointer(), again->size(), 5190, "that allocation");
  auto renewed = allocate(run, zero, 8192,
                          "memalloc(8192) under device 0's context after its "
                          "reset()");
  write_pattern(run, renewed->device_pointer(), renewed->size(), 5191, "that allocation");
  held[0].push_back({"memalloc(8192) under device 0's context after its reset()", renewed, 5191});

  held[1].clear();
  again.reset();
  one.reset();
  expect_intact(run, zero, held[0], "after reset() of device 1's context");
}

// DEV-2: memalloc allocates on the current context's device — for each device, whichever was
// used first, and when the contexts take turns.
EMM_CHECK(DEV_2) {
  require_devices(run);
  // Device 1's context is made first, so that a plugin that sets itself up for "the" device at
  // its first initialize() shows it at once.
  Context& one = context_on(run, 1);
  Context& zero = context_on(run, 0);
  const std::array<Context*, 2> contexts{&zero, &one};
  std::vector<std::shared_ptr<MemoryPointer>> held;
  std::size_t checked = 0;
  for (const std::size_t size : {std::size_t{1}, std::size_t{4096}, MiB + 3, 64 * MiB}) {
    for (const int device : {1, 0}) {
      Context& context = *contexts[static_cast<std::size_t>(device)];
      const std::string what = str("memalloc(", size, ") under device ", device, "'s context");
      context.make_current();
      auto memory = allocate(run, context, size, what);
      expect_on_device(run, *memory, device, what);
      expect_read_write(run, memory->device_pointer(), size, 5200 + checked, what);
      held.push_back(std::move(memory));
      ++checked;
    }
  }
  // Release half and allocate again, taking turns: a freed block of one device must not serve
  // a request of the other.
  for (std::size_t i = 0; i < held.size(); i += 2) held[i].reset();
  for (int round = 0; round < 8; ++round) {
    const int device = round % 2;
    Context& context = *contexts[static_cast<std::size_t>(device)];
    const std::size_t size = round < 4 ? 4096 : MiB + 3;
    const std::string what =
        str("memalloc(", size, ") under device ", device, "'s context (after releases)");
    context.make_current();
    auto memory = allocate(run, context, size, what);
    expect_on_device(run, *memory, device, what);
    held.push_back(std::move(memory));
    ++checked;
  }
  run.record("allocations_checked", checked);
}

// DEV-3: get_memory_info() under a device's context reports that device: a block allocated on
// one device lowers that device's free figure and not the other's.
EMM_CHECK(DEV_3) {
  run.require_capability();
  require_devices(run);
  Context& zero = context_on(run, 0);
  Context& one = context_on(run, 1);
  const std::array<Context*, 2> contexts{&zero, &one};
  const std::size_t slack = run.backend().memory_info_slack();
  // Larger than any pool chunk: memory the plugin must take from the driver (as INFO-1).
  constexpr std::size_t kLarge = 256 * MiB;
  for (const int device : {1, 0}) {
    const int other = 1 - device;
    Context& mine = *contexts[static_cast<std::size_t>(device)];
    Context& theirs = *contexts[static_cast<std::size_t>(other)];
    const MemoryInfo mine_before = info_on(run, mine, "before the allocation");
    const MemoryInfo theirs_before = info_on(run, theirs, "before the allocation");
    const std::string what = str("memalloc(", kLarge, ") under device ", device, "'s context");
    mine.make_current();
    auto memory = allocate(run, mine, kLarge, what);
    const MemoryInfo mine_after = info_on(run, mine, str("after ", what));
    const MemoryInfo theirs_after = info_on(run, theirs, str("after ", what));
    const std::size_t drop =
        mine_before.free > mine_after.free ? mine_before.free - mine_after.free : 0;
    if (drop + slack < kLarge) {
      run.fail(str("get_memory_info() under device ", device, "'s context went from ",
                   describe(mine_before), " to ", describe(mine_after), " after ", what,
                   " (free dropped by ", drop, "); expected a drop of at least ", kLarge,
                   ": the figures must be those of the context's own device, not device ", other,
                   "'s"));
    }
    const std::size_t their_drop =
        theirs_before.free > theirs_after.free ? theirs_before.free - theirs_after.free : 0;
    if (their_drop + slack >= kLarge) {
      run.fail(str("get_memory_info() under device ", other, "'s context went from ",
                   describe(theirs_before), " to ", describe(theirs_after), " after ", what,
                   ": device ", other, "'s figures must not count device ", device, "'s memory"));
    }
  }
}

// DEV-4: a handle exported under device 1's context names device 1 (source_info and block);
// another process reads its bytes when it opens it on device 1 (direct) and on device 0
// (staged: the copy is allocated through the importing context's plugin, spec 2.8).
EMM_CHECK(DEV_4) {
  run.require_capability();
  require_devices(run);
  context_on(run, 0);
  Context& one = context_on(run, 1);
  constexpr std::size_t kSize = 64 * KiB + 7;
  constexpr std::size_t kOffset = 4096 + 3;
  auto buffer = allocate(run, one, kSize, "memalloc(65543) under device 1's context");
  expect_on_device(run, *buffer, 1, "memalloc(65543) under device 1's context");
  const std::vector<std::byte> bytes = pattern(kSize, 5400);
  write_device(run, buffer->device_pointer(), bytes, "the exported buffer");
  auto view = buffer->view(kOffset);
  const std::vector<std::byte> expected(bytes.begin() + static_cast<long>(kOffset), bytes.end());

  IpcHandle handle = [&] {
    try {
      return one.get_ipc_handle(view);
    } catch (...) {
      run.fail(str("get_ipc_handle(view(", kOffset, ")) under device 1's context threw ",
                   describe_current_exception()));
    }
  }();
  const DeviceIdentity device_1 = run.driver().device_identity(1);
  if (handle.source_info() != device_1) {
    const std::optional<DeviceIdentity>& seen = handle.source_info();
    run.fail(
        str("get_ipc_handle(view(", kOffset, ")) under device 1's context carries source_info ",
            seen ? str("PCI ", seen->pci_domain_id, ":", seen->pci_bus_id, ":", seen->pci_device_id)
                 : std::string("(none)"),
            "; expected device 1's identity PCI ", device_1.pci_domain_id, ":", device_1.pci_bus_id,
            ":", device_1.pci_device_id, " (the exporting context's device, not device 0's)"));
  }
  const std::optional<AddressRange> block = run.backend().driver_block(view->device_pointer());
  if (!block || handle.offset() != view->device_pointer() - block->base) {
    run.fail(str("get_ipc_handle(view(", kOffset, ")) under device 1's context has offset ",
                 handle.offset(), "; expected the view's offset in its device-1 driver block"));
  }

  ImportRequest request;
  for (const ImportContext where : {ImportContext::source_device, ImportContext::device_0}) {
    ImportItem item;
    item.handle = handle.serialize();
    item.context = where;
    request.items.push_back(std::move(item));
  }
  ImportResponse response;
  try {
    std::optional<ImportResponse> through_plugin =
        run.backend().import_through_plugin(request, run.subject().factory);
    if (through_plugin) {
      response = std::move(*through_plugin);
    } else {
      // Not observable here (the backend noted it): the default manager imports instead.
      response = run.backend().import_elsewhere(request);
    }
  } catch (...) {
    run.fail(
        str("the importing process could not open the handle: ", describe_current_exception()));
  }
  if (!response.error.empty() || response.answers.size() != request.items.size()) {
    run.fail("the importing process refused the request: " + response.error);
  }
  const std::array<std::string_view, 2> how{
      "opened on device 1, the source device (direct)",
      "opened on device 0 (staged without peer access: copied into memory from the importing "
      "context's plugin)"};
  for (std::size_t i = 0; i < how.size(); ++i) {
    if (!response.answers[i].ok) {
      run.fail(str("another process could not read the handle of view(", kOffset,
                   ") exported under device 1's context when ", how[i], ": ",
                   response.answers[i].error));
    }
    expect_same_bytes(run, response.answers[i].bytes, expected,
                      str("another process read the handle of view(", kOffset,
                          ") exported under device 1's context ", how[i]));
  }
}

}  // namespace emm::conformance::checks
