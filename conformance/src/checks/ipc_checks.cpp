// IPC — inter-process handles (spec §4): offsets and sizes of exported views, verified end to
// end by another process; pool sub-allocations; NotImplementedError when IPC is not declared.
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

// Checks size and offset of `handle` against the view and the driver block it lies in.
void expect_handle_fields(ClauseRun& run, const Exported& e) {
  const CUdeviceptr pointer = e.view->device_pointer();
  if (e.handle.size() != e.view->size()) {
    run.fail(str("get_ipc_handle(", e.what, ").size() is ", e.handle.size(),
                 ", expected the view's size ", e.view->size()));
  }
  if (const std::optional<AddressRange> block = run.backend().driver_block(pointer)) {
    const std::size_t expected = pointer - block->base;
    if (e.handle.offset() != expected) {
      run.fail(str("get_ipc_handle(", e.what, ").offset() is ", e.handle.offset(), ", expected ",
                   expected, " = view pointer ", hex(pointer), " - base ", hex(block->base),
                   " of the block the driver handle refers to"));
    }
    const HandleBytes block_handle = bytes_of(run.driver().ipc_get_mem_handle(block->base));
    if (bytes_of(e.handle.handle()) != block_handle) {
      run.fail(str("get_ipc_handle(", e.what,
                   ") carries a 64-byte handle that is not the "
                   "driver's handle of the block [",
                   hex(block->base), ", ", hex(block->base + block->size), ") the view lies in"));
    }
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

  std::vector<Exported> exported;
  for (ViewSpec& spec : specs) {
    IpcHandle handle = export_handle(run, context, spec.view, spec.what);
    exported.push_back({spec.what, spec.view, slice(spec.start, spec.stop), std::move(handle)});
    expect_handle_fields(run, exported.back());
  }
  expect_imported(run, exported);
  run.record("views_exported", exported.size());
}

// IPC-2: sub-allocations of one block share its handle with distinct, correct offsets.
EMM_CHECK(IPC_2) {
  run.require_capability();
  Context& context = run.host().context();
  std::vector<Exported> exported;
  for (std::size_t i = 0; i < 16; ++i) {
    const std::size_t size = 256 * (1 + i % 4) + 24 * i;
    auto memory = allocate(run, context, size);
    std::vector<std::byte> bytes = pattern(size, 3200 + i);
    write_device(run, memory->device_pointer(), bytes, str("allocation #", i + 1));
    const std::string what = str("allocation #", i + 1, " (memalloc(", size, "))");
    IpcHandle handle = export_handle(run, context, memory, what);
    exported.push_back({what, memory, std::move(bytes), std::move(handle)});
    expect_handle_fields(run, exported.back());
  }
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
