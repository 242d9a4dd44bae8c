// emm/examples/logging_memory_manager.hpp — Logging<Base>: a decorator plugin that records every
// call of the plugin it decorates in a CSV event log (csv_event_log.hpp).
//
// Logging<Base> *is* a Base whose EMM methods log around Base's. Two ways to use it:
//
//   // Decorate a plugin type: LoggingOver<P> is a P (a HostOnly-derived P stays HostOnly-derived,
//   // so DEFER-3 and the kit's flush points apply to it unchanged).
//   runtime.set_memory_manager<emm::examples::LoggingOver<emm::examples::PoolMemoryManager>>();
//
//   // Wrap an instance chosen at run time (ForwardingMemoryManager owns it):
//   runtime.set_memory_manager([](emm::Context* c) {
//     return std::make_unique<emm::examples::LoggingMemoryManager>(
//         emm::examples::LogTo{"/tmp/log.csv"}, c, std::make_unique<MyPlugin>(c));
//   });
//
// The log goes to LogTo's destination or, by default, CsvEventLog::default_destination()
// (EMM_LOGGING_PLUGIN_CSV, else /tmp/emm_logging_plugin.<pid>.csv). It is opened at the first
// event, so constructing the plugin (the version probe included) writes nothing.
//
// Pointers: memalloc returns a LoggedPointer — a plain MemoryPointer (refct 1) at the same
// address as the decorated plugin's pointer, which it keeps alive until its own finalizer runs;
// the decorated plugin therefore frees exactly when, and as often as, it would have (FIN-1), and
// the free is logged. get_ipc_handle hands the decorated plugin its own view of the same bytes
// and returns that plugin's handle and offset with the caller's view as the base (IPC-1). Host
// allocations and managed memory are returned as the decorated plugin made them (logged when
// made; a ManagedMemory stays one, MANAGED-1). The decorator
// makes no driver call of its own.
//
// Thread-safety: as Base's; the log is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "emm/context.hpp"
#include "emm/examples/csv_event_log.hpp"
#include "emm/examples/event_recorder.hpp"
#include "emm/examples/forwarding_memory_manager.hpp"
#include "emm/examples/logged_pointer.hpp"

namespace emm::examples {

// An explicit log destination ("stderr" or a file path) for Logging's constructor.
struct LogTo {
  std::string destination;
};

template <class Base>
class Logging : public Base {
 public:
  // Base(context, args...), logging to CsvEventLog::default_destination().
  template <class... Args>
  explicit Logging(Context* context, Args&&... args)
      : Logging(LogTo{CsvEventLog::default_destination()}, context, std::forward<Args>(args)...) {}
  // Base(context, args...), logging to `log.destination`.
  template <class... Args>
  Logging(LogTo log, Context* context, Args&&... args)
      : Base(context, std::forward<Args>(args)...),
        recorder_(std::make_shared<EventRecorder>(std::move(log.destination),
                                                  context != nullptr ? context->device() : -1)) {}

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    const std::int64_t start = CsvEventLog::now_ns();
    std::shared_ptr<MemoryPointer> inner;
    try {
      inner = Base::memalloc(size);
    } catch (...) {
      recorder_->record("memalloc_failed", std::nullopt, size, start, CsvEventLog::now_ns());
      throw;
    }
    recorder_->record("memalloc", address(inner->device_pointer()), size, start,
                      CsvEventLog::now_ns());
    return std::make_shared<LoggedPointer>(this->context(), std::move(inner), recorder_);
  }

  HostAllocation memhostalloc(std::size_t size, bool mapped = false, bool portable = false,
                              bool wc = false) override {
    const std::int64_t start = CsvEventLog::now_ns();
    HostAllocation allocation;
    try {
      allocation = Base::memhostalloc(size, mapped, portable, wc);
    } catch (...) {
      recorder_->record("memhostalloc_failed", std::nullopt, size, start, CsvEventLog::now_ns());
      throw;
    }
    recorder_->record("memhostalloc", address(allocation.host_pointer()), size, start,
                      CsvEventLog::now_ns());
    return allocation;
  }

  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size,
                                                 bool attach_global = true) override {
    const std::int64_t start = CsvEventLog::now_ns();
    std::shared_ptr<MemoryPointer> memory;
    try {
      memory = Base::memallocmanaged(size, attach_global);
    } catch (...) {
      recorder_->record("memallocmanaged_failed", std::nullopt, size, start, CsvEventLog::now_ns());
      throw;
    }
    recorder_->record("memallocmanaged", address(memory->device_pointer()), size, start,
                      CsvEventLog::now_ns());
    return memory;
  }

  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped = false) override {
    return recorder_->around("mempin", address(pointer), size,
                             [&] { return Base::mempin(std::move(owner), pointer, size, mapped); });
  }

  void initialize() override {
    recorder_->around("initialize", std::nullopt, std::nullopt, [&] { Base::initialize(); });
  }

  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    return recorder_->around(
        "get_ipc_handle", address(memory->device_pointer()), memory->size(), [&] {
          // Same addresses, so the decorated plugin's offset (view pointer
          // - its block base) is the one the caller's view needs.
          IpcHandle handle = Base::get_ipc_handle(LoggedPointer::inner_view(memory));
          return IpcHandle(memory, handle.handle(), handle.size(), handle.source_info(),
                           handle.offset());
        });
  }

  MemoryInfo get_memory_info() override {
    const std::int64_t start = CsvEventLog::now_ns();
    MemoryInfo info;
    try {
      info = Base::get_memory_info();
    } catch (...) {
      recorder_->record("get_memory_info_failed", std::nullopt, std::nullopt, start,
                        CsvEventLog::now_ns());
      throw;
    }
    recorder_->record("get_memory_info", std::nullopt, std::nullopt, start, CsvEventLog::now_ns(),
                      info);
    return info;
  }

  void reset() override {
    recorder_->around("reset", std::nullopt, std::nullopt, [&] { Base::reset(); });
  }

  // Holds Base's guard for the whole scope (NBEP 7, DEFER-3 when Base is HostOnly-derived).
  CleanupGuard defer_cleanup() override {
    auto inner = std::make_shared<CleanupGuard>(recorder_->around(
        "defer_cleanup_enter", std::nullopt, std::nullopt, [&] { return Base::defer_cleanup(); }));
    // The exit event spans Base's own exit (a pool may give slabs back there).
    return CleanupGuard([inner, recorder = recorder_] {
      const std::int64_t start = CsvEventLog::now_ns();
      inner->release();
      recorder->record("defer_cleanup_exit", std::nullopt, std::nullopt, start,
                       CsvEventLog::now_ns());
    });
  }

  const std::string& log_destination() const noexcept { return recorder_->destination(); }

 private:
  static std::uintptr_t address(CUdeviceptr pointer) {
    return static_cast<std::uintptr_t>(pointer);
  }
  static std::uintptr_t address(const void* pointer) {
    return reinterpret_cast<std::uintptr_t>(pointer);
  }

  std::shared_ptr<EventRecorder> recorder_;
};

// Logging decorating a plugin type: a P with every call logged.
template <class Plugin>
using LoggingOver = Logging<Plugin>;

// Logging wrapping a plugin instance chosen at run time:
// LoggingMemoryManager([LogTo{...},] context, std::unique_ptr<BaseCUDAMemoryManager> inner).
using LoggingMemoryManager = Logging<ForwardingMemoryManager>;

}  // namespace emm::examples
