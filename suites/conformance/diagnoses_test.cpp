// Diagnoses point at the culprit: for each family of failure message, a small defective plugin
// run in-process through evaluate() on the fake backend, and the exact message it gets — the
// method that misbehaved and what was seen. A leak is blamed on the method that leaked, an
// overlap is called an overlap, an IPC handle's wrong field is named with the value expected,
// host memory's flags and page-locking are named as the driver reports them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <emm/conformance/evaluate.hpp>
#include <emm/context.hpp>
#include <emm/driver.hpp>
#include <emm/numba_memory_manager.hpp>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace emm::conformance {
namespace {

template <class Plugin>
PluginSubject subject() {
  const PluginDeclaration declaration{
      .name = "defective",
      .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true},
      .defer_cleanup_behaviour = "as the reference"};
  return PluginSubject{PluginDescription::from(complete_declaration<Plugin>(declaration)),
                       [](Context* c) -> std::unique_ptr<BaseCUDAMemoryManager> {
                         return std::make_unique<Plugin>(c);
                       }};
}

ClauseResult run(const PluginSubject& s, const char* id) {
  const Clause* clause = catalogue().find(id);
  if (clause == nullptr) throw std::runtime_error(std::string(id) + " is not in the catalogue");
  return evaluate_on(s, *clause, BackendKind::fake);
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --- leaks: blamed on the method that leaked ---------------------------------------------------

// Every get_memory_info() call takes 4 KiB of device memory and keeps it.
struct LeakyMemoryInfo : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  MemoryInfo get_memory_info() override {
    leaked_.push_back(driver().mem_alloc(4096));
    return NumbaCUDAMemoryManager::get_memory_info();
  }
  ~LeakyMemoryInfo() override {
    for (CUdeviceptr pointer : leaked_) driver().mem_free(pointer);
  }
  std::vector<CUdeviceptr> leaked_;
};

TEST(Diagnoses, LeakInGetMemoryInfoIsBlamedOnGetMemoryInfoNotInitialize) {
  const ClauseResult life = run(subject<LeakyMemoryInfo>(), "LIFE-2");
  EXPECT_EQ(life.outcome, Outcome::pass) << life.message;
  ASSERT_EQ(life.notes.size(), 1u);
  EXPECT_EQ(life.notes[0],
            "get_memory_info() itself took 4096 bytes of device memory (INFO-1 judges that); "
            "not counted against initialize()");
  const ClauseResult info = run(subject<LeakyMemoryInfo>(), "INFO-1");
  EXPECT_EQ(info.outcome, Outcome::fail);
  EXPECT_TRUE(starts_with(info.message,
                          "[INFO-1] after 64 get_memory_info() calls, 262144 bytes more device "
                          "memory are in use than before them ("))
      << info.message;
  EXPECT_TRUE(ends_with(info.message, "): get_memory_info() leaks device memory on every call"))
      << info.message;
}

// Every initialize() call takes 4 KiB and keeps it.
struct LeakyInitialize : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  void initialize() override {
    NumbaCUDAMemoryManager::initialize();
    leaked_.push_back(memalloc(4096));
  }
  std::vector<std::shared_ptr<MemoryPointer>> leaked_;
};

TEST(Diagnoses, LeakInInitializeIsBlamedOnInitialize) {
  const ClauseResult r = run(subject<LeakyInitialize>(), "LIFE-2");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_TRUE(starts_with(r.message,
                          "[LIFE-2] at call 1 (context().memory_manager().initialize();): "
                          "expected initialize() called again to take no memory; seen: "
                          "device memory in use went from "))
      << r.message;
  EXPECT_TRUE(ends_with(r.message,
                        " bytes: initialize() must not allocate per call (a pool or cache made "
                        "again on every call leaks)"))
      << r.message;
}

// --- reuse of live memory: an overlap, never "the finalizer ran" -------------------------------

// Requests of 8232 bytes (FIN-1's) all get the same memory, kept by the plugin: a live
// allocation's bytes are handed out again while the caller still holds them.
struct HandsOutLiveMemory : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    if (size != 8232) return NumbaCUDAMemoryManager::memalloc(size);
    if (!kept_) kept_ = NumbaCUDAMemoryManager::memalloc(size);
    return kept_->view(0);
  }
  void reset() override {
    kept_.reset();
    NumbaCUDAMemoryManager::reset();
  }
  std::shared_ptr<MemoryPointer> kept_;
};

