#include "engine/session.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/host_only_base.hpp"
#include "emm/errors.hpp"
#include "engine/property.hpp"

namespace emm::conformance::engine {
namespace {

constexpr std::size_t kHostPage = 4096;
constexpr std::size_t kWholeUpTo = 256;
constexpr std::size_t kWindow = 64;

std::uint64_t mix(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> pattern_windows(std::size_t size) {
  if (size <= kWholeUpTo) return {{0, size}};
  return {{0, kWindow}, {size / 2 - kWindow / 2, kWindow}, {size - kWindow, kWindow}};
}

std::vector<std::byte> pattern_bytes(std::uint64_t seed, std::size_t offset, std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t at = offset + i;
    bytes[i] = static_cast<std::byte>(mix(seed ^ (at >> 3) * 0x100000001B3ull) >> ((at & 7) * 8));
  }
  return bytes;
}

std::uintptr_t Allocation::address() const noexcept {
  if (model.source == Source::memhostalloc || model.source == Source::mempin) {
    return reinterpret_cast<std::uintptr_t>(host_pointer);
  }
  return static_cast<std::uintptr_t>(device_pointer);
}

struct Session::Buffer {
  std::shared_ptr<std::byte> memory;
  std::size_t size = 0;
};

Session::Session(ClauseRun& run, const Property& property, const Model& initial, Trace& trace)
    : run_(run),
      property_(property),
      trace_(trace),
      bare_(property.start() == Start::bare),
      devices_(initial.devices),
      capture_(std::make_unique<Diagnostics::Capture>(true)) {
  trace_.devices = devices_;
  trace_.bare = bare_;
  for (int i = 0; i < initial.buffers; ++i) {
    auto* raw = static_cast<std::byte*>(std::aligned_alloc(kHostPage, initial.buffer_size));
    if (raw == nullptr) throw std::bad_alloc();
    std::memset(raw, 0, initial.buffer_size);
    auto buffer = std::make_shared<Buffer>();
    buffer->memory = std::shared_ptr<std::byte>(raw, [](std::byte* p) { std::free(p); });
    buffer->size = initial.buffer_size;
    buffers_.push_back(std::move(buffer));
  }
  buffer_size_ = initial.buffer_size;
  baseline_ = snapshot();
  runtime_ = make_runtime();
  Driver& driver = run_.driver();
  contexts_ = property.start() == Start::none ? 0 : devices_;
  for (int device = 0; device < contexts_; ++device) {
    if (!bare_) {
      try {
        runtime_->get_context(device);
      } catch (...) {
        fail(str("creating device ", device,
                 "'s context (which constructs the plugin, then calls initialize()) threw ",
                 describe_current_exception()));
      }
      continue;
    }
    // LIFE-4: the host constructs the plugin while no context is current.
    const CUcontext handle = driver.primary_ctx_retain(device);
    retained_.push_back(handle);
    if (driver.ctx_get_current() != nullptr) driver.ctx_set_current(nullptr);
    try {
      bare_contexts_[device] = std::make_unique<Context>(
          *runtime_, device, handle, run_.subject().factory, runtime_->dealloc_config());
    } catch (...) {
      fail(str("constructing the plugin for device ", device,
               "'s context while no context is current threw ", describe_current_exception(),
               " (a plugin must make no CUDA call in its constructor; do that work in "
               "initialize())"));
    }
  }
}

Session::~Session() { release_everything(); }

void Session::finish() {
  while (!guards_.empty()) {
    HeldGuard leaving = std::move(guards_.back());
    guards_.pop_back();
    begin_call(
        {str("g", leaving.id, ".release();"), str("g", leaving.id, ".__exit__(None, None, None)")});
    context(leaving.device);
    const Snapshot before = snapshot();
    leaving.guard.release();
    property_.guard_exited(*this, leaving.device, before);
  }
  while (!references_.empty()) {
    Held dropping = std::move(references_.back());
    references_.pop_back();
    const int id = dropping.allocation;
    const bool pointer = dropping.pointer != nullptr;
    begin_call({pointer ? str(dropping.name, ".reset();")
                        : str(dropping.name, " = emm::HostAllocation();"),
                str("del ", dropping.name)});
    dropping = Held{};
    const bool last = std::none_of(references_.begin(), references_.end(),
                                   [&](const Held& held) { return held.allocation == id; });
    Allocation& record = allocation(id);
    if (last) record.released = true;
    property_.released(*this, record, last);
  }
  const bool host_only = capabilities().host_only_derived;
  for (int device = 0; device < contexts_ && host_only; ++device) {
    begin_call({str("dynamic_cast<emm::HostOnlyCUDAMemoryManager&>(",
                    device == 0 ? "context()" : "context(1)",
                    ".memory_manager()).deallocations().clear();  // the host's flush point"),
                str(device == 0 ? "ctx" : "ctx1",
                    ".memory_manager.deallocations.clear()  # the host's flush point")});
    Context& flushing = context(device);
    const Snapshot before = snapshot();
    if (const std::optional<HostOnlyBase> base = HostOnlyBase::of(flushing.memory_manager())) {
      try {
        base->flush();
      } catch (...) {
        fail_thrown("the deferred frees to run");
      }
    }
    property_.flushed(*this, device, before);
  }
  const Snapshot at_rest = snapshot();
  property_.settled(*this);
  for (int device = 0; device < contexts_; ++device) {
    begin_call({str(device == 0 ? "context()" : "context(1)", ".reset();"),
                str(device == 0 ? "ctx" : "ctx1", ".reset()")});
    try {
      context(device).reset();
    } catch (...) {
      fail_thrown("reset() to return (the plugin's reset() releases what it holds)");
    }
  }
  for (auto& [id, record] : allocations_) record.orphaned = true;
  property_.torn_down(*this, at_rest);
}

void Session::release_everything() noexcept {
  try {
    while (!guards_.empty()) {
      guards_.back().guard.release();
      guards_.pop_back();
    }
    while (!references_.empty()) references_.pop_back();
  } catch (...) {
  }
  for (auto& [device, context] : bare_contexts_) {
    try {
      context->reset();
    } catch (...) {
    }
    try {
      context.reset();
    } catch (...) {
    }
  }
  bare_contexts_.clear();
  Driver& driver = run_.driver();
  for (std::size_t device = 0; device < retained_.size(); ++device) {
    try {
      if (driver.ctx_get_current() == retained_[device]) driver.ctx_set_current(nullptr);
      driver.primary_ctx_release(static_cast<int>(device));
    } catch (...) {
    }
  }
  retained_.clear();
  try {
    if (runtime_) runtime_->close();
  } catch (...) {
  }
  runtime_.reset();
  // A plugin that leaves a range registered would make the next sequence's mempin of reused
  // buffer memory fail for a reason that is not that sequence's: undo it (LIFE-7 judges it).
  for (const auto& [id, allocation] : allocations_) {
    if (allocation.model.source != Source::mempin) continue;
    try {
      const std::optional<HostMemoryState> state =
          run_.backend().host_memory(allocation.host_pointer);
      if (!state || !state->page_locked) continue;
      void* start = state->range
                        ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(state->range->base))
                        : allocation.host_pointer;
      driver.mem_host_unregister(start);
    } catch (...) {
    }
  }
}

std::unique_ptr<Runtime> Session::make_runtime() { return run_.host().make_runtime(); }

Context& Session::context(int device) {
  if (bare_) {
    const auto found = bare_contexts_.find(device);
    if (found == bare_contexts_.end()) fail(str("device ", device, " has no context here"));
    found->second->make_current();
    return *found->second;
  }
  if (!runtime_) runtime_ = make_runtime();
  if (Context* existing = runtime_->find_context(device)) {
    existing->make_current();
    return *existing;
  }
  try {
    return runtime_->get_context(device);
  } catch (...) {
    fail(str("creating device ", device,
             "'s context (which constructs the plugin, then calls initialize()) threw ",
             describe_current_exception()));
  }
}

Runtime& Session::runtime() {
  if (!runtime_) runtime_ = make_runtime();
  return *runtime_;
}

void Session::close_runtime() {
  try {
    if (runtime_) runtime_->close();
  } catch (...) {
    fail_thrown(
        "Runtime::close() (every context reset, every plugin instance destroyed) to return");
  }
}

Allocation& Session::record(Allocation allocation) {
  allocation.seed = mix(static_cast<std::uint64_t>(allocation.model.id) * 0x2545F4914F6CDD1Dull);
  const int id = allocation.model.id;
  Allocation& recorded = allocations_.insert_or_assign(id, std::move(allocation)).first->second;
  by_address_.emplace(recorded.address(), id);
  largest_extent_ = std::max(largest_extent_, recorded.model.size);
  return recorded;
}

std::byte* Session::buffer(int index) const {
  return buffers_.at(static_cast<std::size_t>(index))->memory.get();
}

std::shared_ptr<void> Session::buffer_owner(int index) const {
  return buffers_.at(static_cast<std::size_t>(index))->memory;
}

void Session::begin_call(Call call) {
  if (trace_.on_call) trace_.on_call(call);
  trace_.calls.push_back(std::move(call));
}

void Session::fail(std::string_view what) {
  if (trace_.calls.empty()) {
    run_.fail(str("before the first call: ", what));
  }
  run_.fail(
      str("at call ", trace_.calls.size(), " (", first_line(trace_.calls.back().cpp), "): ", what));
}

void Session::fail(std::string_view what, std::string_view assertion_cpp,
                   std::string_view assertion_python) {
  trace_.assertion_cpp = std::string(assertion_cpp);
  trace_.assertion_python = std::string(assertion_python);
  fail(what);
}

void Session::fail_thrown(std::string_view expected) {
  const std::string thrown = describe_current_exception();
  fail(str("expected ", expected, "; it threw ", thrown));
}

std::optional<std::size_t> Session::leak_without(CommandKind kind) {
  if (!replay_) return std::nullopt;
  return replay_(kind);
}

std::optional<std::size_t> Session::leak_on_replay() {
  if (!replay_) return std::nullopt;
  return replay_(std::nullopt);
}

std::string Session::after_lifecycle(int device) const {
  const auto found = lifecycle_.find(device);
  if (found == lifecycle_.end()) return "";
  return str(" after ", found->second, " of device ", device, "'s context");
}

namespace {
// The windows of `allocation` that lie inside the driver block it was made in: a block smaller
// than the size asked for is the clause's to report (ALLOC-1, MANAGED-2), and writing past it
// would fail every other clause too.
std::vector<std::pair<std::size_t, std::size_t>> windows_within(const Allocation& allocation) {
  std::vector<std::pair<std::size_t, std::size_t>> windows = pattern_windows(allocation.model.size);
  if (!on_device(allocation.model.source) || !allocation.block) return windows;
  const CUdeviceptr end = allocation.block->base + allocation.block->size;
  std::vector<std::pair<std::size_t, std::size_t>> inside;
  for (const auto& [offset, size] : windows) {
    const CUdeviceptr start = allocation.device_pointer + offset;
    if (start >= end) continue;
    inside.emplace_back(offset, std::min<std::size_t>(size, end - start));
  }
  return inside;
}
}  // namespace

Snapshot Session::snapshot() {
  Backend& backend = run_.backend();
  Snapshot now;
  now.device_bytes = backend.device_bytes_in_use();
  now.host_allocations = backend.host_allocation_count();
  now.host_registrations = backend.host_registration_count();
  now.invalid_frees = backend.invalid_frees();
  now.driver_frees = backend.driver_frees();
  return now;
}

const Allocation* Session::overlapping(const Allocation& self) const {
  const std::uintptr_t begin = self.address();
  const std::uintptr_t end = begin + std::max<std::size_t>(self.model.size, 1);
  // Every block starting before `end` and less than the largest extent before `begin`.
  const std::uintptr_t lowest = begin > largest_extent_ ? begin - largest_extent_ : 0;
  auto it = by_address_.lower_bound(end);
  while (it != by_address_.begin()) {
    --it;
    if (it->first < lowest) break;
    const auto found = allocations_.find(it->second);
    const bool stale = found == allocations_.end() || found->second.released ||
                       found->second.orphaned || found->second.freed ||
                       found->second.address() != it->first;
    if (stale) {
      it = by_address_.erase(it);
      continue;
    }
    const Allocation& other = found->second;
    if (other.model.id == self.model.id) continue;
    const std::uintptr_t other_end = it->first + std::max<std::size_t>(other.model.size, 1);
    if (begin < other_end) return &other;
  }
  return nullptr;
}

void Session::write_pattern(Allocation& allocation) {
  for (const auto& [offset, size] : windows_within(allocation)) {
    const std::vector<std::byte> bytes = pattern_bytes(allocation.seed, offset, size);
    if (on_device(allocation.model.source)) {
      try {
        run_.driver().memcpy_htod(allocation.device_pointer + offset, bytes.data(), bytes.size());
      } catch (...) {
        fail(str("writing ", size, " bytes at offset ", offset, " of ", allocation.name, " = [",
                 hex(allocation.device_pointer), ", ",
                 hex(allocation.device_pointer + allocation.model.size),
                 ") failed: ", describe_current_exception(),
                 " (the memory returned must be readable and writable over the whole size "
                 "asked for)"));
      }
    } else {
      std::memcpy(static_cast<std::byte*>(allocation.host_pointer) + offset, bytes.data(),
                  bytes.size());
    }
  }
}

std::string Session::pattern_damage(const Allocation& allocation) {
  for (const auto& [offset, size] : windows_within(allocation)) {
    const std::vector<std::byte> expected = pattern_bytes(allocation.seed, offset, size);
    std::vector<std::byte> seen(size);
    if (on_device(allocation.model.source)) {
      try {
        run_.driver().memcpy_dtoh(seen.data(), allocation.device_pointer + offset, seen.size());
      } catch (...) {
        return str("reading ", size, " bytes at offset ", offset, " of ", allocation.name, " at ",
                   hex(allocation.device_pointer), " failed (", describe_current_exception(),
                   "): the memory is no longer allocated, freed while a reference to it is held");
      }
    } else {
      std::memcpy(seen.data(), static_cast<const std::byte*>(allocation.host_pointer) + offset,
                  seen.size());
    }
    const auto [seen_at, expected_at] = std::mismatch(seen.begin(), seen.end(), expected.begin());
    if (seen_at != seen.end()) {
      const std::size_t at = offset + static_cast<std::size_t>(seen_at - seen.begin());
      return str("byte ", at, " of ", allocation.name, " (", allocation.model.size, " bytes) is ",
                 hex(static_cast<unsigned>(*seen_at)), ", but ",
                 hex(static_cast<unsigned>(*expected_at)), " was written there");
    }
  }
  return "";
}

std::vector<DiagnosticEvent> Session::ignored_exceptions() {
  std::vector<DiagnosticEvent> fresh;
  std::vector<DiagnosticEvent> all = capture_->events();
  std::size_t seen = 0;
  for (DiagnosticEvent& event : all) {
    if (event.kind != DiagnosticEvent::Kind::ignored_exception) continue;
    if (++seen > exceptions_seen_) fresh.push_back(std::move(event));
  }
  exceptions_seen_ = seen;
  return fresh;
}

bool Session::finalized(const Allocation& allocation) {
  const bool host =
      allocation.model.source == Source::memhostalloc || allocation.model.source == Source::mempin;
  if (host && !allocation.reported_mapped) {
    const std::shared_ptr<PinnedMemory> pinned = allocation.pinned.lock();
    return !pinned || (pinned->is_managed() && !pinned->finalizer_alive());
  }
  const std::shared_ptr<MemoryPointer> base = allocation.base.lock();
  return !base || (base->is_managed() && !base->finalizer_alive());
}

}  // namespace emm::conformance::engine
