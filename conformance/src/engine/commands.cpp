#include "engine/commands.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "core/host_only_base.hpp"
#include "emm/conformance/backend_descriptor.hpp"
#include "emm/errors.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/managed_memory.hpp"
#include "emm/mapped_memory.hpp"

namespace emm::conformance::engine {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
// The largest size an ordinary allocation command asks for: "several MiB" (spec §8).
constexpr std::size_t kLargestAllocation = 8 * MiB;

// A command's precondition: a sequence where it does not hold is regenerated (RapidCheck's
// RC_PRE, without its printing of the expression, which fails on a null pointer).
void require(bool holds) {
  if (!holds) RC_DISCARD("precondition");
}

// An integer in [min, max) drawn uniformly whatever the generation size: RapidCheck's inRange
// narrows the range at small sizes, which would keep the later commands of a mix, the second
// device and the larger sizes out of short sequences. Shrinks towards min.
template <class T>
rc::Gen<T> uniform(T min, T max) {
  return rc::gen::resize(100, rc::gen::inRange<T>(min, max));
}

// The names a reproducer gives device d's context: a call `context()` / `context(1)` in C++,
// `ctx` / `ctx1` in Python (the prologue defines them).
std::string cpp_context(int device) { return device == 0 ? "context()" : "context(1)"; }
std::string py_context(int device) { return device == 0 ? "ctx" : "ctx1"; }
const char* py_bool(bool value) { return value ? "True" : "False"; }
const char* cpp_bool(bool value) { return value ? "true" : "false"; }

// Every command: records the step for Property::step around what it does.
class EngineCommand : public Command {
 public:
  void run(const Model& s0, Session& session) const final {
    const StepInfo info{kind(), session.snapshot(), s0.guards.size()};
    execute(s0, session);
    session.property().step(session, info);
  }
  virtual CommandKind kind() const = 0;

 protected:
  virtual void execute(const Model& s0, Session& session) const = 0;
};

// The allocation a memalloc-like command is about to add (the id apply() will give it).
ModelAllocation next_allocation(const Model& model, Source source, int device, std::size_t size) {
  ModelAllocation made;
  made.id = model.next_allocation;
  made.source = source;
  made.device = device;
  made.size = size;
  return made;
}

// Fills in what the returned device pointer says of itself; fails on a null result, which no
// sequence can continue from.
Allocation device_record(Session& session, const ModelAllocation& made,
                         const std::shared_ptr<MemoryPointer>& pointer) {
  Allocation record;
  record.model = made;
  record.name = allocation_name(made);
  if (!pointer) {
    session.fail(str(to_string(made.source), "(", made.size,
                     ") returned a null std::shared_ptr; expected a MemoryPointer of ", made.size,
                     " bytes"));
  }
  record.device_pointer = pointer->device_pointer();
  record.reported_size = pointer->size();
  record.reported_context = pointer->context();
  record.refct = pointer->refct();
  try {
    record.base = pointer->owner();
  } catch (...) {
    session.fail_thrown(str(record.name, "->owner() to return the allocation"));
  }
  if (record.device_pointer == 0) {
    session.fail(str(to_string(made.source), "(", made.size,
                     ") returned a MemoryPointer whose device pointer is 0"));
  }
  record.block = session.backend().driver_block(record.device_pointer);
  return record;
}

// --- allocation commands ---------------------------------------------------------------------

// A size for a new allocation: often one asked for lately (a cache's or a size class's next
// customer), else a fresh one.
std::size_t next_size(const Model& model, std::size_t largest, bool now_and_then_larger = false) {
  enum class From { fresh, again, near };
  const From from = model.recent_sizes.empty()
                        ? From::fresh
                        : *rc::gen::weightedOneOf<From>({{6, rc::gen::just(From::fresh)},
                                                         {2, rc::gen::just(From::again)},
                                                         {2, rc::gen::just(From::near)}});
  if (from != From::fresh) {
    std::size_t size = *rc::gen::elementOf(model.recent_sizes);
    if (from == From::near) {
      // A neighbour: half to twice it, so that best-fit and size-class paths meet blocks of
      // other sizes.
      const std::size_t eighths =
          *rc::gen::elementOf(std::vector<std::size_t>{4, 5, 6, 7, 9, 10, 12, 16});
      size = std::max<std::size_t>(size * eighths / 8, 1);
    }
    if (size <= largest) return size;
  }
  return *allocation_sizes(largest, now_and_then_larger);
}

// The host's flush point on `context`: the HostOnly queue's deferred frees run now (a plugin not
// derived from HostOnlyCUDAMemoryManager has no such queue: nothing to do). `shown`: as a call
// of the reproducer.
void flush_point(Session& session, Context& context, bool shown = true) {
  const std::optional<HostOnlyBase> host_only = HostOnlyBase::of(context.memory_manager());
  if (!host_only) return;
  if (shown) {
    session.begin_call(
        {"dynamic_cast<emm::HostOnlyCUDAMemoryManager&>(context().memory_manager())"
         ".deallocations().clear();  // the host's flush point",
         "ctx.memory_manager.deallocations.clear()  # the host's flush point"});
  }
  try {
    host_only->flush();
  } catch (...) {
    session.fail_thrown("the deferred frees to run");
  }
}

// In a fill's catch handler, for a request that neither succeeded nor reported out of memory:
// the fill's blocks go, and the property judges what was thrown.
template <typename Blocks>
void report_thrown(Session& session, OutOfMemory& report, std::size_t request, Blocks& blocks) {
  report.request = request;
  report.other = "it threw " + describe_current_exception();
  blocks.clear();
  report.after = session.snapshot();
  session.property().out_of_memory(session, report);
}

// context.reset() as a call of the reproducer, `why` its comment; a throw fails the property,
// which expected `expected`.
void shown_reset(Session& session, Context& context, std::string_view why,
                 std::string_view expected) {
  session.begin_call({str("context().reset();  // ", why), str("ctx.reset()  # ", why)});
  try {
    context.reset();
  } catch (...) {
    session.fail_thrown(expected);
  }
}

// After a command that may leave the plugin holding all of a memory (a fill): reset() gives it
// back, so that the commands after it start from what reset() leaves.
void reset_after_fill(Session& session, Context& context) {
  shown_reset(session, context, "gives back what the fill left the plugin holding",
              "reset() to return (the plugin's reset() releases what it holds)");
  session.note_lifecycle(0, "reset()");
}

class Memalloc final : public EngineCommand {
 public:
  Memalloc(const Model& model, const Plan&)
      : device_(*uniform(0, model.devices)), size_(next_size(model, kLargestAllocation, true)) {}

  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void apply(Model& model) const override {
    model.add_allocation(next_allocation(model, Source::memalloc, device_, size_));
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << "memalloc(" << size_ << ") on " << device_; }

 protected:
  CommandKind kind() const override { return CommandKind::memalloc; }
  void execute(const Model& s0, Session& session) const override {
    const ModelAllocation made = next_allocation(s0, Source::memalloc, device_, size_);
    const std::string name = allocation_name(made);
    session.begin_call({str("auto ", name, " = ", cpp_context(device_), ".memalloc(", size_, ");"),
                        str(name, " = ", py_context(device_), ".memalloc(", size_, ")")});
    Context& context = session.context(device_);
    std::shared_ptr<MemoryPointer> pointer;
    try {
      pointer = context.memalloc(size_);
    } catch (...) {
      session.fail_thrown(str("memalloc(", size_, ")", session.after_lifecycle(device_),
                              " to return a MemoryPointer of ", size_, " bytes"));
    }
    Allocation& allocation = session.record(device_record(session, made, pointer));
    session.references().push_back({pointer, {}, made.id, name});
    session.write_pattern(allocation);
    session.property().allocated(session, allocation);
  }

 private:
  int device_;
  std::size_t size_;
};

// k allocations of one size back to back, then all of them released, first to last, last to
// first, or every other one first: the paths a cache or a size class takes at its thresholds
// (the 9th block of a bin, the block that starts a new chunk) without a sequence of 2k calls.
class Burst final : public EngineCommand {
 public:
  enum class Order { first_to_last, last_to_first, alternate };

  Burst(const Model& model, const Plan&)
      : device_(*uniform(0, model.devices)),
        // Now and then hundreds or thousands of one size: the block at a slab's or chunk's end.
        count_(*rc::gen::weightedOneOf<int>(
            {{6, uniform(2, 25)}, {1, uniform(100, 400)}, {1, uniform(1000, 2100)}})),
        order_(*rc::gen::element(Order::first_to_last, Order::last_to_first, Order::alternate)) {
    // All of them together take at most a quarter of the device.
    const std::size_t largest = std::min(
        kLargestAllocation / 4, std::max<std::size_t>(model.device_capacity / 4 / count_, 1));
    size_ = next_size(model, largest);
  }

  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void apply(Model& model) const override {
    model.next_allocation += count_;
    model.asked_for(size_);
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << count_ << " x memalloc(" << size_ << ")"; }
  CommandKind kind() const override { return CommandKind::burst; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const int first = s0.next_allocation;
    const char* order = order_ == Order::first_to_last   ? "first to last"
                        : order_ == Order::last_to_first ? "last to first"
                                                         : "every other one first";
    session.begin_call(
        {str("std::vector<std::shared_ptr<emm::MemoryPointer>> burst;  // m", first, " .. m",
             first + count_ - 1, "\nfor (int i = 0; i < ", count_, "; ++i) burst.push_back(",
             cpp_context(device_), ".memalloc(", size_, "));\n", release_code(), "  // ", order),
         str("burst = [", py_context(device_), ".memalloc(", size_, ") for _ in range(", count_,
             ")]  # m", first, " .. m", first + count_ - 1, "\n", release_python(), "  # ",
             order)});
    Context& context = session.context(device_);
    std::vector<std::pair<int, std::shared_ptr<MemoryPointer>>> made;
    for (int i = 0; i < count_; ++i) {
      ModelAllocation model = next_allocation(s0, Source::memalloc, device_, size_);
      model.id = first + i;
      std::shared_ptr<MemoryPointer> pointer;
      try {
        pointer = context.memalloc(size_);
      } catch (...) {
        session.fail_thrown(str("memalloc(", size_, ") number ", i + 1, " of ", count_,
                                session.after_lifecycle(device_), " to return a MemoryPointer"));
      }
      Allocation& allocation = session.record(device_record(session, model, pointer));
      session.write_pattern(allocation);
      session.property().allocated(session, allocation);
      made.emplace_back(model.id, std::move(pointer));
    }
    std::vector<std::size_t> order_of;
    for (std::size_t i = 0; i < made.size(); ++i) order_of.push_back(i);
    if (order_ == Order::last_to_first) std::reverse(order_of.begin(), order_of.end());
    if (order_ == Order::alternate) {
      std::stable_partition(order_of.begin(), order_of.end(),
                            [](std::size_t i) { return i % 2 == 0; });
    }
    for (const std::size_t i : order_of) {
      made[i].second.reset();
      Allocation& record = session.allocation(made[i].first);
      record.released = true;
      session.property().released(session, record, true);
    }
  }

 private:
  std::string release_code() const {
    switch (order_) {
      case Order::first_to_last:
        return "for (auto& m : burst) m.reset();";
      case Order::last_to_first:
        return "while (!burst.empty()) burst.pop_back();";
      case Order::alternate:
        return "for (std::size_t i = 0; i < burst.size(); i += 2) "
               "burst[i].reset();\nburst.clear();";
    }
    return "";
  }
  std::string release_python() const {
    switch (order_) {
      case Order::first_to_last:
        return "while burst: del burst[0]";
      case Order::last_to_first:
        return "while burst: burst.pop()";
      case Order::alternate:
        return "del burst[::2]\ndel burst[:]";
    }
    return "";
  }

  int device_;
  int count_;
  Order order_;
  std::size_t size_ = 1;
};

class Memallocmanaged final : public EngineCommand {
 public:
  Memallocmanaged(const Model& model, const Plan&)
      : device_(*uniform(0, model.devices)),
        size_(next_size(model, kLargestAllocation, true)),
        attach_global_(*rc::gen::arbitrary<bool>()) {}

  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void apply(Model& model) const override {
    ModelAllocation made = next_allocation(model, Source::memallocmanaged, device_, size_);
    made.attach_global = attach_global_;
    model.add_allocation(made);
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << "memallocmanaged(" << size_ << ")"; }

