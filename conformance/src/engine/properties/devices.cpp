// DEV as properties of sequences over two devices: allocations, initialize() and reset() on
// either context, memory info per device, IPC handles of device 1.
#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

// Every DEV property needs two devices; with one, the fixed scenario reports that the backend
// cannot run it.
class TwoDevices : public Property {
 public:
  int devices(int available) const override { return std::min(available, 2); }
  bool prepare(ClauseRun& run) const override {
    return run.clause().applies_to(run.capabilities()) && run.backend().device_count() >= 2;
  }
};

// "device 0's context", "no context" or "a context the host did not make".
std::string describe_context(Session& session, const Context* context) {
  if (context == nullptr) return "no context";
  for (int device = 0; device < session.trace().devices; ++device) {
    if (context == &session.context(device)) return str("device ", device, "'s context");
  }
  return "a context the host did not make";
}

// DEV-1: each context's instance serves its own context: its pointers name it, and
// initialize() or reset() of one context leaves the other context's allocations alive and
// intact.
class InstancePerContext final : public TwoDevices {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 4}, {CommandKind::release, 3}, {CommandKind::initialize, 2},
            {CommandKind::reset, 2},    {CommandKind::verify, 2},  {CommandKind::reference, 1}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (a.model.source != Source::memalloc) return;
    const Context& context = session.context(a.model.device);
    if (a.reported_context != &context) {
      session.fail(str("expected ", a.name, "->context() to be device ", a.model.device,
                       "'s context, whose instance made it; seen: ",
                       describe_context(session, a.reported_context),
                       " (each context has its own plugin instance, which makes pointers for its "
                       "own context)"));
    }
  }
  void initialized(Session& session, const Initialized& seen) const override {
    expect_all_intact(session, str("after initialize() of device ", seen.device, "'s context"),
                      1 - seen.device);
  }
  void was_reset(Session& session, int device, const Snapshot&) const override {
    expect_all_intact(session, str("after reset() of device ", device, "'s context"), 1 - device);
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
};

// DEV-2: memalloc under device d's context returns memory of a driver block that lives on
// device d (where the driver says the block lives, not what the pointer's context says).
class AllocationOnCurrentDevice final : public TwoDevices {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 6}, {CommandKind::release, 3}, {CommandKind::reset, 1}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (a.model.source != Source::memalloc) return;
    const std::optional<int> where = session.backend().block_device(a.device_pointer);
    if (!where) {
      session.fail(str("expected ", a.name, " at ", hex(a.device_pointer),
                       " to lie in a device allocation of device ", a.model.device,
                       "; seen: the driver knows no device allocation holding it"));
    }
    if (*where != a.model.device) {
      session.fail(str("expected memalloc under device ", a.model.device,
                       "'s context to return memory of device ", a.model.device, "; seen: ", a.name,
                       "'s driver block lives on device ", *where));
    }
  }
};

// DEV-3: get_memory_info() under device d's context reports device d: when only allocations
// happened since d's last read, none of them on d, while the plugin took memory of the other
// device, d's free figure stays; and (for a plugin that does not pool) the free figure of a
// device the plugin took memory from drops by at least that much.
class MemoryInfoPerDevice final : public TwoDevices {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 4}, {CommandKind::memory_info, 5}, {CommandKind::release, 2}};
  }
  void memory_info(Session& session, int device, const std::optional<MemoryInfo>& info,
                   const Snapshot&) const override {
    if (!info) session.fail_thrown("get_memory_info() to return figures (memory_info declared)");
    Reads& reads = session.state<Reads>();
    Read& last = reads.by_device[device];
    const std::size_t in_use = session.backend().device_bytes_in_use_on(device);
    const std::size_t other_in_use = session.backend().device_bytes_in_use_on(1 - device);
    const std::size_t slack = session.backend().memory_info_slack();
    if (last.info && last.only_allocations) {
      const std::size_t took = in_use > last.in_use ? in_use - last.in_use : 0;
      const std::size_t other_took =
          other_in_use > last.other_in_use ? other_in_use - last.other_in_use : 0;
      const std::size_t drop = last.info->free > info->free ? last.info->free - info->free : 0;
      if (last.allocations_here == 0 && other_took > slack && drop > slack) {
        session.fail(str("expected device ", device, "'s get_memory_info() to report device ",
                         device, "; seen: its free figure dropped by ", drop,
                         " bytes while the plugin took ", other_took,
                         " bytes of the other device only"));
      }
      if (!session.capabilities().pooling && took > slack && drop + slack < took) {
        session.fail(str("expected device ", device,
                         "'s get_memory_info().free to drop by at "
                         "least the ",
                         took, " bytes the plugin took there; seen: a drop of ", drop));
      }
    }
    last = {info, in_use, other_in_use, true, 0};
  }
  void allocated(Session& session, const Allocation& a) const override {
    ++session.state<Reads>().by_device[a.model.device].allocations_here;
  }
  void released(Session& session, const Allocation&, bool) const override {
    for (auto& [device, read] : session.state<Reads>().by_device) read.only_allocations = false;
  }

 private:
  struct Read {
    std::optional<MemoryInfo> info;
    std::size_t in_use = 0;
    std::size_t other_in_use = 0;
    bool only_allocations = true;
    int allocations_here = 0;  // made on this device since its last read
  };
  struct Reads {
    std::map<int, Read> by_device;
  };
};

// DEV-4: a handle exported under device 1's context carries device 1's source_info and its
// block's offset, and another process reads exactly the exported bytes.
class StagedIpcAcrossDevices final : public TwoDevices {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::memalloc, 4},
            {CommandKind::reference, 2},
            {CommandKind::export_ipc, 4},
            {CommandKind::release, 2}};
  }
  void exported(Session& session, const Exported& e) const override {
    const Allocation& a = e.allocation;
    const std::shared_ptr<MemoryPointer>& pointer = e.pointer;
    const IpcHandle* handle = e.handle;
    const std::string& name = e.name;
    if (handle == nullptr)
      session.fail_thrown(str("get_ipc_handle(", name, ") to return a handle"));
    const DeviceIdentity identity = session.context(a.model.device).device_identity();
    if (!handle->source_info() || !(*handle->source_info() == identity)) {
      session.fail(str("expected get_ipc_handle(", name, ").source_info() to be device ",
                       a.model.device, "'s identity ", describe(identity),
                       "; seen: ", describe(handle->source_info()),
                       " (the exporting context's device, not another's)"));
    }
    const std::optional<AddressRange> block =
        session.backend().driver_block(pointer->device_pointer());
    if (block && handle->offset() != pointer->device_pointer() - block->base) {
      session.fail(str("expected get_ipc_handle(", name, ").offset() to be ",
                       pointer->device_pointer() - block->base, "; seen: ", handle->offset()));
    }
    if (!e.imported) {
      session.fail(str("expected another process to open the handle of ", name,
                       " on its source device and read it; seen: ", e.import_error));
    }
    const std::string wrong =
        compare_imported(a, e.reference.offset, e.reference.size, *e.imported);
    if (!wrong.empty()) {
      session.fail(str("expected another process to read through the handle of ", name,
                       " exactly the bytes of the view; seen: ", wrong));
    }
  }
};

}  // namespace

const Property& dev_1() { return the<InstancePerContext>(); }
const Property& dev_2() { return the<AllocationOnCurrentDevice>(); }
const Property& dev_3() { return the<MemoryInfoPerDevice>(); }
const Property& dev_4() { return the<StagedIpcAcrossDevices>(); }

}  // namespace emm::conformance::engine::properties
