// IPC — inter-process handles (spec §4, §7): offsets and sizes of exported views — the plugin's
// own views and "foreign" MemoryPointers made over its memory, as Numba makes them — verified end
// to end by another process; base and source_info; pool sub-allocations over several chunks;
// NotImplementedError when IPC is not declared.
#include <algorithm>
#include <cstring>
#include <map>

#include "checks/checks.hpp"
#include "emm/errors.hpp"
#include "emm/ipc_handle.hpp"

namespace emm::conformance::checks {
namespace {

using HandleBytes = std::array<char, sizeof(CUipcMemHandle::reserved)>;

HandleBytes bytes_of(const CUipcMemHandle& handle) {
  HandleBytes bytes{};
  std::memcpy(bytes.data(), handle.reserved, bytes.size());
  return bytes;
}

IpcHandle export_handle(ClauseRun& run, Context& context,
                        const std::shared_ptr<MemoryPointer>& memory, std::string_view what) {
  try {
    return context.get_ipc_handle(memory);
  } catch (const NotImplementedError& error) {
    run.fail(str("get_ipc_handle(", what, ") threw NotImplementedError (", error.what(),
                 ") although the plugin declares ipc=true"));
  } catch (...) {
    run.fail(str("get_ipc_handle(", what, ") threw ", describe_current_exception()));
  }
}

struct Exported {
  std::string what;
  std::shared_ptr<MemoryPointer> view;
  std::vector<std::byte> expected;  // the bytes the exporter wrote in the view
  IpcHandle handle;
};

// Checks every field of `e.handle` against the view, the driver block it lies in and the
// exporting context (spec 2.8, §7).
void expect_handle_fields(ClauseRun& run, Context& context, const Exported& e) {
  const CUdeviceptr pointer = e.view->device_pointer();
  const std::string call = str("get_ipc_handle(", e.what, ")");
  if (e.handle.size() != e.view->size()) {
    run.fail(
        str(call, ".size() is ", e.handle.size(), ", expected the view's size ", e.view->size()));
  }
  const std::optional<AddressRange> block = run.backend().driver_block(pointer);
  if (!block) {
    run.fail(str(e.what, " at ", hex(pointer),
                 " lies in no allocation the driver knows, so no IPC handle can name it"));
  }
  const std::size_t expected = pointer - block->base;
  if (e.handle.offset() != expected) {
    run.fail(str(call, ".offset() is ", e.handle.offset(), ", expected ", expected,
                 " = view pointer ", hex(pointer), " - base ", hex(block->base),
                 " of the block the driver handle refers to (an offset from the memory's owner "
                 "or from a pool's own bookkeeping is wrong for foreign views)"));
  }
  const HandleBytes block_handle = bytes_of(run.driver().ipc_get_mem_handle(block->base));
  if (bytes_of(e.handle.handle()) != block_handle) {
    run.fail(str(call, " carries a 64-byte handle that is not the driver's handle of the block [",
                 hex(block->base), ", ", hex(block->base + block->size),
                 ") the view lies in (a handle cached for another block?)"));
  }
  const std::shared_ptr<MemoryPointer>& base = e.handle.base();
  if (!base) {
    run.fail(str(call,
                 ".base() is null; it must reference the exported memory and keep it "
                 "alive while the handle lives (pass `memory` as the base)"));
  }
  if (base->device_pointer() > pointer ||
      base->device_pointer() + base->size() < pointer + e.view->size()) {
    run.fail(str(call, ".base() covers [", hex(base->device_pointer()), ", ",
                 hex(base->device_pointer() + base->size()),
                 "), which does not hold the exported [", hex(pointer), ", ",
                 hex(pointer + e.view->size()), ")"));
  }
  const std::optional<DeviceIdentity>& source = e.handle.source_info();
  if (!source) {
    run.fail(str(call,
                 ".source_info() is empty; it must be the exporting device's identity "
                 "(the importer needs it to choose between a direct and a staged open)"));
  }
  if (*source != context.device_identity()) {
    const DeviceIdentity& want = context.device_identity();
    run.fail(str(call, ".source_info() is PCI ", source->pci_domain_id, ":", source->pci_bus_id,
                 ":", source->pci_device_id, ", expected the exporting device ", want.pci_domain_id,
                 ":", want.pci_bus_id, ":", want.pci_device_id));
  }
}

// Another process opens every handle and must read exactly the exporter's bytes.
void expect_imported(ClauseRun& run, const std::vector<Exported>& exported) {
  ImportRequest request;
  for (const Exported& e : exported) {
    try {
      ImportItem item;
      item.handle = e.handle.serialize();
      request.items.push_back(std::move(item));
    } catch (...) {
      run.fail(str("serializing the handle of ", e.what, " threw ", describe_current_exception()));
    }
  }
  const std::vector<ImportAnswer> imported = import_elsewhere(run, request);
  for (std::size_t i = 0; i < exported.size(); ++i) {
    const Exported& e = exported[i];
    if (!imported[i].ok) {
      run.fail(str("another process could not open the handle of ", e.what, " (offset ",
                   e.handle.offset(), ", size ", e.handle.size(), "): ", imported[i].error));
    }
    expect_same_bytes(run, imported[i].bytes, e.expected,
                      str("another process opened the handle of ", e.what, " (offset ",
                          e.handle.offset(), ", size ", e.handle.size(),
                          ") and read different bytes than the exporter wrote there"));
  }
}

}  // namespace

// IPC-1: views at offsets 0, 1, 256, 4096+3, one ending early, and a view of a view.
EMM_CHECK(IPC_1) {
  run.require_capability();
  Context& context = run.host().context();
  constexpr std::size_t kSize = 3 * 4096 + 517;
  auto buffer = allocate(run, context, kSize);
  const std::vector<std::byte> bytes = pattern(kSize, 3100);
  write_device(run, buffer->device_pointer(), bytes, "the exported buffer");
  auto slice = [&bytes](std::size_t start, std::size_t stop) {
    return std::vector<std::byte>(bytes.begin() + static_cast<long>(start),
                                  bytes.begin() + static_cast<long>(stop));
  };

  struct ViewSpec {
    std::string what;
    std::shared_ptr<MemoryPointer> view;
    std::size_t start;
    std::size_t stop;
  };
  std::vector<ViewSpec> specs;
  specs.push_back({"the buffer itself", buffer, 0, kSize});
  specs.push_back({"view(0)", buffer->view(0), 0, kSize});
  specs.push_back({"view(1)", buffer->view(1), 1, kSize});
  specs.push_back({"view(256)", buffer->view(256), 256, kSize});
  specs.push_back({"view(4099)", buffer->view(4096 + 3), 4096 + 3, kSize});
  specs.push_back({str("view(8, ", kSize - 100, ") (ends before the buffer's end)"),
                   buffer->view(8, kSize - 100), 8, kSize - 100});
  specs.push_back(
      {"view(256)->view(3) (a view of a view)", buffer->view(256)->view(3), 259, kSize});
  // Numba's "foreign" arrays: a MemoryPointer made outside the plugin over part of its memory,
  // whose owner() is itself, not the allocation (numba#5429, rmm#401).
  auto foreign = std::make_shared<MemoryPointer>(&context, buffer->device_pointer() + 1000, 3000);
  specs.push_back({"a foreign MemoryPointer over [1000, 4000) of the buffer (owner() is itself)",
                   foreign, 1000, 4000});
  specs.push_back({"view(17) of that foreign MemoryPointer", foreign->view(17), 1017, 4000});

  std::vector<Exported> exported;
  for (ViewSpec& spec : specs) {
    IpcHandle handle = export_handle(run, context, spec.view, spec.what);
    exported.push_back({spec.what, spec.view, slice(spec.start, spec.stop), std::move(handle)});
    expect_handle_fields(run, context, exported.back());
  }
  expect_imported(run, exported);
  run.record("views_exported", exported.size());

  // The handle's base keeps the exported memory alive: with every other reference dropped, the
  // allocation is not finalized and another process still reads its bytes.
  constexpr std::size_t kKept = 64 * KiB + 3;
  auto kept = allocate(run, context, kKept, "exported, then held only by its handle");
  const std::vector<std::byte> kept_bytes = pattern(kKept, 3150);
  write_device(run, kept->device_pointer(), kept_bytes, "the memory held only by its handle");
  const std::weak_ptr<MemoryPointer> kept_owner = kept->owner();
  std::vector<Exported> held;
  const std::string what = "a memalloc(65539) whose every other reference was dropped";
  held.push_back({what, nullptr, kept_bytes, export_handle(run, context, kept->view(0), what)});
  {
    Exported probe{what, kept, kept_bytes, export_handle(run, context, kept, what)};
    expect_handle_fields(run, context, probe);
  }
  kept.reset();
  const auto owner = kept_owner.lock();
  if (!owner || (owner->is_managed() && !owner->finalizer_alive())) {
    run.fail(str("get_ipc_handle(", what,
                 ").base() does not keep the exported memory alive: "
                 "with only the handle left, the allocation was finalized"));
  }
  held.back().view = held.back().handle.base();
  expect_imported(run, held);
}

// IPC-2: sub-allocations of one block share its handle with distinct, correct offsets — over
// enough allocations to span at least three of a pool's chunks.
EMM_CHECK(IPC_2) {
  run.require_capability();
  Context& context = run.host().context();
  constexpr std::size_t kMinimum = 16;
  constexpr std::size_t kMaximum = 400;
  constexpr std::size_t kBlocksWanted = 3;
  std::vector<Exported> exported;
  std::map<CUdeviceptr, std::size_t> members_per_block;
  // The blocks holding the allocations of nearly one size (48 KiB) that follow the first
  // kMinimum: a pool keeps one size class in chunks of its own, so these span several chunks of
  // one class (a handle cached per class shows from the second chunk on).
  std::map<CUdeviceptr, std::size_t> same_size_members;
  for (std::size_t i = 0; i < kMaximum; ++i) {
    std::size_t blocks_with_two = 0;
    for (const auto& [base, count] : same_size_members) blocks_with_two += count >= 2;
    if (i >= kMinimum && (blocks_with_two >= kBlocksWanted ||
                          (same_size_members.size() >= kBlocksWanted && blocks_with_two == 0))) {
      break;
    }
    const std::size_t size = i < kMinimum ? 256 * (1 + i % 4) + 24 * i : 48 * KiB + 8 * (i % 7);
    auto memory = allocate(run, context, size);
    std::vector<std::byte> bytes = pattern(size, 3200 + i);
    write_device(run, memory->device_pointer(), bytes, str("allocation #", i + 1));
    const std::string what = str("allocation #", i + 1, " (memalloc(", size, "))");
    IpcHandle handle = export_handle(run, context, memory, what);
    exported.push_back({what, memory, std::move(bytes), std::move(handle)});
    expect_handle_fields(run, context, exported.back());
    if (const auto block = run.backend().driver_block(memory->device_pointer())) {
      ++members_per_block[block->base];
      if (i >= kMinimum) ++same_size_members[block->base];
    }
  }
  run.record("allocations_exported", exported.size());
  run.record("driver_blocks", members_per_block.size());
  run.record("driver_blocks_of_one_size", same_size_members.size());
  std::map<HandleBytes, std::vector<const Exported*>> blocks;
  for (const Exported& e : exported) blocks[bytes_of(e.handle.handle())].push_back(&e);
  std::size_t shared = 0;
  for (const auto& [handle, members] : blocks) {
    if (members.size() < 2) continue;
    ++shared;
    const CUdeviceptr base =
        members.front()->view->device_pointer() - members.front()->handle.offset();
    IntervalSet ranges;
    for (const Exported* e : members) {
      const CUdeviceptr implied = e->view->device_pointer() - e->handle.offset();
      if (implied != base) {
        run.fail(str(members.front()->what, " and ", e->what,
                     " carry the same driver handle but "
                     "imply different block bases (pointer - offset): ",
                     hex(base), " and ", hex(implied),
                     "; offsets must be relative to the block the handle refers to"));
      }
      if (auto other = ranges.insert(e->handle.offset(), e->handle.size(), e->what)) {
        run.fail(str(e->what, " and ", *other,
                     " share a driver handle and their [offset, "
                     "offset + size) ranges overlap"));
      }
    }
  }
  run.record("blocks_shared", shared);
  if (shared == 0)
    run.note("no two allocations shared a driver block (the plugin does not sub-allocate)");
  expect_imported(run, exported);
}

// IPC-7: without declared IPC support get_ipc_handle throws NotImplementedError (not_supported);
// with it, get_ipc_handle works.
EMM_CHECK(IPC_7) {
  Context& context = run.host().context();
  auto memory = allocate(run, context, 4096);
  if (run.capabilities().ipc) {
    IpcHandle handle = export_handle(run, context, memory, "memalloc(4096)");
    run.expect_eq(handle.size(), std::size_t{4096}, "get_ipc_handle(memalloc(4096)).size()");
    run.note("the plugin declares IPC support and get_ipc_handle() works");
    return;
  }
  std::size_t size = 0;
  try {
    IpcHandle handle = context.get_ipc_handle(memory);
    size = handle.size();
  } catch (const NotImplementedError&) {
    run.not_supported(
        "the plugin declares no IPC support and get_ipc_handle() throws "
        "NotImplementedError, as required");
  } catch (...) {
    run.fail(
        "the plugin declares ipc=false, so get_ipc_handle() must throw "
        "emm::NotImplementedError; it threw " +
        describe_current_exception());
  }
  run.fail(
      str("the plugin declares ipc=false, so get_ipc_handle() must throw "
          "emm::NotImplementedError; it returned a handle (size ",
          size, "); declare ipc=true if it works"));
}

}  // namespace emm::conformance::checks