 protected:
  CommandKind kind() const override { return CommandKind::memallocmanaged; }
  void execute(const Model& s0, Session& session) const override {
    ModelAllocation made = next_allocation(s0, Source::memallocmanaged, device_, size_);
    made.attach_global = attach_global_;
    const std::string name = allocation_name(made);
    session.begin_call({str("auto ", name, " = ", cpp_context(device_), ".memallocmanaged(", size_,
                            ", /*attach_global=*/", cpp_bool(attach_global_), ");"),
                        str(name, " = ", py_context(device_), ".memallocmanaged(", size_,
                            ", attach_global=", py_bool(attach_global_), ")")});
    Context& context = session.context(device_);
    std::shared_ptr<MemoryPointer> pointer;
    try {
      pointer = context.memallocmanaged(size_, attach_global_);
    } catch (...) {
      session.fail_thrown(str("memallocmanaged(", size_, ", ", cpp_bool(attach_global_), ")",
                              session.after_lifecycle(device_), " to return managed memory of ",
                              size_, " bytes"));
    }
    Allocation record = device_record(session, made, pointer);
    if (ManagedMemory* managed = managed_memory(pointer)) {
      record.host_pointer = managed->host_pointer();
    }
    Allocation& allocation = session.record(std::move(record));
    session.references().push_back({pointer, {}, made.id, name});
    session.write_pattern(allocation);
    session.property().allocated(session, allocation);
  }

 private:
  int device_;
  std::size_t size_;
  bool attach_global_;
};

// The sizes memhostalloc is asked for: pinned memory is costly, so smaller than device sizes.
constexpr std::size_t kLargestHostAllocation = 2 * MiB;

// A host allocation the plugin returned (memhostalloc or mempin), with what it reports about
// itself and the device view it maps, recorded and referenced by the session; then its pattern
// is written and the property sees it.
void keep_host_allocation(Session& session, Allocation record, const HostAllocation& host) {
  record.reported_size = host.size();
  record.reported_mapped = host.is_mapped();
  const std::shared_ptr<MemoryPointer> mapped = host.mapped_pointer();
  if (mapped) {
    record.device_pointer = mapped->device_pointer();
    record.base = mapped->owner();
    record.reported_context = mapped->context();
  } else if (host.pinned_memory()) {
    record.pinned = host.pinned_memory();
    record.reported_context = host.pinned_memory()->context();
  }
  const int id = record.model.id;
  const std::string name = record.name;
  Allocation& allocation = session.record(std::move(record));
  session.references().push_back({mapped, host, id, name});
  session.write_pattern(allocation);
  session.property().allocated(session, allocation);
}

class Memhostalloc final : public EngineCommand {
 public:
  Memhostalloc(const Model& model, const Plan& plan)
      : device_(*uniform(0, model.devices)), size_(next_size(model, kLargestHostAllocation)) {
    // The flags of a recent request half of the time (what a pinned cache keys on), else any.
    unsigned flags = *uniform(0u, 8u);
    if (!model.recent_host_flags.empty() && *rc::gen::arbitrary<bool>()) {
      flags = *rc::gen::elementOf(model.recent_host_flags);
    }
    mapped_ = plan.can_map_host_memory && (flags & 1u) != 0;
    portable_ = (flags & 2u) != 0;
    wc_ = (flags & 4u) != 0;
  }

  void checkPreconditions(const Model& model) const override {
    require(device_ < model.devices);
    require(!mapped_ || model.can_map_host_memory);
  }
  void apply(Model& model) const override {
    ModelAllocation made = next_allocation(model, Source::memhostalloc, device_, size_);
    made.mapped = mapped_;
    made.portable = portable_;
    made.wc = wc_;
    model.add_allocation(made);
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << "memhostalloc(" << size_ << ")"; }

 protected:
  CommandKind kind() const override { return CommandKind::memhostalloc; }
  void execute(const Model& s0, Session& session) const override {
    ModelAllocation made = next_allocation(s0, Source::memhostalloc, device_, size_);
    made.mapped = mapped_;
    made.portable = portable_;
    made.wc = wc_;
    const std::string name = allocation_name(made);
    session.begin_call({str("auto ", name, " = ", cpp_context(device_), ".memhostalloc(", size_,
                            ", /*mapped=*/", cpp_bool(mapped_), ", /*portable=*/",
                            cpp_bool(portable_), ", /*wc=*/", cpp_bool(wc_), ");"),
                        str(name, " = ", py_context(device_), ".memhostalloc(", size_,
                            ", mapped=", py_bool(mapped_), ", portable=", py_bool(portable_),
                            ", wc=", py_bool(wc_), ")")});
    Context& context = session.context(device_);
    HostAllocation host;
    try {
      host = context.memhostalloc(size_, mapped_, portable_, wc_);
    } catch (...) {
      session.fail_thrown(str("memhostalloc(", size_, ", ", cpp_bool(mapped_), ", ",
                              cpp_bool(portable_), ", ", cpp_bool(wc_), ")",
                              session.after_lifecycle(device_),
                              " to return page-locked host memory"));
    }
    Allocation record;
    record.model = made;
    record.name = name;
    if (host.empty() || host.host_pointer() == nullptr) {
      session.fail(str("memhostalloc(", size_, ") returned ",
                       host.empty() ? "an empty HostAllocation" : "a null host pointer",
                       "; expected ", size_, " bytes of page-locked host memory"));
    }
    record.host_pointer = host.host_pointer();
    record.reported_host_pointer = host.host_pointer();
    keep_host_allocation(session, std::move(record), host);
  }

 private:
  int device_;
  std::size_t size_;
  bool mapped_ = false;
  bool portable_ = false;
  bool wc_ = false;
};

// Where mempin pins: offsets and sizes around page boundaries, unaligned, and few enough that
// a range is often pinned again right after it was unpinned, or next to a live pin.
rc::Gen<std::size_t> pin_offsets(std::size_t buffer_size) {
  return rc::gen::weightedOneOf<std::size_t>(
      {{3, rc::gen::elementOf(
               std::vector<std::size_t>{0, 1, 17, 4095, 4096, 4097, 8191, 8192, 12288 + 5})},
       {1, uniform<std::size_t>(0, buffer_size)}});
}
rc::Gen<std::size_t> pin_sizes(std::size_t buffer_size) {
  return rc::gen::weightedOneOf<std::size_t>(
      {{3, rc::gen::elementOf(std::vector<std::size_t>{1, 15, 100, 4093, 4096, 4097, 8192, 8191})},
       {1, uniform<std::size_t>(1, buffer_size)}});
}

class Mempin final : public EngineCommand {
 public:
  Mempin(const Model& model, const Plan& plan)
      : device_(*uniform(0, model.devices)),
        buffer_(*uniform(0, std::max(model.buffers, 1))),
        mapped_(plan.can_map_host_memory && *rc::gen::arbitrary<bool>()) {
    // Next to a pinned range half of the time: adjacent pins must both work (exact ranges).
    std::vector<std::pair<std::size_t, std::size_t>> pinned;
    for (const ModelAllocation& a : model.allocations) {
      if (a.source == Source::mempin && a.buffer == buffer_) pinned.emplace_back(a.offset, a.size);
    }
    const std::size_t size = *pin_sizes(model.buffer_size);
    if (!pinned.empty() && *rc::gen::arbitrary<bool>()) {
      const auto& [offset, length] = pinned[*uniform<std::size_t>(0, pinned.size())];
      const bool after = *rc::gen::arbitrary<bool>();
      offset_ = after ? offset + length : (offset >= size ? offset - size : 0);
    } else {
      offset_ = *pin_offsets(model.buffer_size);
    }
    size_ = size;
  }

  void checkPreconditions(const Model& model) const override {
    require(device_ < model.devices);
    require(buffer_ < model.buffers);
    require(size_ > 0 && offset_ + size_ <= model.buffer_size);
    require(!mapped_ || model.can_map_host_memory);
    // The driver refuses to register a byte twice; pinning the same memory twice is the
    // caller's mistake, not a rule for the plugin.
    require(!model.pinned_overlaps(buffer_, offset_, size_));
    require(model.pins_share_pages || !model.pinned_overlaps(buffer_, offset_, size_, 4096));
  }
  void apply(Model& model) const override {
    ModelAllocation made = next_allocation(model, Source::mempin, device_, size_);
    made.mapped = mapped_;
    made.buffer = buffer_;
    made.offset = offset_;
    model.add_allocation(made);
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << "mempin(" << offset_ << ", " << size_ << ")"; }

 protected:
  CommandKind kind() const override { return CommandKind::mempin; }
  void execute(const Model& s0, Session& session) const override {
    ModelAllocation made = next_allocation(s0, Source::mempin, device_, size_);
    made.mapped = mapped_;
    made.buffer = buffer_;
    made.offset = offset_;
    const std::string name = allocation_name(made);
    session.trace().buffers[buffer_] = s0.buffer_size;
    const std::string buffer = str("buffer", buffer_);
    session.begin_call(
        {str("auto ", name, " = ", cpp_context(device_), ".mempin(", buffer, ", ", buffer,
             ".get() + ", offset_, ", ", size_, ", /*mapped=*/", cpp_bool(mapped_), ");"),
         str(name, " = ", py_context(device_), ".mempin(", buffer, ", ", buffer, ".ctypes.data + ",
             offset_, ", ", size_, ", mapped=", py_bool(mapped_), ")")});
    Context& context = session.context(device_);
    std::byte* pointer = session.buffer(buffer_) + offset_;
    const std::shared_ptr<void> owner = session.buffer_owner(buffer_);
    HostAllocation host;
    try {
      host = context.mempin(owner, pointer, size_, mapped_);
    } catch (...) {
      session.fail_thrown(str("mempin(owner, p, ", size_, ", ", cpp_bool(mapped_), ")",
                              session.after_lifecycle(device_), " to page-lock [p, p + ", size_,
                              ")"));
    }
    if (host.empty()) session.fail("mempin returned an empty HostAllocation");
    Allocation record;
    record.model = made;
    record.name = name;
    record.host_pointer = pointer;
    record.reported_host_pointer = host.host_pointer();
    const std::shared_ptr<void> owned = host.owned();
    record.owner_kept = owned && !owned.owner_before(owner) && !owner.owner_before(owned);
    keep_host_allocation(session, std::move(record), host);
  }

 private:
  int device_;
  int buffer_;
  bool mapped_;
  std::size_t offset_ = 0;
  std::size_t size_ = 1;
};

// --- references ---------------------------------------------------------------------------------

// Host memory that is not mapped has no MemoryPointer: a reference to it is a copy.
bool pointer_references(const ModelAllocation& allocation) {
  return on_device(allocation.source) || allocation.mapped;
}

rc::Gen<std::size_t> view_starts(std::size_t size) {
  return rc::gen::weightedOneOf<std::size_t>(
      {{3, rc::gen::elementOf(std::vector<std::size_t>{0, 1, 16, 256, 4096 + 3})},
       {1, rc::gen::just(size / 2)},
       {1, uniform<std::size_t>(0, size + 1)}});
}

class TakeReference final : public EngineCommand {
 public:
  enum class How { copy, own, view };

  TakeReference(const Model& model, const Plan&) {
    index_ = *uniform<std::size_t>(0, model.references.size());
    const ModelReference& reference = model.references[index_];
    const ModelAllocation* allocation = model.find(reference.allocation);
    if (allocation != nullptr && pointer_references(*allocation)) {
      how_ = *rc::gen::element(How::view, How::own, How::copy);
    }
    if (how_ == How::view) {
      start_ = std::min(*view_starts(reference.size), reference.size);
      const std::size_t left = reference.size - start_;
      stop_ = start_ +
              *rc::gen::weightedOneOf<std::size_t>(
                  {{3, rc::gen::just(left)},
                   {1, rc::gen::elementOf(std::vector<std::size_t>{
                           std::min<std::size_t>(left, 1), std::min<std::size_t>(left, 4096)})},
                   {1, uniform<std::size_t>(0, left + 1)}});
    }
  }

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.references.size());
    const ModelReference& reference = model.references[index_];
    const ModelAllocation* allocation = model.find(reference.allocation);
    require(allocation != nullptr && allocation->usable());
    require(how_ == How::copy || pointer_references(*allocation));
    require(start_ <= stop_ && stop_ <= reference.size);
  }
  void apply(Model& model) const override {
    const ModelReference reference = model.references[index_];
    switch (how_) {
      case How::copy:
        model.add_reference(reference.allocation, ReferenceKind::copy, reference.offset,
                            reference.size);
        break;
      case How::own:
        model.add_reference(reference.allocation, ReferenceKind::own, reference.offset,
                            reference.size);
        break;
      case How::view:
        model.add_reference(reference.allocation, ReferenceKind::view, reference.offset + start_,
                            stop_ - start_);
        break;
    }
    model.references.back().through_view = reference.through_view || how_ == How::view;
  }
  void show(std::ostream& os) const override { os << "reference " << index_; }

 protected:
  CommandKind kind() const override { return CommandKind::reference; }
  void execute(const Model& s0, Session& session) const override {
    const ModelReference& from = s0.references[index_];
    const ModelAllocation& allocation = *s0.find(from.allocation);
    Model after = s0;
    apply(after);
    const ModelReference& made = after.references.back();
    const std::string source = reference_name(allocation, from);
    const std::string name = reference_name(allocation, made);
    Session::Held held = session.references()[index_];
    held.name = name;
    // Mapped host memory that came back as pinned memory has no MemoryPointer to take a view or
    // own() of (ALLOC-6 fails that plugin); elsewhere the reference is then a copy.
    const How how = held.pointer ? how_ : How::copy;
    switch (how) {
      case How::copy:
        session.begin_call({str("auto ", name, " = ", source, ";"), str(name, " = ", source)});
        break;
      case How::own:
        session.begin_call(
            {str("auto ", name, " = ", source, "->own();"), str(name, " = ", source, ".own()")});
        try {
          held.pointer = held.pointer->own();
        } catch (...) {
          session.fail_thrown(str(source, "->own() to return an OwnedPointer"));
        }
        break;
      case How::view:
        session.begin_call({str("auto ", name, " = ", source, "->view(", start_, ", ", stop_, ");"),
                            str(name, " = ", source, ".view(", start_, ", ", stop_, ")")});
        try {
          held.pointer = held.pointer->view(start_, stop_);
        } catch (...) {
          session.fail_thrown(str(source, "->view(", start_, ", ", stop_, ") to return a view"));
        }
        break;
    }
    session.references().push_back(held);
    session.property().referenced(session, session.allocation(allocation.id), made, held.pointer);
  }

 private:
  std::size_t index_ = 0;
  How how_ = How::copy;
  std::size_t start_ = 0;
  std::size_t stop_ = 0;
};

