// IPC as properties of sequences: handles of allocations and of views at any offset, exported
// before and after an address is reused, opened in another process.
#include <cstring>

#include "emm/errors.hpp"
#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

std::string handle_call(const std::string& name) { return str("get_ipc_handle(", name, ")"); }

using HandleBytes = std::array<char, sizeof(CUipcMemHandle::reserved)>;
HandleBytes bytes_of(const CUipcMemHandle& handle) {
  HandleBytes bytes{};
  std::memcpy(bytes.data(), handle.reserved, bytes.size());
  return bytes;
}

// Every field of the handle against the view, the driver block it lies in and the exporting
// context; then what the other process read.
void expect_handle(Session& session, const Exported& e) {
  const Allocation& a = e.allocation;
  const std::shared_ptr<MemoryPointer>& pointer = e.pointer;
  const IpcHandle* handle = e.handle;
  const std::string& name = e.name;
  const std::string call = handle_call(name);
  if (handle == nullptr) {
    session.fail_thrown(str(call, " to return a handle (the plugin declares ipc)"));
  }
  const CUdeviceptr view = pointer->device_pointer();
  if (handle->size() != pointer->size()) {
    session.fail(str("expected ", call, ".size() to be the view's size ", pointer->size(),
                     "; seen: ", handle->size()));
  }
  const std::optional<AddressRange> block = session.backend().driver_block(view);
  if (!block) {
    session.fail(str("expected ", name, " at ", hex(view),
                     " to lie in an allocation the driver knows; seen: none holds it"));
  }
  if (handle->offset() != view - block->base) {
    session.fail(str("expected ", call, ".offset() to be ", view - block->base, " = view pointer ",
                     hex(view), " - base ", hex(block->base),
                     " of the block the driver handle refers to; seen: ", handle->offset(),
                     " (take the offset from the driver block: an offset from the memory's owner()"
                     " or from a pool's own bookkeeping is wrong for foreign views)"));
  }
  if (bytes_of(handle->handle()) != bytes_of(session.driver().ipc_get_mem_handle(block->base))) {
    session.fail(str("expected ", call, " to carry the driver's handle of the block [",
                     hex(block->base), ", ", hex(block->base + block->size),
                     ") holding the view; seen: other bytes (a handle cached for another block, "
                     "or for the address before it was reused?)"));
  }
  const std::shared_ptr<MemoryPointer>& base = handle->base();
  if (!base || base->device_pointer() > view ||
      base->device_pointer() + base->size() < view + pointer->size()) {
    session.fail(str("expected ", call, ".base() to reference the exported memory; seen: ",
                     base ? "memory not holding the view" : "null",
                     " (pass `memory` as the base: it keeps the memory alive while the handle "
                     "lives)"));
  }
  const DeviceIdentity identity = session.context(a.model.device).device_identity();
  if (!handle->source_info() || !(*handle->source_info() == identity)) {
    session.fail(str("expected ", call, ".source_info() to be device ", a.model.device,
                     "'s identity ", describe(identity),
                     "; seen: ", describe(handle->source_info()),
                     " (the importer needs it to choose between a direct and a staged open)"));
  }
  if (!e.imported) {
    session.fail(str("expected another process to open ", call,
                     " and read the view; seen: ", e.import_error));
  }
  const std::string wrong = compare_imported(a, e.reference.offset, e.reference.size, *e.imported);
  if (!wrong.empty()) {
    session.fail(str("expected another process to read through ", call,
                     " exactly the bytes of the view; seen: ", wrong));
  }
}

// IPC-1: get_ipc_handle(view) for views at any offset, of allocations of any size, exported
// before and after their address is reused: size, offset from the driver block, the block's
// driver handle, base, source_info, and another process reads exactly the view's bytes.
class OffsetsEndToEnd final : public Property {
 public:
  bool foreign_exports() const override { return true; }
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 4},
            {CommandKind::reference, 3},
            {CommandKind::export_ipc, 4},
            {CommandKind::release, 3}};
  }
  void exported(Session& session, const Exported& e) const override { expect_handle(session, e); }
};

// IPC-2: handles of allocations that share a driver block carry that block's handle and offsets
// that differ as the pointers do.
class PoolSubAllocations final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 5},
            {CommandKind::export_ipc, 4},
            {CommandKind::release, 2},
            {CommandKind::reference, 1}};
  }
  void exported(Session& session, const Exported& e) const override {
    expect_handle(session, e);
    const std::string& name = e.name;
    const IpcHandle* handle = e.handle;
    Exports& exports = session.state<Exports>();
    const CUdeviceptr view = e.pointer->device_pointer();
    for (const Export& earlier : exports.made) {
      const Allocation& other = session.allocation(earlier.allocation);
      if (!live(other) || earlier.pointer == view) continue;
      if (bytes_of(handle->handle()) == earlier.handle &&
          handle->offset() - earlier.offset != view - earlier.pointer) {
        session.fail(
            str("expected handles of one driver block to differ in offset as their "
                "pointers do; seen: ",
                handle_call(name), " offset ", handle->offset(), " and ", handle_call(earlier.name),
                " offset ", earlier.offset, " for pointers ", hex(view), " and ",
                hex(earlier.pointer)));
      }
    }
    exports.made.push_back(
        {e.allocation.model.id, name, view, handle->offset(), bytes_of(handle->handle())});
  }

 private:
  struct Export {
    int allocation;
    std::string name;
    CUdeviceptr pointer;
    std::size_t offset;
    HandleBytes handle;
  };
  struct Exports {
    std::vector<Export> made;
  };
};

// IPC-7: a plugin that declares no IPC support throws emm::NotImplementedError from
// get_ipc_handle(), for whatever it is asked to export.
class UndeclaredIpcThrows final : public Property {
 public:
  bool prepare(ClauseRun& run) const override { return !run.capabilities().ipc; }
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 3},
            {CommandKind::export_ipc, 3},
            {CommandKind::reference, 1},
            {CommandKind::release, 2}};
  }
  void exported(Session& session, const Exported& e) const override {
    if (const IpcHandle* handle = e.handle) {
      session.fail(
          str("expected get_ipc_handle() to throw emm::NotImplementedError (the plugin "
              "declares ipc=false); seen: it returned a handle of size ",
              handle->size(), " (declare ipc=true if it works)"));
    }
    try {
      throw;
    } catch (const NotImplementedError&) {
    } catch (...) {
      session.fail_thrown("get_ipc_handle() to throw emm::NotImplementedError (ipc=false)");
    }
  }
};

}  // namespace

const Property& ipc_1() { return the<OffsetsEndToEnd>(); }
const Property& ipc_2() { return the<PoolSubAllocations>(); }
const Property& ipc_7() { return the<UndeclaredIpcThrows>(); }

}  // namespace emm::conformance::engine::properties