TEST(Diagnoses, MemoryHandedOutTwiceIsAnOverlapNotAnEarlyFinalizer) {
  const ClauseResult r = run(subject<HandsOutLiveMemory>(), "FIN-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[FIN-1] a new memalloc(8232) at 0x200000000000000 overlaps the allocation at "
            "0x200000000000000 after dropping the pointer memalloc returned while a copy of it, "
            "its own(), its view(0), its view(1), its view(16, 4096)->view(8) still "
            "reference(s) it (drop order #1): the plugin handed out memory that is still in use "
            "(its finalizer has not run)");
}

// --- IPC handle fields ---------------------------------------------------------------------------

// Numba's "foreign" arrays: for memory whose owner() is not one of its allocations, the offset
// is taken from the owner.
struct ForeignOffsetFromOwner : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    const std::shared_ptr<MemoryPointer> owner = memory->owner();
    if (owner->is_managed()) return NumbaCUDAMemoryManager::get_ipc_handle(memory);
    return IpcHandle(memory, driver().ipc_get_mem_handle(owner->device_pointer()), memory->size(),
                     context()->device_identity(),
                     memory->device_pointer() - owner->device_pointer());
  }
};

TEST(Diagnoses, IpcOffsetFromTheOwnerNamesTheForeignViewAndTheExpectedOffset) {
  const ClauseResult r = run(subject<ForeignOffsetFromOwner>(), "IPC-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[IPC-1] at call 3 (auto handle3 = "
            "context().get_ipc_handle(std::make_shared<emm::MemoryPointer>(m1_view1->context(), "
            "m1_view1->device_pointer(), m1_view1->size()));  // opened in another process): "
            "expected get_ipc_handle(a foreign MemoryPointer over m1_view1).offset() to be 2048 = "
            "view pointer 0x200000000000800 - base 0x200000000000000 of the block the driver "
            "handle refers to; seen: 0 (take the offset from the driver block: an offset from the "
            "memory's owner() or from a pool's own bookkeeping is wrong for foreign views)");
}

struct HandleWithoutBase : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    IpcHandle handle = NumbaCUDAMemoryManager::get_ipc_handle(memory);
    return IpcHandle(nullptr, handle.handle(), handle.size(), handle.source_info(),
                     handle.offset());
  }
};

TEST(Diagnoses, IpcHandleWithoutBaseSaysWhatTheBaseIsFor) {
  const ClauseResult r = run(subject<HandleWithoutBase>(), "IPC-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[IPC-1] at call 2 (auto handle2 = "
            "context().get_ipc_handle(std::make_shared<emm::MemoryPointer>(m1->context(), "
            "m1->device_pointer(), m1->size()));  // opened in another process): expected "
            "get_ipc_handle(a foreign MemoryPointer over m1).base() to reference the exported "
            "memory; seen: null (pass `memory` as the base: it keeps the memory alive while the "
            "handle lives)");
}

struct HandleWithoutSourceInfo : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    IpcHandle handle = NumbaCUDAMemoryManager::get_ipc_handle(memory);
    return IpcHandle(memory, handle.handle(), handle.size(), std::nullopt, handle.offset());
  }
};

TEST(Diagnoses, IpcHandleWithoutSourceInfoSaysWhatItIsFor) {
  const ClauseResult r = run(subject<HandleWithoutSourceInfo>(), "IPC-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[IPC-1] at call 2 (auto handle2 = "
            "context().get_ipc_handle(std::make_shared<emm::MemoryPointer>(m1->context(), "
            "m1->device_pointer(), m1->size()));  // opened in another process): expected "
            "get_ipc_handle(a foreign MemoryPointer over m1).source_info() to be device 0's "
            "identity PCI 0:1:0; seen: none (the importer needs it to choose between a direct and "
            "a staged "
            "open)");
}

// --- host memory: flags and page-locking, as the driver reports them ---------------------------

struct DropsWriteCombined : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool) override {
    return NumbaCUDAMemoryManager::memhostalloc(size, mapped, portable, false);
  }
};

TEST(Diagnoses, MemhostallocDroppingAFlagNamesTheFlagsTheDriverSaw) {
  const ClauseResult r = run(subject<DropsWriteCombined>(), "ALLOC-6");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_TRUE(starts_with(r.message, "[ALLOC-6] at call 1 (auto h1 = context().memhostalloc("))
      << r.message;
  EXPECT_NE(r.message.find("wc=1)) to be allocated with CU_MEMHOSTALLOC_WRITECOMBINED; seen: "
                           "CU_MEMHOSTALLOC_DEVICEMAP (cuMemHostGetFlags), without "
                           "CU_MEMHOSTALLOC_WRITECOMBINED: the flags asked for must reach the "
                           "driver"),
            std::string::npos)
      << r.message;
}