class Release final : public EngineCommand {
 public:
  Release(const Model& model, const Plan&)
      : index_(*uniform<std::size_t>(0, model.references.size())),
        // A third of the releases on another thread: a garbage collector runs finalizers on
        // whichever thread it is on, where a plugin's thread-local state (a defer_cleanup depth,
        // a thread cache) is not the allocating thread's.
        on_thread_(
            *rc::gen::weightedOneOf<bool>({{2, rc::gen::just(false)}, {1, rc::gen::just(true)}})) {}

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.references.size());
  }
  void apply(Model& model) const override { model.drop_reference(index_); }
  void show(std::ostream& os) const override { os << "release " << index_; }

 protected:
  CommandKind kind() const override { return CommandKind::release; }
  void execute(const Model& s0, Session& session) const override {
    const ModelReference& reference = s0.references[index_];
    const ModelAllocation& allocation = *s0.find(reference.allocation);
    const std::string name = reference_name(allocation, reference);
    const bool pointer = pointer_references(allocation);
    const std::string drop = pointer ? "r.reset();" : "r = emm::HostAllocation();";
    if (on_thread_) {
      session.begin_call(
          {str("std::thread([r = std::move(", name, ")]() mutable { ", drop, " }).join();"),
           str("_held = [", name, "]; del ", name,
               "; _t = threading.Thread(target=_held.clear); _t.start(); _t.join()")});
    } else {
      session.begin_call({pointer ? str(name, ".reset();") : str(name, " = emm::HostAllocation();"),
                          str("del ", name)});
    }
    std::vector<Session::Held>& references = session.references();
    Session::Held held = std::move(references[index_]);
    references.erase(references.begin() + static_cast<long>(index_));
    if (on_thread_) {
      std::thread thread([dropped = std::move(held)]() mutable { dropped = Session::Held{}; });
      thread.join();
    } else {
      held = Session::Held{};
    }
    const bool last = allocation.references == 1;
    Allocation& record = session.allocation(allocation.id);
    if (last) record.released = true;
    session.property().released(session, record, last);
  }

 private:
  std::size_t index_;
  bool on_thread_;
};

// free() on a device allocation's pointer: its finalizer runs now rather than at the last
// release (spec 2.2); the references stay held and are released later like any other.
class Free final : public EngineCommand {
 public:
  Free(const Model& model, const Plan&)
      : index_(*uniform<std::size_t>(0, model.references.size())) {}

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.references.size());
    const ModelReference& reference = model.references[index_];
    const ModelAllocation* allocation = model.find(reference.allocation);
    require(allocation != nullptr && freeable(*allocation, reference));
  }
  void apply(Model& model) const override {
    model.find(model.references[index_].allocation)->freed = true;
  }
  void show(std::ostream& os) const override { os << "free " << index_; }

  static bool freeable(const ModelAllocation& allocation, const ModelReference& reference) {
    return allocation.usable() && on_device(allocation.source) && !reference.through_view;
  }

 protected:
  CommandKind kind() const override { return CommandKind::free; }
  void execute(const Model& s0, Session& session) const override {
    const ModelReference& reference = s0.references[index_];
    const ModelAllocation& model = *s0.find(reference.allocation);
    const std::string name = reference_name(model, reference);
    session.begin_call({str(name, "->free();"), str(name, ".free()")});
    session.context(model.device);
    const std::shared_ptr<MemoryPointer>& pointer = session.references()[index_].pointer;
    try {
      pointer->free();
    } catch (...) {
      session.fail_thrown(str(name, "->free() to run the finalizer of ", allocation_name(model),
                              " (its first free())"));
    }
    Allocation& record = session.allocation(model.id);
    record.freed = true;
    // A plugin that hands out views of its own blocks gives free() nothing to free (OwnedPointer
    // forwards it to the whole of what it owns only); the model stops using the memory all the
    // same.
    const auto* owned = dynamic_cast<const OwnedPointer*>(pointer.get());
    if (owned == nullptr || !owned->is_view()) session.property().freed(session, record);
  }

 private:
  std::size_t index_;
};

class Verify final : public EngineCommand {
 public:
  Verify(const Model& model, const Plan&)
      : index_(*uniform<std::size_t>(0, model.references.size())) {}

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.references.size());
    const ModelAllocation* allocation = model.find(model.references[index_].allocation);
    require(allocation != nullptr && allocation->usable());
  }
  void show(std::ostream& os) const override { os << "verify " << index_; }

 protected:
  CommandKind kind() const override { return CommandKind::verify; }
  void execute(const Model& s0, Session& session) const override {
    const ModelAllocation& model = *s0.find(s0.references[index_].allocation);
    const std::string name = allocation_name(model);
    session.begin_call({str("// ", name, " still holds the bytes written into it: read them back"),
                        str("# ", name, " still holds the bytes written into it: read them back")});
    Allocation& allocation = session.allocation(model.id);
    session.context(model.device);
    const std::string damage = session.pattern_damage(allocation);
    session.property().verified(session, allocation, damage);
  }

 private:
  std::size_t index_;
};

// --- lifecycle ----------------------------------------------------------------------------------

std::optional<MemoryInfo> quiet_memory_info(Session& session, Context& context) {
  if (!session.capabilities().memory_info) return std::nullopt;
  try {
    return context.get_memory_info();
  } catch (...) {
    return std::nullopt;  // INFO-1 judges a memory info that throws
  }
}

class Initialize final : public EngineCommand {
 public:
  Initialize(const Model& model, const Plan&) : device_(*uniform(0, model.devices)) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void apply(Model& model) const override { model.used[static_cast<std::size_t>(device_)] = true; }
  void show(std::ostream& os) const override { os << "initialize " << device_; }

 protected:
  CommandKind kind() const override { return CommandKind::initialize; }
  void execute(const Model&, Session& session) const override {
    session.begin_call({str(cpp_context(device_), ".memory_manager().initialize();"),
                        str(py_context(device_), ".memory_manager.initialize()")});
    Context& context = session.context(device_);
    Initialized seen;
    seen.device = device_;
    seen.info_before = quiet_memory_info(session, context);
    seen.before = session.snapshot();
    try {
      context.memory_manager().initialize();
    } catch (...) {
      session.fail_thrown("initialize() to return (it may be called any number of times)");
    }
    seen.after = session.snapshot();
    session.note_lifecycle(device_, "initialize() again");
    seen.info_after = quiet_memory_info(session, context);
    session.property().initialized(session, seen);
  }

 private:
  int device_;
};

class Reset final : public EngineCommand {
 public:
  Reset(const Model& model, const Plan&) : device_(*uniform(0, model.devices)) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void apply(Model& model) const override {
    model.orphan(device_);
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << "reset " << device_; }

 protected:
  CommandKind kind() const override { return CommandKind::reset; }
  void execute(const Model& s0, Session& session) const override {
    session.begin_call(
        {str(cpp_context(device_), ".reset();"), str(py_context(device_), ".reset()")});
    Context& context = session.context(device_);
    const Snapshot before = session.snapshot();
    try {
      context.reset();
    } catch (...) {
      session.fail_thrown("reset() to return (the plugin's reset() releases what it holds)");
    }
    session.note_lifecycle(device_, "reset()");
    for (const ModelAllocation& allocation : s0.allocations) {
      if (allocation.device == device_) session.allocation(allocation.id).orphaned = true;
    }
    session.property().was_reset(session, device_, before);
  }

 private:
  int device_;
};

class Flush final : public EngineCommand {
 public:
  Flush(const Model& model, const Plan&) : device_(*uniform(0, model.devices)) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void show(std::ostream& os) const override { os << "flush " << device_; }

 protected:
  CommandKind kind() const override { return CommandKind::flush; }
  void execute(const Model&, Session& session) const override {
    session.begin_call(
        {str("dynamic_cast<emm::HostOnlyCUDAMemoryManager&>(", cpp_context(device_),
             ".memory_manager()).deallocations().clear();  // the host's flush point"),
         str(py_context(device_),
             ".memory_manager.deallocations.clear()  # the host's flush point")});
    Context& context = session.context(device_);
    const Snapshot before = session.snapshot();
    flush_point(session, context, false);
    session.property().flushed(session, device_, before);
  }

 private:
  int device_;
};

class EnterGuard final : public EngineCommand {
 public:
  EnterGuard(const Model& model, const Plan&)
      : device_(*uniform(0, model.devices)), through_context_(*rc::gen::arbitrary<bool>()) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void apply(Model& model) const override {
    model.guards.push_back({model.next_guard++, device_, through_context_});
    model.used[static_cast<std::size_t>(device_)] = true;
  }
  void show(std::ostream& os) const override { os << "enter guard " << device_; }

 protected:
  CommandKind kind() const override { return CommandKind::enter_guard; }
  void execute(const Model& s0, Session& session) const override {
    const std::string name = str("g", s0.next_guard);
    const std::string cpp_call =
        through_context_ ? str(cpp_context(device_), ".defer_cleanup()")
                         : str(cpp_context(device_), ".memory_manager().defer_cleanup()");
    const std::string py_call = through_context_
                                    ? str(py_context(device_), ".defer_cleanup()")
                                    : str(py_context(device_), ".memory_manager.defer_cleanup()");
    session.begin_call({str("emm::CleanupGuard ", name, " = ", cpp_call, ";"),
                        str(name, " = ", py_call, "; ", name, ".__enter__()")});
    Context& context = session.context(device_);
    const Snapshot before = session.snapshot();
    try {
      session.guards().push_back(
          {through_context_ ? context.defer_cleanup() : context.memory_manager().defer_cleanup(),
           s0.next_guard, device_});
    } catch (...) {
      session.fail_thrown("defer_cleanup() to return a guard");
    }
    session.property().guard_entered(session, device_, before);
  }

 private:
  int device_;
  bool through_context_;
};

class ExitGuard final : public EngineCommand {
 public:
  ExitGuard(const Model& model, const Plan&)
      : index_(*uniform<std::size_t>(0, model.guards.size())) {}
  void checkPreconditions(const Model& model) const override {
    require(index_ < model.guards.size());
  }
  void apply(Model& model) const override {
    model.guards.erase(model.guards.begin() + static_cast<long>(index_));
  }
  void show(std::ostream& os) const override { os << "exit guard " << index_; }

 protected:
  CommandKind kind() const override { return CommandKind::exit_guard; }
  void execute(const Model& s0, Session& session) const override {
    const ModelGuard& guard = s0.guards[index_];
    const std::string name = str("g", guard.id);
    session.begin_call({str(name, ".release();"), str(name, ".__exit__(None, None, None)")});
    session.context(guard.device);
    const Snapshot before = session.snapshot();
    std::vector<Session::HeldGuard>& guards = session.guards();
    CleanupGuard leaving = std::move(guards[index_].guard);
    guards.erase(guards.begin() + static_cast<long>(index_));
    leaving.release();  // noexcept: a throwing exit is reported through Diagnostics
    session.property().guard_exited(session, guard.device, before);
  }

 private:
  std::size_t index_;
};

class Close final : public EngineCommand {
 public:
  Close(const Model&, const Plan&) {}
  void apply(Model& model) const override {
    for (int device = 0; device < model.devices; ++device) model.orphan(device);
    model.guards.clear();
  }
  void show(std::ostream& os) const override { os << "close"; }

 protected:
  CommandKind kind() const override { return CommandKind::close; }
  void execute(const Model& s0, Session& session) const override {
    // Open guards end first: a closed context's guards have nothing left to guard.
    std::string guards_cpp;
    std::string guards_py;
    for (const ModelGuard& guard : s0.guards) {
      guards_cpp += str("g", guard.id, ".release(); ");
      guards_py += str("g", guard.id, ".__exit__(None, None, None); ");
    }
    session.begin_call({guards_cpp + "runtime.close();  // every context reset, plugins destroyed",
                        guards_py + "cuda.close()"});
    const Snapshot before = session.snapshot();
    while (!session.guards().empty()) {
      session.guards().back().guard.release();
      session.guards().pop_back();
    }
    session.close_runtime();
    for (int device = 0; device < s0.devices; ++device) session.note_lifecycle(device, "close()");
    for (const ModelAllocation& allocation : s0.allocations) {
      session.allocation(allocation.id).orphaned = true;
    }
    session.property().closed(session, before);
  }
};

