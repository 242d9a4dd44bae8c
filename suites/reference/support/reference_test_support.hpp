// reference_test_support.hpp — helpers shared by the reference system's own tests (suites/).
//
// * EMM_CLAUSE("REG-1"): records the clause id as a GoogleTest property and prefixes every
//   failure message of the test with it.
// * EMM_EXPECT_THROW(Type, statement, message): from <emm/conformance/testing/expect_throw.hpp>
//   (the statement must throw exactly `Type` whose what() is, or satisfies, `message`).
// * Journal + RecordingPlugin: a default manager that records every call made into it, in
//   order, per instance — the C++ counterpart of Numba's DeviceOnlyEMMPlugin spy.
//
// Test-only code; not thread-safe unless a member says so.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <emm/conformance/testing/expect_throw.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "emm/context.hpp"
#include "emm/errors.hpp"
#include "emm/numba_memory_manager.hpp"
#include "emm/runtime.hpp"

#define EMM_CLAUSE(id)                           \
  ::testing::Test::RecordProperty("clause", id); \
  SCOPED_TRACE("clause " id)

namespace emm::test {

// One call into a RecordingPlugin instance.
struct JournalEntry {
  int instance;      // 1, 2, ... in construction order (the version probe gets one too)
  Context* context;  // the instance's context (null for the probe)
  std::string what;  // "ctor", "initialize", "memalloc", "reset", "dtor", ...
};

// Everything the RecordingPlugin instances of one test did. Thread-safe.
class Journal {
 public:
  int next_instance() {
    std::lock_guard lock(mutex_);
    return ++instances_;
  }
  void add(int instance, Context* context, std::string what) {
    std::lock_guard lock(mutex_);
    entries_.push_back({instance, context, std::move(what)});
  }
  std::vector<JournalEntry> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  // The calls one instance received, in order.
  std::vector<std::string> calls(int instance) const {
    std::vector<std::string> out;
    for (const auto& e : entries()) {
      if (e.instance == instance) out.push_back(e.what);
    }
    return out;
  }
  // All calls named `what` (any instance).
  std::size_t count(const std::string& what) const {
    auto all = entries();
    return static_cast<std::size_t>(std::count_if(
        all.begin(), all.end(), [&](const JournalEntry& e) { return e.what == what; }));
  }
  // Instances constructed for a (non-null) context, in order.
  std::vector<int> instances_with_context() const {
    std::vector<int> out;
    for (const auto& e : entries()) {
      if (e.what == "ctor" && e.context != nullptr) out.push_back(e.instance);
    }
    return out;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
  }

 private:
  mutable std::mutex mutex_;
  int instances_ = 0;
  std::vector<JournalEntry> entries_;
};

// The default manager, recording each call (LIFE-3: memalloc before initialize throws, as
// Numba's DeviceOnlyEMMPlugin does). `on_reset` runs inside reset(), before the parent's.
class RecordingPlugin : public NumbaCUDAMemoryManager {
 public:
  RecordingPlugin(Context* context, std::shared_ptr<Journal> journal)
      : NumbaCUDAMemoryManager(context),
        journal_(std::move(journal)),
        instance_(journal_->next_instance()) {
    log("ctor");
  }
  ~RecordingPlugin() override { log("dtor"); }

  int instance() const noexcept { return instance_; }
  bool initialized() const noexcept { return initialized_; }
  std::function<void()> on_reset;

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    log("memalloc");
    if (!initialized_) throw std::logic_error("memalloc called before initialize");
    return NumbaCUDAMemoryManager::memalloc(size);
  }
  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override {
    log("memhostalloc");
    if (!initialized_) throw std::logic_error("memhostalloc called before initialize");
    return NumbaCUDAMemoryManager::memhostalloc(size, mapped, portable, wc);
  }
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped) override {
    log("mempin");
    if (!initialized_) throw std::logic_error("mempin called before initialize");
    return NumbaCUDAMemoryManager::mempin(std::move(owner), pointer, size, mapped);
  }
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size, bool attach_global) override {
    log("memallocmanaged");
    if (!initialized_) throw std::logic_error("memallocmanaged called before initialize");
    return NumbaCUDAMemoryManager::memallocmanaged(size, attach_global);
  }
  void initialize() override {
    log("initialize");
    in_initialize_ = true;  // the parent's own get_memory_info() call is not a host call
    NumbaCUDAMemoryManager::initialize();
    in_initialize_ = false;
    initialized_ = true;
  }
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    log("get_ipc_handle");
    if (!initialized_) throw std::logic_error("get_ipc_handle called before initialize");
    return NumbaCUDAMemoryManager::get_ipc_handle(memory);
  }
  MemoryInfo get_memory_info() override {
    if (!in_initialize_) log("get_memory_info");
    return NumbaCUDAMemoryManager::get_memory_info();
  }
  void reset() override {
    log("reset");
    if (on_reset) on_reset();
    NumbaCUDAMemoryManager::reset();
  }
  CleanupGuard defer_cleanup() override {
    log("defer_cleanup");
    if (!initialized_) throw std::logic_error("defer_cleanup called before initialize");
    return NumbaCUDAMemoryManager::defer_cleanup();
  }

 private:
  void log(std::string what) { journal_->add(instance_, context(), std::move(what)); }

  std::shared_ptr<Journal> journal_;
  int instance_;
  std::atomic<bool> initialized_{false};
  std::atomic<bool> in_initialize_{false};
};

inline ManagerFactory recording_factory(std::shared_ptr<Journal> journal) {
  return [journal](Context* context) -> std::unique_ptr<BaseCUDAMemoryManager> {
    return std::make_unique<RecordingPlugin>(context, journal);
  };
}

inline RecordingPlugin& recording_plugin(Context& context) {
  auto* plugin = dynamic_cast<RecordingPlugin*>(&context.memory_manager());
  if (plugin == nullptr) throw std::logic_error("the context's manager is not a RecordingPlugin");
  return *plugin;
}

inline HostOnlyCUDAMemoryManager& host_only(Context& context) {
  auto* manager = dynamic_cast<HostOnlyCUDAMemoryManager*>(&context.memory_manager());
  if (manager == nullptr) {
    throw std::logic_error("the context's manager is not a HostOnlyCUDAMemoryManager");
  }
  return *manager;
}

}  // namespace emm::test