struct PageableAsPinned : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override {
    if (mapped) return NumbaCUDAMemoryManager::memhostalloc(size, mapped, portable, wc);
    void* pointer = std::malloc(size);
    if (pointer == nullptr) throw std::bad_alloc();
    return HostAllocation::pinned(std::make_shared<PinnedMemory>(
        context(), pointer, size, nullptr, [pointer] { std::free(pointer); }));
  }
};

TEST(Diagnoses, PageableMemoryAsPinnedSaysItIsNotPageLocked) {
  const ClauseResult r = run(subject<PageableAsPinned>(), "ALLOC-6");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_TRUE(starts_with(r.message, "[ALLOC-6] at call 1 (auto h1 = context().memhostalloc("))
      << r.message;
  EXPECT_NE(r.message.find("mapped=0, portable=0, wc=0) to return page-locked memory; seen: h1 at "
                           "0x"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(ends_with(r.message,
                        " is memory that is not page-locked (the driver knows no cuMemHostAlloc "
                        "block or cuMemHostRegister range holding it)"))
      << r.message;
  // DEFER-3 leaves the diagnosis to ALLOC-6 instead of calling it a deferral bug.
  const ClauseResult defer = run(subject<PageableAsPinned>(), "DEFER-3");
  EXPECT_EQ(defer.outcome, Outcome::pass) << defer.message;
}

// mempin registers the whole pages around [p, p+n).
struct PinsWholePages : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped) override {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(pointer);
    void* first = reinterpret_cast<void*>(start / page * page);
    const std::size_t length = (start + size + page - 1) / page * page - start / page * page;
    Driver& d = driver();
    d.mem_host_register(first, length, mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u);
    Finalizer unpin = [&d, first] { d.mem_host_unregister(first); };
    if (mapped) {
      return HostAllocation::mapped(
          std::make_shared<MappedMemory>(context(), pointer, size, owner, std::move(unpin))->own());
    }
    return HostAllocation::pinned(
        std::make_shared<PinnedMemory>(context(), pointer, size, owner, std::move(unpin)));
  }
};

TEST(Diagnoses, MempinOfWholePagesSaysWhichNeighbouringBytesArePinned) {
  const ClauseResult r = run(subject<PinsWholePages>(), "ALLOC-7");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_TRUE(starts_with(r.message, "[ALLOC-7] at call 1 (auto p1 = context().mempin(buffer0, "))
      << r.message;
  EXPECT_NE(r.message.find(": the plugin pinned more than [p, p+n) (register the range given, not "
                           "whole pages)"),
            std::string::npos)
      << r.message;
}

// mempin(mapped=false) registers only the first half of [p, p+n).
struct PinsHalfTheRange : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped) override {
    if (mapped) return NumbaCUDAMemoryManager::mempin(std::move(owner), pointer, size, mapped);
    Driver& d = driver();
    d.mem_host_register(pointer, size / 2, 0);
    return HostAllocation::pinned(std::make_shared<PinnedMemory>(
        context(), pointer, size, owner, [&d, pointer] { d.mem_host_unregister(pointer); }));
  }
};

TEST(Diagnoses, MempinOfPartOfTheRangeSaysPartIsNotPageLocked) {
  const ClauseResult r = run(subject<PinsHalfTheRange>(), "ALLOC-7");
  EXPECT_EQ(r.outcome, Outcome::fail);
  // Shrunk to the smallest range: half of one byte is none, which the driver refuses.
  EXPECT_TRUE(starts_with(r.message, "[ALLOC-7] at call 1 (auto p1 = context().mempin(buffer0, "))
      << r.message;
  EXPECT_NE(r.message.find("to page-lock [p, p + 1); it threw emm::CudaDriverError: "
                           "cuMemHostRegister failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << r.message;
}

// --- HostOnly duties -----------------------------------------------------------------------------

struct ResetSkipsParent : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  void reset() override {}
};

TEST(Diagnoses, ResetSkippingTheParentsSaysWhatTheParentStillHolds) {
  const ClauseResult r = run(subject<ResetSkipsParent>(), "LIFE-10");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[LIFE-10] at call 2 (context().reset();): expected HostOnlyCUDAMemoryManager to track "
            "no allocation and hold no pending free after reset(); seen: 1 allocation(s) and 0 "
            "pending free(s): the override of reset() does not call "
            "HostOnlyCUDAMemoryManager::reset() (NBEP 7: it \"must also call the method from "
            "super()\")");
}

}  // namespace
}  // namespace emm::conformance