// --- queries
// ----------------------------------------------------------------------------------------

class QueryMemoryInfo final : public EngineCommand {
 public:
  QueryMemoryInfo(const Model& model, const Plan&) : device_(*uniform(0, model.devices)) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void show(std::ostream& os) const override { os << "memory info " << device_; }

 protected:
  CommandKind kind() const override { return CommandKind::memory_info; }
  void execute(const Model&, Session& session) const override {
    session.begin_call({str(cpp_context(device_), ".get_memory_info();"),
                        str(py_context(device_), ".get_memory_info()")});
    Context& context = session.context(device_);
    std::optional<MemoryInfo> info;
    try {
      info = context.get_memory_info();
    } catch (...) {
      session.property().memory_info(session, device_, std::nullopt, session.snapshot());
      return;
    }
    session.property().memory_info(session, device_, info, session.snapshot());
  }

 private:
  int device_;
};

class ExportIpc final : public EngineCommand {
 public:
  ExportIpc(const Model& model, const Plan& plan)
      : index_(*uniform<std::size_t>(0, model.references.size())),
        foreign_(
            plan.foreign_exports &&
            *rc::gen::weightedOneOf<bool>({{3, rc::gen::just(false)}, {1, rc::gen::just(true)}})) {}
  void checkPreconditions(const Model& model) const override {
    require(index_ < model.references.size());
    const ModelAllocation* allocation = model.find(model.references[index_].allocation);
    require(allocation != nullptr && allocation->usable() &&
            allocation->source == Source::memalloc);
    // An empty view has no bytes to export (and one at the very end lies in no allocation).
    require(model.references[index_].size > 0);
  }
  void show(std::ostream& os) const override {
    os << "export " << index_ << (foreign_ ? " foreign" : "");
  }

 protected:
  CommandKind kind() const override { return CommandKind::export_ipc; }
  void execute(const Model& s0, Session& session) const override {
    const ModelReference& reference = s0.references[index_];
    const ModelAllocation& model = *s0.find(reference.allocation);
    const std::string held = reference_name(model, reference);
    const std::string handle_name = str("handle", session.call_number() + 1);
    // A "foreign" MemoryPointer over the same bytes, as Numba makes for arrays it did not
    // allocate: its owner() is itself, so the plugin must find its block by address (spec §7).
    const std::string name = foreign_ ? str("emm::MemoryPointer(", held, "->context(), ", held,
                                            "->device_pointer(), ", held, "->size())")
                                      : held;
    session.begin_call(
        {str("auto ", handle_name, " = ", cpp_context(model.device), ".get_ipc_handle(",
             foreign_ ? str("std::make_shared<", name.substr(0, name.find('(')), ">(",
                            name.substr(name.find('(') + 1))
                      : name,
             ");  // opened in another process"),
         str(handle_name, " = ", py_context(model.device), ".get_ipc_handle(",
             foreign_ ? str("MemoryPointer(", py_context(model.device), ", ", held,
                            ".device_pointer, ", held, ".size)")
                      : held,
             ")  # opened in another process")});
    Context& context = session.context(model.device);
    std::shared_ptr<MemoryPointer> pointer = session.references()[index_].pointer;
    if (foreign_) {
      pointer = std::make_shared<MemoryPointer>(pointer->context(), pointer->device_pointer(),
                                                pointer->size());
    }
    Exported exported{session.allocation(model.id),
                      reference,
                      foreign_ ? "a foreign MemoryPointer over " + held : held,
                      pointer,
                      nullptr,
                      std::nullopt,
                      ""};
    std::optional<IpcHandle> handle;
    try {
      handle.emplace(context.get_ipc_handle(pointer));
    } catch (...) {
      session.property().exported(session, exported);
      return;
    }
    std::optional<std::vector<std::byte>> imported;
    std::string import_error;
    try {
      ImportRequest request;
      request.items.push_back({handle->serialize(), ImportContext::source_device, false, {}});
      ImportResponse response = session.backend().import_elsewhere(request);
      if (!response.error.empty()) {
        import_error = response.error;
      } else if (response.answers.size() != 1) {
        import_error =
            str("the importing process answered ", response.answers.size(), " items for 1");
      } else if (!response.answers.front().ok) {
        import_error = response.answers.front().error;
      } else {
        imported = std::move(response.answers.front().bytes);
      }
    } catch (...) {
      import_error = describe_current_exception();
    }
    session.context(model.device);
    exported.handle = &*handle;
    exported.imported = std::move(imported);
    exported.import_error = std::move(import_error);
    session.property().exported(session, exported);
  }

 private:
  std::size_t index_;
  bool foreign_;
};

class InterfaceVersion final : public EngineCommand {
 public:
  InterfaceVersion(const Model& model, const Plan&) : device_(*uniform(0, model.devices)) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void show(std::ostream& os) const override { os << "interface_version"; }

 protected:
  CommandKind kind() const override { return CommandKind::interface_version; }
  void execute(const Model&, Session& session) const override {
    session.begin_call({str(cpp_context(device_), ".memory_manager().interface_version();"),
                        str(py_context(device_), ".memory_manager.interface_version")});
    int version = 0;
    try {
      version = session.manager(device_).interface_version();
    } catch (...) {
      session.fail_thrown("interface_version() to return 1");
    }
    session.property().interface_version(session, version);
  }

 private:
  int device_;
};

class ProbeInstance final : public EngineCommand {
 public:
  ProbeInstance(const Model&, const Plan&) {}
  void show(std::ostream& os) const override { os << "probe instance"; }

 protected:
  CommandKind kind() const override { return CommandKind::probe_instance; }
  void execute(const Model& s0, Session& session) const override {
    session.begin_call(
        {"{ auto probe = factory(nullptr); probe->interface_version(); }  // the version probe "
         "set_memory_manager builds: a null-context instance",
         "Plugin(context=None).interface_version  # the version probe: a null-context instance"});
    ProbeReport report;
    const std::optional<std::size_t> calls_before = session.backend().driver_calls();
    try {
      std::unique_ptr<BaseCUDAMemoryManager> probe = session.run().subject().factory(nullptr);
      if (!probe) {
        report.failure = "the factory returned no instance for a null context";
      } else {
        report.interface_version = probe->interface_version();
        probe.reset();
      }
    } catch (...) {
      report.failure = describe_current_exception();
    }
    const std::optional<std::size_t> calls_after = session.backend().driver_calls();
    if (calls_before && calls_after) report.driver_calls = *calls_after - *calls_before;
    for (const ModelAllocation& model : s0.allocations) {
      if (!model.usable()) continue;
      Allocation& allocation = session.allocation(model.id);
      if (Session::finalized(allocation)) {
        report.damage = str("the finalizer of the live ", allocation.name, " ran");
        break;
      }
      session.context(model.device);
      if (std::string damage = session.pattern_damage(allocation); !damage.empty()) {
        report.damage = damage;
        break;
      }
    }
    session.property().probed(session, report);
  }
};

// --- out of memory ------------------------------------------------------------------------------

bool is_out_of_memory() {
  try {
    throw;
  } catch (const CudaDriverError& error) {
    return error.code() == CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return false;
  }
}

class RequestTooLarge final : public EngineCommand {
 public:
  RequestTooLarge(const Model& model, const Plan&)
      : device_(*uniform(0, model.devices)), which_(*uniform(0, 4)) {}
  void checkPreconditions(const Model& model) const override { require(device_ < model.devices); }
  void show(std::ostream& os) const override { os << "too large " << which_; }

 protected:
  CommandKind kind() const override { return CommandKind::out_of_memory; }
  void execute(const Model& s0, Session& session) const override {
    // More than any device has (1 PiB), just more than this one's total, twice its total, and
    // a size near the top of size_t (a plugin that rounds it up to its alignment wraps to a
    // small request and hands out a block).
    const std::size_t request = which_ == 0   ? std::size_t{1} << 50
                                : which_ == 1 ? s0.device_capacity + MiB + 1
                                : which_ == 2 ? 2 * s0.device_capacity
                                              : SIZE_MAX - 100;
    session.begin_call(
        {str(cpp_context(device_), ".memalloc(", request, ");  // more than the device has"),
         str(py_context(device_), ".memalloc(", request, ")  # more than the device has")});
    Context& context = session.context(device_);
    OutOfMemory report;
    report.request = request;
    report.before = session.snapshot();
    try {
      std::shared_ptr<MemoryPointer> memory = context.memalloc(request);
      report.other = str("it returned a pointer (size ", memory ? memory->size() : 0, ")");
    } catch (...) {
      report.threw_out_of_memory = is_out_of_memory();
      // Near SIZE_MAX only a block handed out is judged: another error (the driver's
      // CUDA_ERROR_INVALID_VALUE for a size the plugin's arithmetic wrapped to 0) refuses the
      // absurd request too, and no host asks for it.
      if (!report.threw_out_of_memory && which_ != 3) {
        report.other = "it threw " + describe_current_exception();
      }
    }
    report.after = session.snapshot();
    session.property().out_of_memory(session, report);
  }

 private:
  int device_;
  int which_;
};

// Fills the device with blocks of 1/divisor of its memory until the plugin reports out of
// memory, releases them all, then asks for a block of another size that the released memory
// can hold. When that is refused, reset() releases what the plugin holds and the request is
// made again: if it succeeds now, the plugin refused a request that releasing its held memory
// would satisfy (spec §8 (c)).
// Writes the first and the last byte of a block the kit received outside the model (a fill's
// chunks and requests): a block shorter than asked fails ALLOC-1 whatever path made it (on the
// fake a write past its driver allocation is refused; on a GPU it may land in a neighbour).
void expect_whole(Session& session, const std::shared_ptr<MemoryPointer>& memory,
                  std::size_t size) {
  if (!memory || size == 0) return;
  const std::byte byte{0x5a};
  const CUdeviceptr first = memory->device_pointer();
  const CUdeviceptr last = first + size - 1;
  try {
    session.driver().memcpy_htod(first, &byte, 1);
    session.driver().memcpy_htod(last, &byte, 1);
  } catch (const CudaDriverError& error) {
    session.fail(str("expected every byte of memalloc(", size, ") at ", hex(first),
                     " to be writable (ALLOC-1), also for a block made after out of memory; "
                     "seen: writing its last byte at ",
                     hex(last), " failed: ", error.what()));
  }
}

class Fill final : public EngineCommand {
 public:
  Fill(const Model&, const Plan& plan)
      : divisor_(*rc::gen::element(4, 3, 6, 8)),
        second_(*uniform(0, 3)),
        prelude_(*rc::gen::elementOf(preludes(plan))),
        past_count_(*rc::gen::element<std::size_t>(9, 65, 257)),
        past_size_(*rc::gen::element<std::size_t>(256, 4096, 32 * KiB, 64 * KiB + 1)) {}
  void checkPreconditions(const Model& model) const override {
    // The caller holds nothing, so everything the plugin holds is its own to release; and no
    // guard is open, inside which it must not free.
    require(model.references.empty() && model.guards.empty());
  }
  void show(std::ostream& os) const override {
    os << "fill 1/" << divisor_;
    if (prelude_ == Prelude::past_bounds) os << " after " << past_count_ << " x " << past_size_;
  }

 protected:
  CommandKind kind() const override { return CommandKind::fill; }
  void execute(const Model& s0, Session& session) const override {
    const std::size_t chunk =
        std::max(s0.device_capacity / static_cast<std::size_t>(divisor_) / MiB * MiB, MiB);
    std::optional<OtherThread> other;
    if (prelude_ == Prelude::other_thread) {
      other.emplace(session, chunk);
    } else if (!run_prelude(session, chunk)) {
      return;
    }
    constexpr std::size_t kMaxChunks = 64;
    session.begin_call(
        {str("std::vector<std::shared_ptr<emm::MemoryPointer>> fill;  // until out of memory:\n"
             "try { while (fill.size() < ",
             kMaxChunks, ") fill.push_back(context().memalloc(", chunk,
             ")); } catch (const emm::CudaDriverError&) {}"),
         str("fill = []\ntry:\n    while len(fill) < ", kMaxChunks,
             ":\n        fill.append(ctx.memalloc(", chunk, "))\nexcept Exception:\n    pass")});
    Context& context = session.context(0);
    OutOfMemory report;
    report.before = session.snapshot();
    std::vector<std::shared_ptr<MemoryPointer>> fill;
    try {
      while (fill.size() < kMaxChunks) fill.push_back(context.memalloc(chunk));
    } catch (...) {
      if (!is_out_of_memory()) {
        report_thrown(session, report, chunk, fill);
        return;
      }
    }
    for (const std::shared_ptr<MemoryPointer>& block : fill) expect_whole(session, block, chunk);
    const std::size_t obtained = fill.size() * chunk;
    // The device topped off: halves of the chunk down to 512 bytes, each until refused, so
    // that the small request below meets a device with no room left at all (a plugin's path
    // for a small request refused outright, which a device with a chunk's worth free hides).
    session.begin_call(
        {str("for (std::size_t n = ", chunk / 2,
             "; n >= 512; n /= 2)  // the rest of the device\n"
             "  try { for (int i = 0; i < 64; ++i) fill.push_back(context().memalloc(n)); } "
             "catch (const emm::CudaDriverError&) {}"),
         str("n = ", chunk / 2,
             "\nwhile n >= 512:  # the rest of the device\n    try:\n        for _ in range(64):\n"
             "            fill.append(ctx.memalloc(n))\n    except Exception:\n        pass\n"
             "    n //= 2")});
    for (std::size_t piece = chunk / 2; piece >= 512; piece /= 2) {
      const std::size_t first = fill.size();
      try {
        for (int i = 0; i < 64; ++i) fill.push_back(context.memalloc(piece));
      } catch (...) {
        if (!is_out_of_memory()) {
          report_thrown(session, report, piece, fill);
          return;
        }
      }
      for (std::size_t i = first; i < fill.size(); ++i) expect_whole(session, fill[i], piece);
    }
    // A small request on the full device: out of memory or a block, either is fine; what it
    // leaves behind is judged by the allocations that follow (a chunk recorded before its
    // cuMemAlloc failed, say).
    session.begin_call(
        {"try { context().memalloc(4097); } catch (const emm::CudaDriverError&) {}"
         "  // on the full device",
         "try:\n    ctx.memalloc(4097)  # on the full device\nexcept Exception:\n    pass"});
    std::shared_ptr<MemoryPointer> small;
    try {
      small = context.memalloc(4097);
    } catch (...) {
      if (!is_out_of_memory()) {
        report_thrown(session, report, 4097, fill);
        return;
      }
    }
    expect_whole(session, small, 4097);
    small.reset();
    session.begin_call({"fill.clear();", "fill.clear()"});
    fill.clear();
    // Half or three quarters of what the fill obtained, then nearly all the device had free
    // before the plugin was constructed, each as one block: the last fits only when the plugin
    // gives back, on out of memory, every block it keeps (one small block left cached in a slab,
    // or a block a guard's end forgot, is enough to refuse it). 64 KiB are left for the driver's
    // alignment. Each block is written at both ends: the one a plugin makes after flushing its
    // cache is as whole as any (ALLOC-1).
    const std::size_t before_plugin = s0.device_capacity > session.baseline().device_bytes
                                          ? s0.device_capacity - session.baseline().device_bytes
                                          : 0;
    const std::size_t nearly_all = std::max(before_plugin, 2 * MiB) - 64 * KiB;
    // First a small request again: whatever the refusals left behind (a chunk recorded before
    // its cuMemAlloc failed, say) is met by the next customer of the same size.
    std::vector<std::size_t> requests{4097};
    if (second_ == 0) requests.push_back(obtained / 2 + 4096 + 1);
    if (second_ == 1) requests.push_back(std::max(obtained / 4 * 3, MiB) + 3);
    if (requests.empty() || requests.back() < nearly_all) requests.push_back(nearly_all);
    for (const std::size_t request : requests) {
      report.request = request;
      session.begin_call(
          {str("auto after_fill = context().memalloc(", request, ");  // then after_fill.reset();"),
           str("after_fill = ctx.memalloc(", request, ")  # then del after_fill")});
      std::shared_ptr<MemoryPointer> memory;
      try {
        memory = context.memalloc(request);
      } catch (...) {
        report.threw_out_of_memory = is_out_of_memory();
        if (!report.threw_out_of_memory) report.other = "it threw " + describe_current_exception();
      }
      if (memory) {
        expect_whole(session, memory, request);  // outside the try: its failure is the clause's
        continue;
      }
      report.after = session.snapshot();
      if (!report.other.empty()) {
        session.property().out_of_memory(session, report);
        return;
      }
      shown_reset(session, context, "releases what the plugin holds", "reset() to return");
      session.begin_call({str("context().memalloc(", request, ");  // the same request again"),
                          str("ctx.memalloc(", request, ")  # the same request again")});
      try {
        std::shared_ptr<MemoryPointer> again = context.memalloc(request);
        report.after_reset_succeeded = again != nullptr;
      } catch (...) {
        report.after_reset_succeeded = false;
      }
      session.property().out_of_memory(session, report);
      return;
    }
    report.after = session.snapshot();
    session.property().out_of_memory(session, report);
    // The plugin may keep all of the device cached now, and may not give it back inside a
    // defer_cleanup scope: the commands after the fill start from what reset() leaves.
    reset_after_fill(session, context);
  }

 private:
  // What the plugin is left holding before the fill: a small block it may cache in a slab, or
  // a large block released inside a defer_cleanup scope that has ended since (the plugin must
  // again be able to give it back). False when the clause already failed.
  bool run_prelude(Session& session, std::size_t chunk) const {
    if (prelude_ == Prelude::none) return true;
    if (prelude_ == Prelude::past_bounds) return run_past_bounds(session);
    Context& context = session.context(0);
    const std::size_t size = prelude_ == Prelude::cached ? 1000 : chunk / 2 + 4096;
    const bool guarded = prelude_ == Prelude::guarded;
    session.begin_call(
        {str(guarded ? "{ emm::CleanupGuard scope = context().defer_cleanup(); " : "",
             "context().memalloc(", size, ");", guarded ? " }" : "",
             "  // released at once: the plugin may keep it"),
         str(guarded ? "with ctx.defer_cleanup():\n    " : "", "ctx.memalloc(", size,
             ")  # released at once: the plugin may keep it")});
    try {
      std::optional<CleanupGuard> scope;
      if (guarded) scope.emplace(context.defer_cleanup());
      std::shared_ptr<MemoryPointer> block = context.memalloc(size);
      block.reset();
    } catch (...) {
      if (is_out_of_memory()) return true;  // nothing held: the fill goes on
      session.fail_thrown(str("memalloc(", size, ") to return a block"));
      return false;
    }
    return true;
  }

  // past_bounds: k blocks of one size, all live at once, then released: whatever bound a
  // plugin keeps per size class or per thread (a list of 8 or 64 blocks, 256 KiB), k goes past
  // it, so the blocks beyond it take the plugin's overflow path, and the fill then asks for
  // everything back. The blocks are checked as any burst's (whole, no overlap).
  bool run_past_bounds(Session& session) const {
    Context& context = session.context(0);
    session.begin_call(
        {str("{ std::vector<std::shared_ptr<emm::MemoryPointer>> k;  // all live, then released\n"
             "  for (int i = 0; i < ",
             past_count_, "; ++i) k.push_back(context().memalloc(", past_size_, ")); }"),
         str("k = [ctx.memalloc(", past_size_, ") for _ in range(", past_count_,
             ")]  # all live, then released\ndel k")});
    std::vector<std::shared_ptr<MemoryPointer>> blocks;
    try {
      while (blocks.size() < past_count_) blocks.push_back(context.memalloc(past_size_));
    } catch (...) {
      if (!is_out_of_memory()) {
        session.fail_thrown(str("memalloc(", past_size_, ") to return a block"));
        return false;
      }
    }
    std::vector<CUdeviceptr> starts;
    for (const std::shared_ptr<MemoryPointer>& block : blocks) {
      expect_whole(session, block, past_size_);
      starts.push_back(block->device_pointer());
    }
    std::sort(starts.begin(), starts.end());
    for (std::size_t i = 1; i < starts.size(); ++i) {
      if (starts[i] - starts[i - 1] < past_size_) {
        session.fail(str("expected the ", blocks.size(), " live memalloc(", past_size_,
                         ") blocks not to overlap; seen: blocks at ", hex(starts[i - 1]), " and ",
                         hex(starts[i]), ", ", starts[i] - starts[i - 1], " bytes apart"));
      }
    }
    blocks.clear();
    return true;
  }

  // other_thread: blocks made and released on another thread, which stays alive (and keeps
  // whatever the plugin caches for it) until the fill is over; only for a plugin that declares
  // thread_safe.
  enum class Prelude { none, cached, guarded, past_bounds, other_thread };
  static std::vector<Prelude> preludes(const Plan& plan) {
    std::vector<Prelude> all{Prelude::none, Prelude::cached, Prelude::guarded,
                             Prelude::past_bounds};
    if (plan.capabilities.thread_safe) all.push_back(Prelude::other_thread);
    return all;
  }

  // The other_thread prelude's thread: started by the constructor, which returns once the
  // thread has made and released its blocks (a small one, one of a page and a byte, and half a
  // chunk); told to end, and joined, by the destructor.
  class OtherThread {
   public:
    OtherThread(Session& session, std::size_t chunk) {
      session.begin_call(
          {str("std::thread other([&] {  // alive until the fill is over\n"
               "  context().make_current();\n  for (std::size_t n : {1000, 4097, ",
               chunk / 2 + 4096,
               "}) context().memalloc(n);  // released at once: the plugin may keep them\n"
               "  /* waits */\n});"),
           str("def _other():  # alive until the fill is over\n    for n in (1000, 4097, ",
               chunk / 2 + 4096,
               "):\n        ctx.memalloc(n)\n    _done.wait()\n"
               "_t = threading.Thread(target=_other); _t.start()")});
      Context& context = session.context(0);
      thread_ = std::thread([this, &context, chunk] {
        std::string failure;
        try {
          context.make_current();
          for (const std::size_t size : {std::size_t{1000}, std::size_t{4097}, chunk / 2 + 4096}) {
            std::shared_ptr<MemoryPointer> block = context.memalloc(size);
            block.reset();
          }
        } catch (...) {
          if (!is_out_of_memory()) {
            failure = "memalloc on another thread threw " + describe_current_exception();
          }
        }
        std::unique_lock lock(mutex_);
        failure_ = std::move(failure);
        ready_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return stop_; });
      });
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return ready_; });
      const std::string failure = failure_;
      lock.unlock();
      if (!failure.empty()) {
        end();  // the destructor of an object whose constructor throws does not run
        session.fail(failure);
      }
    }
    ~OtherThread() { end(); }
    OtherThread(const OtherThread&) = delete;
    OtherThread& operator=(const OtherThread&) = delete;

   private:
    // Tells the thread to end and joins it (once).
    void end() {
      if (!thread_.joinable()) return;
      {
        std::lock_guard lock(mutex_);
        stop_ = true;
      }
      changed_.notify_all();
      thread_.join();
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    bool ready_ = false;  // mutex_
    bool stop_ = false;   // mutex_
    std::string failure_;
    std::thread thread_;
  };

  int divisor_;
  int second_;
  Prelude prelude_;
  std::size_t past_count_;
  std::size_t past_size_;
};

// --- fill_host ----------------------------------------------------------------------------------

// Spec §8: pinned host memory is memory too, and a plugin may cache it. Where the driver's
// page-locked limit is known (the fake's), fill it with memhostalloc blocks until out of memory,
// release them, and ask for one block of another size that fits only when the plugin gives back
// what it keeps: refused even after the host's flush point (the HostOnly queue, whose
// non-mapped frees Numba does not flush on out of memory, spec §2.4), yet granted after reset(),
// is an out-of-memory that releasing held memory would have avoided (§8 (c)).
class FillHost final : public EngineCommand {
 public:
  FillHost(const Model&, const Plan& plan)
      : capacity_(plan.page_locked_capacity),
        divisor_(*rc::gen::element(4, 6, 8)),
        cached_(*uniform(0, 2) == 1),
        flags_(*uniform(0, plan.can_map_host_memory ? 8 : 4)) {}
  void checkPreconditions(const Model& model) const override {
    require(capacity_ > 0 && model.references.empty() && model.guards.empty());
  }
  void show(std::ostream& os) const override {
    os << "fill_host 1/" << divisor_ << (cached_ ? " cached" : "");
  }

 protected:
  CommandKind kind() const override { return CommandKind::fill_host; }
  void execute(const Model&, Session& session) const override {
    Context& context = session.context(0);
    const std::size_t chunk =
        std::max(capacity_ / static_cast<std::size_t>(divisor_) / MiB * MiB, MiB);
    OutOfMemory report;
    report.host = true;
    report.before = session.snapshot();
    if (cached_) {
      // Small blocks of two flag classes, released at once: the plugin may keep them.
      session.begin_call(
          {"context().memhostalloc(4096, false, false, false); "
           "context().memhostalloc(8192, false, true, false);  // released at once",
           "ctx.memhostalloc(4096)\nctx.memhostalloc(8192, portable=True)"});
      try {
        (void)context.memhostalloc(4096, false, false, false);
        (void)context.memhostalloc(8192, false, true, false);
      } catch (...) {
        if (!is_out_of_memory()) {
          session.fail_thrown("memhostalloc(4096) and memhostalloc(8192, portable) to return");
        }
      }
    }
    constexpr std::size_t kMaxChunks = 64;
    session.begin_call({str("std::vector<emm::HostAllocation> fill;  // until out of memory:\n"
                            "try { while (fill.size() < ",
                            kMaxChunks, ") fill.push_back(context().memhostalloc(", chunk,
                            ", false, false, false)); } catch (const emm::CudaDriverError&) {}"),
                        str("fill = []\ntry:\n    while len(fill) < ", kMaxChunks,
                            ":\n        fill.append(ctx.memhostalloc(", chunk,
                            "))\nexcept Exception:\n    pass")});
    std::vector<HostAllocation> fill;
    try {
      while (fill.size() < kMaxChunks)
        fill.push_back(context.memhostalloc(chunk, false, false, false));
    } catch (...) {
      if (!is_out_of_memory()) {
        report_thrown(session, report, chunk, fill);
        return;
      }
    }
    const std::size_t obtained = fill.size() * chunk;
    session.begin_call({"fill.clear();", "fill.clear()"});
    fill.clear();
    // Another size than the chunks' (no cache can hand one of them out for it), with the flags
    // drawn: it fits only beside what the fill left free once the plugin gives back what it
    // keeps.
    const bool mapped = (flags_ & 4) != 0;
    const bool portable = (flags_ & 2) != 0;
    const bool wc = (flags_ & 1) != 0;
    const std::size_t request = std::max(obtained / 2, MiB) + 4096 + 1;
    report.request = request;
    auto ask = [&](const char* cpp_note, const char* python_note) {
      session.begin_call(
          {str("context().memhostalloc(", request, ", ", cpp_bool(mapped), ", ", cpp_bool(portable),
               ", ", cpp_bool(wc), ");  // ", cpp_note),
           str("ctx.memhostalloc(", request, ", mapped=", py_bool(mapped),
               ", portable=", py_bool(portable), ", wc=", py_bool(wc), ")  # ", python_note)});
      try {
        return !context.memhostalloc(request, mapped, portable, wc).empty();
      } catch (...) {
        if (!is_out_of_memory()) report.other = "it threw " + describe_current_exception();
        report.threw_out_of_memory = report.other.empty();
        return false;
      }
    };
    bool granted = ask("after the fill was released", "after the fill was released");
    if (!granted && report.other.empty()) {
      flush_point(session, context);
      granted = ask("after the host's flush point", "after the host's flush point");
    }
    report.after = session.snapshot();
    if (!granted && report.other.empty()) {
      shown_reset(session, context, "releases what the plugin holds", "reset() to return");
      session.note_lifecycle(0, "reset()");
      report.after_reset_succeeded = ask("the same request again", "the same request again");
      report.other.clear();  // what the last try threw is not the first refusal's
    }
    session.property().out_of_memory(session, report);
    // The plugin may keep all of the page-locked memory now: the commands after this one start
    // from what the flush point and reset() leave.
    flush_point(session, context);
    reset_after_fill(session, context);
  }

 private:
  std::size_t capacity_;
  int divisor_;
  bool cached_;
  int flags_;
};

// --- reset_in_scope -----------------------------------------------------------------------------

// A block released inside a defer_cleanup scope, then reset() inside that scope, then a block of
// the same size (the driver may hand out the same address again), the scope's end and the
// host's flush point: the released block's finalizer runs now, after reset() freed its memory,
// and must not give the new owner's memory to the plugin's free lists. A third block of the size
// must not overlap the second, which is live (spec §8 (a); LIFE-6, DEFER-2).
class ResetInScope final : public EngineCommand {
 public:
  ResetInScope(const Model& model, const Plan&) : size_(next_size(model, 4 * MiB)) {}
  void checkPreconditions(const Model& model) const override {
    // Like the fill: the caller holds nothing, so that reset() orphans nothing of the model.
    require(model.references.empty() && model.guards.empty());
  }
  void show(std::ostream& os) const override { os << "reset_in_scope(" << size_ << ")"; }

 protected:
  CommandKind kind() const override { return CommandKind::reset_in_scope; }
  void execute(const Model&, Session& session) const override {
    Context& context = session.context(0);
    session.begin_call(
        {str("std::shared_ptr<emm::MemoryPointer> second, third;\n"
             "{\n  emm::CleanupGuard scope = context().defer_cleanup();\n"
             "  context().memalloc(",
             size_,
             ");  // released in the scope: its finalizer waits\n"
             "  context().reset();\n  second = context().memalloc(",
             size_, ");\n}"),
         str("with ctx.defer_cleanup():\n    ctx.memalloc(", size_,
             ")  # released in the scope\n    ctx.reset()\n    second = ctx.memalloc(", size_,
             ")")});
    std::shared_ptr<MemoryPointer> second;
    try {
      CleanupGuard scope = context.defer_cleanup();
      context.memalloc(size_).reset();
      context.reset();
      second = context.memalloc(size_);
    } catch (...) {
      if (is_out_of_memory()) return;  // a device left full by an earlier command
      session.fail_thrown(str("memalloc(", size_, "), reset() and memalloc(", size_,
                              ") inside a defer_cleanup scope to return"));
    }
    session.note_lifecycle(0, "reset()");
    flush_point(session, context);
    session.begin_call({str("third = context().memalloc(", size_, ");  // second is live"),
                        str("third = ctx.memalloc(", size_, ")  # second is live")});
    std::shared_ptr<MemoryPointer> third;
    try {
      third = context.memalloc(size_);
    } catch (...) {
      if (is_out_of_memory()) return;
      session.fail_thrown(str("memalloc(", size_, ") to return a block"));
    }
    expect_whole(session, second, size_);
    expect_whole(session, third, size_);
    const CUdeviceptr a = second->device_pointer();
    const CUdeviceptr b = third->device_pointer();
    if (a < b + size_ && b < a + size_) {
      session.fail(str("expected memalloc(", size_, ") not to overlap the live second = memalloc(",
                       size_, ") at ", hex(a), "; seen: it returned ", hex(b),
                       ": the finalizer of the block released in the scope ran after reset() "
                       "had freed its memory, and put memory the new owner holds back into the "
                       "plugin's free lists (a stale finalizer must do nothing after reset())"));
    }
  }

 private:
  std::size_t size_;
};

// --- first_use ----------------------------------------------------------------------------------

// The runtime closed, then each device's context made by a thread of its own, at once: two
// plugin instances constructed and initialized side by side (a host whose threads start work on
// two GPUs together; with one device, two threads ask for its context at once), each thread then
// allocating and releasing. State a plugin shares between its instances (a registry, a log, a
// process-wide cache) meets two first uses; ALLOC-10 judges it (a race detector sees a missing
// lock). Only for a plugin that declares thread_safe.
class FirstUse final : public EngineCommand {
 public:
  FirstUse(const Model&, const Plan&) : size_(*allocation_sizes(64 * KiB)) {}
  void checkPreconditions(const Model& model) const override {
    require(model.references.empty() && model.guards.empty());
  }
  void apply(Model& model) const override {
    for (int device = 0; device < model.devices; ++device) model.orphan(device);
  }
  void show(std::ostream& os) const override { os << "first_use(" << size_ << ")"; }

 protected:
  CommandKind kind() const override { return CommandKind::first_use; }
  void execute(const Model& s0, Session& session) const override {
    const int devices = std::min(session.backend().device_count(), 2);
    session.begin_call(
        {str("runtime.close();\nstd::thread d0([&] { for (int i = 0; i < 8; ++i) "
             "runtime.get_context(0).memalloc(",
             size_,
             "); });\n"
             "std::thread d1([&] { for (int i = 0; i < 8; ++i) runtime.get_context(",
             devices - 1, ").memalloc(", size_, "); });  // at once\nd0.join(); d1.join();"),
         str("cuda.close()\n# two threads at once: for _ in range(8): cuda.select_device(d); "
             "cuda.current_context().memalloc(",
             size_, ")  (d = 0 and ", devices - 1, ")")});
    session.close_runtime();
    for (int device = 0; device < s0.devices; ++device) session.note_lifecycle(device, "close()");
    for (const ModelAllocation& allocation : s0.allocations) {
      session.allocation(allocation.id).orphaned = true;
    }
    ThreadReport report;
    report.threads = 2;
    report.before = session.snapshot();
    Runtime& runtime = session.runtime();
    std::mutex mutex;
    std::string failure;  // mutex
    std::atomic<int> waiting{2};
    auto work = [&](int device) {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      try {
        Context& context = runtime.get_context(device);
        for (int i = 0; i < 8; ++i) {
          std::shared_ptr<MemoryPointer> block = context.memalloc(size_);
          if (!block || block->device_pointer() == 0 || block->size() != size_) {
            std::lock_guard lock(mutex);
            if (failure.empty()) {
              failure = str("device ", device, "'s memalloc(", size_, ") returned ",
                            block ? str("a pointer of ", block->size(), " bytes at ",
                                        hex(block->device_pointer()))
                                  : std::string("null"));
            }
            return;
          }
        }
      } catch (...) {
        std::lock_guard lock(mutex);
        if (failure.empty()) {
          failure = str("the thread making device ", device,
                        "'s context and allocating: ", describe_current_exception());
        }
      }
    };
    std::thread first(work, 0);
    std::thread second(work, devices - 1);
    first.join();
    second.join();
    report.failure = failure;
    session.context(0);  // current again on this thread
    report.after = session.snapshot();
    session.property().threads(session, report);
  }

 private:
  std::size_t size_;
};

// --- threads ------------------------------------------------------------------------------------

// Many threads inside the plugin at once for the whole command: each makes and releases
// allocations (and views of them) back to back, with no driver call of the harness between, so
// that a missing lock in the plugin meets another thread (ALLOC-10). Live ranges are kept in
// one map, updated before a reference is dropped and after one is made. Mixed in, as the
// command was generated: defer_cleanup scopes opened and ended on the threads, pinned host
// memory (memhostalloc and mempin) made and released there, get_memory_info() and
// get_ipc_handle() where the plugin declares them, and (on the fake) last references dropped,
// and a block asked for, from a thread_local destructor as the thread exits, after whatever
// the plugin keeps per thread is gone, and one command in three thread 0 filling the device. Every
// locked path of a thread-safe plugin then meets a second thread, which a race detector sees.
class Threads final : public EngineCommand {
 public:
  // Fewer operations on a GPU, where a pass-through plugin's release is a cuMemFree that
  // synchronises the device (tens of microseconds): BackendDescriptor::simulated.
  Threads(const Model&, const Plan& plan)
      : threads_(*uniform(2, 9)),
        operations_(backend_descriptor(plan.backend).simulated ? *uniform(64, 513)
                                                               : *uniform(16, 129)),
        seed_(*uniform<std::uint32_t>(0, 1u << 20)),
        guards_(*uniform(0, 2) == 1),
        host_(*uniform(0, 2) == 1),
        info_(plan.capabilities.memory_info && *uniform(0, 2) == 1),
        ipc_(plan.capabilities.ipc && *uniform(0, 2) == 1),
        at_exit_(backend_descriptor(plan.backend).simulated && *uniform(0, 2) == 1),
        handoff_(*uniform(0, 2) == 1),
        page_locked_(plan.page_locked_capacity),
        // Not on a GPU: filling tens of GiB there maps every page (seconds per command, 19 s of
        // an H200 certification's 33), and certifications side by side would meet each other's
        // fill. The rule it tests (spec §8 (c) under threads) is the plugin's, judged on the fake.
        pressure_(*uniform(0, 3) == 0 && backend_descriptor(plan.backend).simulated) {}
  void show(std::ostream& os) const override {
    os << threads_ << " threads";
    if (pressure_) os << " +full";
    if (guards_) os << " +guards";
    if (host_) os << " +pinned";
    if (info_) os << " +info";
    if (ipc_) os << " +ipc";
    if (at_exit_) os << " +exit";
    if (handoff_) os << " +handoff";
  }

 protected:
  CommandKind kind() const override { return CommandKind::threads; }
  void execute(const Model& s0, Session& session) const override {
    const std::size_t big = std::max(s0.device_capacity / 8 / MiB * MiB, MiB);
    session.begin_call({cpp_text(big), python_text(big)});
    Context& context = session.context(0);
    ThreadReport report;
    report.threads = threads_;
    report.before = session.snapshot();
    std::mutex mutex;
    std::map<CUdeviceptr, std::pair<std::size_t, std::string>> live;          // guarded by mutex
    std::map<std::uintptr_t, std::pair<std::size_t, std::string>> host_live;  // by mutex
    std::string failure;                                                      // by mutex
    // +handoff: blocks one thread made, left for another to release (spec §8: releases on any
    // thread), while their maker goes on allocating beside them.
    std::vector<std::shared_ptr<MemoryPointer>> handoff;  // by mutex
    std::atomic<std::size_t> operations{0};
    std::atomic<int> waiting{threads_};
    auto note_failure = [&](std::string text) {
      std::lock_guard lock(mutex);
      if (failure.empty()) failure = std::move(text);
    };
    // Records [begin, begin + size) as live in `ranges`; the description of a live range it
    // overlaps, or "" (then it is recorded). Mutex held.
    auto claim = [](auto& ranges, std::uintptr_t begin, std::size_t size, std::string what) {
      auto next = ranges.lower_bound(begin);
      if (next != ranges.end() && next->first < begin + size) return next->second.second;
      if (next != ranges.begin()) {
        auto before = std::prev(next);
        if (before->first + before->second.first > begin) return before->second.second;
      }
      ranges[begin] = {size, std::move(what)};
      return std::string();
    };
    auto work = [&](int thread) {
      // Destroyed as the thread exits, after the thread_local state the plugin made on this
      // thread's first call (constructed later, so destroyed earlier).
      struct AtExit {
        std::vector<std::shared_ptr<MemoryPointer>> keep;
        std::function<void()> then;
        ~AtExit() {
          keep.clear();
          if (then) then();
        }
      };
      thread_local AtExit at_exit;
      std::mt19937 random(seed_ + static_cast<std::uint32_t>(thread) * 7919u);
      std::vector<std::shared_ptr<MemoryPointer>> mine;
      struct Host {
        HostAllocation allocation;
        std::byte* bytes;
        std::size_t size;
        std::uint64_t tag;
        bool pinned_range;  // mempin of this thread's buffer, else memhostalloc
      };
      std::vector<Host> hosts;
      // mempin's range lies in this buffer, one live pin at a time: pins never share a page
      // (the driver refuses overlapping registrations), the buffer being pages of its own.
      std::shared_ptr<std::byte> buffer(
          static_cast<std::byte*>(std::aligned_alloc(kPinPage, kPinBufferPages * kPinPage)),
          [](std::byte* bytes) { std::free(bytes); });
      if (!buffer) {
        note_failure(str("thread ", thread, ": the harness could not allocate its pin buffer"));
        return;
      }
      CleanupGuard guard;
      try {
        context.make_current();  // CUDA's current context is per thread
      } catch (...) {
        note_failure(str("thread ", thread,
                         ": making the context current failed: ", describe_current_exception()));
      }
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      if (pressure_ && thread == 0) {
        // The device filled with large blocks until out of memory, three times, while the other
        // threads run: their calls meet out of memory, and the plugin's giving back of what it
        // keeps (spec §8 (c)) runs beside their allocations and releases.
        std::vector<std::shared_ptr<MemoryPointer>> blocks;
        for (int round = 0; round < 3; ++round) {
          try {
            while (blocks.size() < 16) blocks.push_back(context.memalloc(big));
          } catch (...) {
            if (!is_out_of_memory()) {
              note_failure(str("thread 0, filling the device with memalloc(", big,
                               ") blocks: ", describe_current_exception()));
              return;
            }
          }
          std::this_thread::yield();
          blocks.clear();
        }
        if (host_ && page_locked_ > 0) {
          // And page-locked memory, where its limit is known: the others' pinned requests meet
          // out of memory, and a pinned cache gives back what it keeps beside them.
          const std::size_t chunk = std::max(page_locked_ / 8, std::size_t{4096});
          std::vector<HostAllocation> pinned;
          for (int round = 0; round < 3; ++round) {
            try {
              while (pinned.size() < 16)
                pinned.push_back(context.memhostalloc(chunk, false, false, false));
            } catch (...) {
              if (!is_out_of_memory()) {
                note_failure(str("thread 0, filling page-locked memory with memhostalloc(", chunk,
                                 ") blocks: ", describe_current_exception()));
                return;
              }
            }
            std::this_thread::yield();
            pinned.clear();
          }
        }
        return;
      }
      auto drop_host = [&](std::size_t index) {
        Host& host = hosts[index];
        std::uint64_t seen[2] = {0, 0};
        std::memcpy(&seen[0], host.bytes, 8);
        std::memcpy(&seen[1], host.bytes + host.size - 8, 8);
        if (seen[0] != host.tag || seen[1] != host.tag) {
          note_failure(str("thread ", thread, "'s live ",
                           host.pinned_range ? "mempin" : "memhostalloc", "(", host.size, ") at ",
                           hex(reinterpret_cast<std::uintptr_t>(host.bytes)),
                           " lost its bytes (tag ", hex(host.tag), ", seen ", hex(seen[0]), "/",
                           hex(seen[1]), "): another thread was given the same memory"));
        }
        {
          std::lock_guard lock(mutex);
          if (!host.pinned_range) host_live.erase(reinterpret_cast<std::uintptr_t>(host.bytes));
        }
        std::swap(hosts[index], hosts.back());
        hosts.pop_back();
      };
      auto host_step = [&](int i) {
        if (!hosts.empty() && (hosts.size() >= 3 || random() % 2 == 0)) {
          drop_host(random() % hosts.size());
          return;
        }
        const bool pin =
            random() % 2 == 0 &&
            std::none_of(hosts.begin(), hosts.end(), [](const Host& h) { return h.pinned_range; });
        const std::size_t size = 16 + random() % (pin ? 2 * kPinPage : 3 * kPinPage);
        HostAllocation allocation;
        std::byte* bytes = nullptr;
        if (pin) {
          bytes = buffer.get() + 1 + random() % (kPinPage - 1);  // not page-aligned
          allocation = context.mempin(buffer, bytes, size);
        } else {
          const bool portable = random() % 2 == 0;
          const bool wc = random() % 4 == 0;
          try {
            allocation = context.memhostalloc(size, false, portable, wc);
          } catch (...) {
            if (!is_out_of_memory()) throw;
            // As for memalloc below: another thread may be giving back the pinned memory the
            // plugin kept; out of memory counts when it lasts.
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            allocation = context.memhostalloc(size, false, portable, wc);
          }
          bytes = static_cast<std::byte*>(allocation.host_pointer());
        }
        if (allocation.empty() || bytes == nullptr) {
          note_failure(str("thread ", thread, ": ", pin ? "mempin" : "memhostalloc", "(", size,
                           ") returned an empty allocation"));
          return;
        }
        if (!pin) {
          std::lock_guard lock(mutex);
          const std::string clash =
              claim(host_live, reinterpret_cast<std::uintptr_t>(bytes), size,
                    str("thread ", thread, "'s live memhostalloc(", size, ") at ",
                        hex(reinterpret_cast<std::uintptr_t>(bytes))));
          if (!clash.empty() && failure.empty()) {
            failure = str("thread ", thread, "'s memhostalloc(", size, ") = [",
                          hex(reinterpret_cast<std::uintptr_t>(bytes)), ", ",
                          hex(reinterpret_cast<std::uintptr_t>(bytes) + size), ") overlaps ", clash,
                          ", live at the same time: two threads were given the same "
                          "pinned memory");
          }
        }
        const std::uint64_t tag = (std::uint64_t(thread + 1) << 48) | (0x4000u + std::uint64_t(i));
        std::memcpy(bytes, &tag, 8);
        std::memcpy(bytes + size - 8, &tag, 8);
        hosts.push_back({std::move(allocation), bytes, size, tag, pin});
      };
      for (int i = 0; i < operations_; ++i) {
        const unsigned pick = random() % 16;
        try {
          if (handoff_ && pick == 4) {
            // Release a block another thread made (its last reference goes here).
            std::shared_ptr<MemoryPointer> theirs;
            {
              std::lock_guard lock(mutex);
              if (!handoff.empty()) {
                theirs = std::move(handoff.back());
                handoff.pop_back();
                live.erase(theirs->device_pointer());
              }
            }
            theirs.reset();
          } else if (guards_ && pick == 0) {
            if (guard.active()) {
              guard.release();
            } else {
              guard = context.defer_cleanup();
            }
          } else if (host_ && (pick == 1 || (pressure_ && pick == 5))) {
            host_step(i);
          } else if (info_ && pick == 2) {
            // Its figures are INFO-1's to judge, between commands: figures read while other
            // threads allocate may be of no single moment. Here it is a path a lock guards.
            (void)context.get_memory_info();
          } else if (ipc_ && pick == 3 && !mine.empty()) {
            (void)context.get_ipc_handle(mine[random() % mine.size()]);
          } else if (mine.empty() || (mine.size() < 8 && random() % 3 != 0)) {
            const std::size_t size =
                random() % 5 == 0 ? 4096 + 1 + random() % 65536 : 16 * (1 + random() % 128);
            std::shared_ptr<MemoryPointer> memory;
            try {
              memory = context.memalloc(size);
            } catch (...) {
              if (!is_out_of_memory()) throw;
              // Another thread may be giving back what the plugin kept (the device full from
              // an earlier command): out of memory counts when it lasts, not for a moment.
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              memory = context.memalloc(size);
            }
            if (!memory || memory->device_pointer() == 0) {
              note_failure(str("thread ", thread, ": memalloc(", size, ") returned null"));
              return;
            }
            const CUdeviceptr pointer = memory->device_pointer();
            {
              std::lock_guard lock(mutex);
              const std::string clash =
                  claim(live, pointer, size,
                        str("thread ", thread, "'s live memalloc(", size, ") at ", hex(pointer)));
              if (!clash.empty()) {
                if (failure.empty()) {
                  failure = str("thread ", thread, "'s memalloc(", size, ") = [", hex(pointer),
                                ", ", hex(pointer + size), ") overlaps ", clash,
                                ", live at the same time: two threads were given the same memory");
                }
                return;
              }
            }
            if (random() % 4 == 0) {
              auto view = memory->view(std::min<std::size_t>(16, size));  // refct up and down
            }
            mine.push_back(std::move(memory));
          } else {
            const std::size_t victim = random() % mine.size();
            {
              std::lock_guard lock(mutex);
              if (handoff_ && random() % 3 == 0) {
                handoff.push_back(std::move(mine[victim]));  // still live: another releases it
              } else {
                live.erase(mine[victim]->device_pointer());
              }
            }
            std::swap(mine[victim], mine.back());
            mine.pop_back();
          }
          operations.fetch_add(1);
        } catch (...) {
          // Out of memory is no failure while thread 0 holds the device, nor while any thread
          // may hold a defer_cleanup scope, inside which the plugin must not give back what it
          // keeps (spec §8: rule (c) does not bind there).
          if ((pressure_ || guards_) && is_out_of_memory()) continue;
          note_failure(
              str("thread ", thread, " (operation ", i, "): ", describe_current_exception()));
          return;
        }
      }
      try {
        while (!hosts.empty()) drop_host(hosts.size() - 1);
        guard.release();
      } catch (...) {
        note_failure(str("thread ", thread, ": ", describe_current_exception()));
      }
      std::lock_guard lock(mutex);
      for (const auto& memory : mine) live.erase(memory->device_pointer());
      if (at_exit_) {
        // The last references go as the thread exits, and one more block is asked for then.
        at_exit.keep = std::move(mine);
        const bool may_be_full = pressure_ || guards_;  // as in the loop above
        at_exit.then = [&context, &note_failure, thread, may_be_full] {
          try {
            std::shared_ptr<MemoryPointer> late = context.memalloc(4096 + 16);
            late.reset();
          } catch (...) {
            if (may_be_full && is_out_of_memory()) return;
            note_failure(str("thread ", thread, " at its exit (a thread_local destructor): ",
                             describe_current_exception()));
          }
        };
      }
      mine.clear();
    };
    std::vector<std::thread> workers;
    workers.reserve(static_cast<std::size_t>(threads_));
    for (int thread = 0; thread < threads_; ++thread) workers.emplace_back(work, thread);
    for (std::thread& worker : workers) worker.join();
    context.make_current();
    handoff.clear();  // what no thread took: released here
    if (pressure_ && host_ && page_locked_ > 0) {
      // Thread 0's pinned fill may wait in the HostOnly queue, whose non-mapped frees Numba
      // does not flush on out of memory (spec §2.4): the host's flush point, so that the
      // commands after this one do not start with page-locked memory full (the reproducer's
      // text of the command says so).
      flush_point(session, context, false);
    }
    report.operations = operations.load();
    report.failure = failure;
    report.after = session.snapshot();
    session.property().threads(session, report);
  }

 private:
  std::string extras_cpp() const {
    std::string text;
    if (guards_)
      text += "    // 1 in 16: open or end this thread's context().defer_cleanup() scope\n";
    if (host_) {
      text +=
          "    // 1 in 16: memhostalloc(16..12304, false, portable?, wc?) or mempin of an\n"
          "    //          unaligned range of this thread's buffer, or release one (<= 3 "
          "live)\n";
    }
    if (info_) text += "    // 1 in 16: context().get_memory_info()\n";
    if (ipc_) text += "    // 1 in 16: context().get_ipc_handle(one of live)\n";
    if (handoff_) {
      text +=
          "    // 1 in 3 releases: leave the block for another thread, which releases it (1 in "
          "16)\n";
    }
    return text;
  }
  std::string cpp_text(std::size_t big) const {
    return str(
        "std::vector<std::thread> threads;  // ", threads_, " threads at once, ", operations_,
        " operations each:\nfor (int t = 0; t < ", threads_,
        "; ++t) threads.emplace_back([&, t] {\n",
        pressure_
            ? str("  if (t == 0) { /* 3 times: memalloc(", big,
                  ") until out of memory, then release them all",
                  host_ && page_locked_ > 0 ? str("; then the same with memhostalloc(",
                                                  std::max(page_locked_ / 8, std::size_t{4096}),
                                                  "), and the host's flush point after the join")
                                            : std::string(),
                  " */ return; }\n"
                  "  // (the others may meet out of memory meanwhile)\n")
            : std::string(),
        at_exit_ ? "  thread_local Keep at_exit;  // its destructor drops `live` and calls "
                   "memalloc(4112) as the thread exits\n"
                 : "",
        "  context().make_current();\n"
        "  std::vector<std::shared_ptr<emm::MemoryPointer>> live;\n  for (int i = 0; i < ",
        operations_, "; ++i) {\n", extras_cpp(),
        "    if (live.size() < 8 && (i + t) % 3 != 0) "
        "live.push_back(context().memalloc(16 * (1 + (i * 7 + t) % 128)));\n"
        "    else if (!live.empty()) live.erase(live.begin() + (i % live.size()));\n  }\n",
        at_exit_ ? "  at_exit.live = std::move(live);\n" : "",
        "});\nfor (auto& thread : threads) thread.join();  // no two live blocks may overlap");
  }
  std::string python_text(std::size_t big) const {
    return str(
        pressure_ ? str("# thread 0: 3 times ctx.memalloc(", big,
                        ") until out of memory, then del them all\n")
                  : std::string(),
        "def _work(t):\n    live = []\n    for i in range(", operations_,
        "):\n        if len(live) < 8 and (i + t) % 3:\n            "
        "live.append(ctx.memalloc(16 * "
        "(1 + (i * 7 + t) % 128)))\n        elif live:\n            del live[i % len(live)]\n",
        guards_ || host_ || info_ || ipc_
            ? "        # and now and then: defer_cleanup scopes, memhostalloc/mempin, "
              "get_memory_info(), get_ipc_handle()\n"
            : "",
        "_ts = [threading.Thread(target=_work, args=(t,)) for t in range(", threads_,
        ")]\nfor _t in _ts: _t.start()\nfor _t in _ts: _t.join()");
  }

  // Each thread's mempin buffer: pages of its own, large enough for a range of up to two pages
  // and 16 bytes starting anywhere in the first page.
  static constexpr std::size_t kPinPage = 4096;
  static constexpr std::size_t kPinBufferPages = 4;

  int threads_;
  int operations_;
  std::uint32_t seed_;
  bool guards_;
  bool host_;
  bool info_;
  bool ipc_;
  bool at_exit_;
  bool handoff_;             // some blocks are released by a thread other than their maker
  std::size_t page_locked_;  // Plan::page_locked_capacity: +full +pinned fills it too
  bool pressure_;            // thread 0 fills the device while the others run
};

// reset() on this thread while 2-4 other threads drop every reference to the live device memory
// of device 0, all released at once after a barrier: what a host meets when a garbage collector
// finalizes pointers on its own threads while the context is reset (finalizers racing the
// plugin's reset(), LIFE-8; a lock that only reset() skips, ALLOC-10). Which releases come
// before the reset and which after depends on the threads, so no per-release hook runs: the
// command reports to Property::threads.
class ResetWhileReleasing final : public EngineCommand {
 public:
  ResetWhileReleasing(const Model&, const Plan&) : threads_(*uniform(2, 5)) {}
  void checkPreconditions(const Model& model) const override { require(!releasing(model).empty()); }
  void apply(Model& model) const override {
    const std::vector<std::size_t> indices = releasing(model);
    for (auto index = indices.rbegin(); index != indices.rend(); ++index) {
      model.drop_reference(*index);
    }
    model.orphan(0);
    model.used[0] = true;
  }
  void show(std::ostream& os) const override { os << "reset while " << threads_ << " release"; }
  CommandKind kind() const override { return CommandKind::reset_releasing; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const std::vector<std::size_t> indices = releasing(s0);
    std::string names;
    for (const std::size_t index : indices) {
      const ModelReference& reference = s0.references[index];
      if (!names.empty()) names += ", ";
      names += reference_name(*s0.find(reference.allocation), reference);
    }
    session.begin_call(
        {str("// ", names, " released on ", threads_,
             " threads while context().reset() runs:\nstd::vector<std::thread> threads;  // each "
             "takes some of the references and drops them at once\ncontext().reset();\nfor "
             "(auto& thread : threads) thread.join();"),
         str("# ", names, " released on ", threads_, " threads while ctx.reset() runs")});
    Context& context = session.context(0);
    ThreadReport report;
    report.threads = threads_;
    report.before = session.snapshot();
    std::vector<std::vector<Session::Held>> shares(static_cast<std::size_t>(threads_));
    std::vector<Session::Held>& references = session.references();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      shares[i % shares.size()].push_back(std::move(references[indices[i]]));
    }
    for (auto index = indices.rbegin(); index != indices.rend(); ++index) {
      references.erase(references.begin() + static_cast<long>(*index));
    }
    std::atomic<int> waiting{threads_ + 1};
    std::vector<std::thread> workers;
    for (auto& share : shares) {
      workers.emplace_back([&waiting, mine = std::move(share)]() mutable {
        waiting.fetch_sub(1);
        while (waiting.load() > 0) std::this_thread::yield();
        mine.clear();
      });
    }
    waiting.fetch_sub(1);
    while (waiting.load() > 0) std::this_thread::yield();
    try {
      context.reset();
    } catch (...) {
      report.failure = "reset() threw " + describe_current_exception();
    }
    for (std::thread& worker : workers) worker.join();
    session.note_lifecycle(0, "reset()");
    for (const ModelAllocation& allocation : s0.allocations) {
      if (allocation.device != 0) continue;
      Allocation& record = session.allocation(allocation.id);
      record.orphaned = true;
      if (on_device(allocation.source)) record.released = true;
    }
    report.operations = indices.size();
    report.after = session.snapshot();
    session.property().threads(session, report);
  }

 private:
  // The references to live device memory of device 0 (memalloc, memallocmanaged).
  static std::vector<std::size_t> releasing(const Model& model) {
    std::vector<std::size_t> indices;
    for (std::size_t i = 0; i < model.references.size(); ++i) {
      const ModelAllocation* allocation = model.find(model.references[i].allocation);
      if (allocation != nullptr && allocation->device == 0 && !allocation->orphaned &&
          on_device(allocation->source)) {
        indices.push_back(i);
      }
    }
    return indices;
  }

  int threads_;
};

// --- generation
// -------------------------------------------------------------------------------------

template <class C>
rc::Gen<CommandPtr> make(const Model& model, const Plan& plan) {
  return rc::gen::exec(
      [model, plan]() -> CommandPtr { return std::make_shared<const C>(model, plan); });
}

// Whether a command of `kind` can be made for `model` at all (the generator is not asked for
// one that cannot).
bool feasible(CommandKind kind, const Model& model, const Plan& plan) {
  auto pointer_references = [&] {
    return std::any_of(model.references.begin(), model.references.end(),
                       [&](const ModelReference& r) {
                         const ModelAllocation* a = model.find(r.allocation);
                         return a != nullptr && a->usable();
                       });
  };
  switch (kind) {
    case CommandKind::reference:
    case CommandKind::verify:
    case CommandKind::export_ipc:
      return pointer_references();
    case CommandKind::release:
      return !model.references.empty();
    case CommandKind::free:
      return std::any_of(model.references.begin(), model.references.end(),
                         [&](const ModelReference& r) {
                           const ModelAllocation* a = model.find(r.allocation);
                           return a != nullptr && Free::freeable(*a, r);
                         });
    case CommandKind::exit_guard:
      return !model.guards.empty();
    case CommandKind::mempin:
      return model.buffers > 0;
    case CommandKind::flush:
      return plan.capabilities.host_only_derived;
    case CommandKind::fill:
      return model.references.empty() && model.guards.empty();
    case CommandKind::fill_host:
      return plan.page_locked_capacity > 0 && model.references.empty() && model.guards.empty();
    case CommandKind::reset_in_scope:
      return model.references.empty() && model.guards.empty();
    case CommandKind::first_use:
      return plan.capabilities.thread_safe && model.references.empty() && model.guards.empty();
    case CommandKind::reset_releasing:
      return std::any_of(model.allocations.begin(), model.allocations.end(),
                         [](const ModelAllocation& a) {
                           return a.device == 0 && !a.orphaned && on_device(a.source);
                         });
    default:
      return true;
  }
}

rc::Gen<CommandPtr> generator_for(CommandKind kind, const Model& model, const Plan& plan) {
  switch (kind) {
    case CommandKind::memalloc:
      return make<Memalloc>(model, plan);
    case CommandKind::burst:
      return make<Burst>(model, plan);
    case CommandKind::memallocmanaged:
      return make<Memallocmanaged>(model, plan);
    case CommandKind::memhostalloc:
      return make<Memhostalloc>(model, plan);
    case CommandKind::mempin:
      return make<Mempin>(model, plan);
    case CommandKind::reference:
      return make<TakeReference>(model, plan);
    case CommandKind::release:
      return make<Release>(model, plan);
    case CommandKind::free:
      return make<Free>(model, plan);
    case CommandKind::verify:
      return make<Verify>(model, plan);
    case CommandKind::initialize:
      return make<Initialize>(model, plan);
    case CommandKind::reset:
      return make<Reset>(model, plan);
    case CommandKind::flush:
      return make<Flush>(model, plan);
    case CommandKind::enter_guard:
      return make<EnterGuard>(model, plan);
    case CommandKind::exit_guard:
      return make<ExitGuard>(model, plan);
    case CommandKind::close:
      return make<Close>(model, plan);
    case CommandKind::memory_info:
      return make<QueryMemoryInfo>(model, plan);
    case CommandKind::export_ipc:
      return make<ExportIpc>(model, plan);
    case CommandKind::interface_version:
      return make<InterfaceVersion>(model, plan);
    case CommandKind::probe_instance:
      return make<ProbeInstance>(model, plan);
    case CommandKind::out_of_memory:
      return make<RequestTooLarge>(model, plan);
    case CommandKind::fill:
      return make<Fill>(model, plan);
    case CommandKind::fill_host:
      return make<FillHost>(model, plan);
    case CommandKind::reset_in_scope:
      return make<ResetInScope>(model, plan);
    case CommandKind::first_use:
      return make<FirstUse>(model, plan);
    case CommandKind::threads:
      return make<Threads>(model, plan);
    case CommandKind::reset_releasing:
      return make<ResetWhileReleasing>(model, plan);
  }
  return make<Memalloc>(model, plan);
}

}  // namespace

CommandKind kind_of(const Command& command) {
  return dynamic_cast<const EngineCommand&>(command).kind();
}

rc::Gen<std::size_t> allocation_sizes(std::size_t largest, bool now_and_then_larger) {
  const int top = std::bit_width(largest) - 1;  // 2^top <= largest
  // Now and then a large block, up to 8 times the largest: the paths a plugin keeps for
  // requests beyond its pools (dedicated blocks, other pointer types).
  const int larger = now_and_then_larger ? 1 : 0;
  return rc::gen::weightedOneOf<std::size_t>({
      {4, uniform<std::size_t>(1, 129)},  // 1 and small sizes
      {2, rc::gen::map(uniform<std::size_t>(0, 2048),
                       [](std::size_t k) { return 2 * k + 1; })},  // odd sizes
      {3, rc::gen::map(uniform(0, top + 1),
                       [](int k) { return std::size_t{1} << k; })},  // powers of two
      {3, rc::gen::map(rc::gen::pair(uniform(1, top + 1), rc::gen::arbitrary<bool>()),
                       [](const std::pair<int, bool>& k) {
                         const std::size_t power = std::size_t{1} << k.first;
                         return k.second ? power + 1 : power - 1;
                       })},  // 2^k +- 1
      {2, rc::gen::map(uniform<std::size_t>(1, 257),
                       [](std::size_t k) { return k * 4096; })},  // page multiples
      {1, uniform<std::size_t>(1, largest + 1)},                  // anything up to the largest
      {static_cast<std::size_t>(larger),
       rc::gen::map(uniform<std::size_t>(1, 9),
                    [largest](std::size_t k) { return k * largest + (k % 2); })},
  });
}

rc::Gen<CommandPtr> make_command_generator(const Model& model, const std::vector<Weighted>& mix,
                                           const Plan& plan) {
  std::vector<std::pair<CommandKind, int>> possible;
  int total = 0;
  for (const Weighted& entry : mix) {
    if (entry.weight <= 0 || !feasible(entry.kind, model, plan)) continue;
    possible.emplace_back(entry.kind, entry.weight);
    total += entry.weight;
  }
  if (possible.empty()) return make<Memalloc>(model, plan);
  // The choice shrinks towards the first command of the mix (properties list the simplest
  // first), then the command's own arguments shrink.
  return rc::gen::mapcat(uniform(0, total), [possible, model, plan](int pick) {
    for (const auto& [kind, weight] : possible) {
      if (pick < weight) return generator_for(kind, model, plan);
      pick -= weight;
    }
    return generator_for(possible.front().first, model, plan);
  });
}

}  // namespace emm::conformance::engine
