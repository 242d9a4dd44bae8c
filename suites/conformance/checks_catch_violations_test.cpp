// The checks can fail: small defective plugins, run in-process through evaluate(), get the
// outcome and the message their defect deserves. (The full self-test, with crashing and hanging
// plugins certified by emm-certify, is the known-bad zoo in suites/known_bad.)
#include <gtest/gtest.h>

#include <emm/conformance/evaluate.hpp>
#include <emm/conformance/exploration.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <emm/errors.hpp>
#include <emm/numba_memory_manager.hpp>
#include <stdexcept>

namespace emm::conformance {
namespace {

constexpr const char* kDefer = "as the reference";

template <class Plugin>
PluginSubject subject(Capabilities caps = {.memory_info = true, .ipc = true, .thread_safe = true},
                      const char* defer_cleanup_behaviour = kDefer) {
  const PluginDeclaration declaration{.name = "defective",
                                      .capabilities = caps,
                                      .defer_cleanup_behaviour = defer_cleanup_behaviour};
  return PluginSubject{PluginDescription::from(complete_declaration<Plugin>(declaration)),
                       [](Context* c) -> std::unique_ptr<BaseCUDAMemoryManager> {
                         return std::make_unique<Plugin>(c);
                       }};
}

struct WrongVersion : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  int interface_version() const override { return 2; }
};

struct BareAutoFree : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    // The hazard: the AutoFreePointer itself (refct 0) instead of its own().
    Driver& d = driver();
    const CUdeviceptr pointer = d.mem_alloc(size);
    return std::make_shared<AutoFreePointer>(context(), pointer, size, nullptr,
                                             [&d, pointer] { d.mem_free(pointer); });
  }
};

struct Misaligned : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    return NumbaCUDAMemoryManager::memalloc(size + 16)->view(16, 16 + size);
  }
};

struct RuntimeErrorInfo : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  void initialize() override {}
  MemoryInfo get_memory_info() override { throw std::runtime_error("no figures"); }
};

// free and total the wrong way round: free > total from the first call.
struct SwappedInfo : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  MemoryInfo get_memory_info() override {
    const MemoryInfo right = NumbaCUDAMemoryManager::get_memory_info();
    return MemoryInfo{right.total, right.free / 2};
  }
};

struct NoIpc : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>&) override {
    throw NotImplementedError("this plugin has no IPC");
  }
};

struct NoManaged : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t, bool) override {
    throw NotImplementedError("this plugin has no managed memory");
  }
};

struct LeakyInitialize : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  void initialize() override {
    NumbaCUDAMemoryManager::initialize();
    leaked_.push_back(memalloc(4096));
  }
  std::vector<std::shared_ptr<MemoryPointer>> leaked_;
};

struct DropsParentGuard : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  CleanupGuard defer_cleanup() override {
    return CleanupGuard([] {});
  }
};

struct ResetKeepsEverything : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  void reset() override {}
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    auto memory = NumbaCUDAMemoryManager::memalloc(size);
    kept_.push_back(memory);  // never released: reset() cannot bring memory back
    return memory;
  }
  std::vector<std::shared_ptr<MemoryPointer>> kept_;
};

const Clause& clause(const char* id) {
  const Clause* found = catalogue().find(id);
  if (found == nullptr) throw std::runtime_error(std::string(id) + " is not in the catalogue");
  return *found;
}

ClauseResult run(const PluginSubject& s, const char* id) {
  return evaluate_on(s, clause(id), BackendKind::fake);
}

TEST(ChecksCatchViolations, REG_1_WrongVersionFails) {
  ::testing::Test::RecordProperty("clause", "REG-1");
  const ClauseResult r = run(subject<WrongVersion>(), "REG-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[REG-1] interface_version() of the version-probe instance (null context): expected 1, "
            "seen 2");
}

TEST(ChecksCatchViolations, ALLOC_5_BareAutoFreePointerFails) {
  ::testing::Test::RecordProperty("clause", "ALLOC-5");
  const ClauseResult r = run(subject<BareAutoFree>(), "ALLOC-5");
  EXPECT_EQ(r.outcome, Outcome::fail);
  // The property finds it at the first allocation, whatever its size: one call reproduces it.
  EXPECT_EQ(r.message.rfind("[ALLOC-5] at call 1 (auto m1 = context().memalloc(", 0), 0u)
      << r.message;
  EXPECT_NE(r.message.find("expected m1->refct() >= 1 at rest; seen: 0 (return "
                           "AutoFreePointer::own(), not a bare AutoFreePointer"),
            std::string::npos)
      << r.message;
  ASSERT_TRUE(r.reproducer);
  EXPECT_EQ(r.reproducer->calls.size(), 1u);
  EXPECT_EQ(r.reproducer->seed, kDefaultSeed);
}

TEST(ChecksCatchViolations, FIN_1_BareAutoFreePointerFails) {
  ::testing::Test::RecordProperty("clause", "FIN-1");
  const ClauseResult r = run(subject<BareAutoFree>(), "FIN-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.message.find("expected the finalizer of m1 not to run while other references to "
                           "it are held; seen: it has run"),
            std::string::npos)
      << r.message;
  ASSERT_TRUE(r.reproducer);
  EXPECT_LE(r.reproducer->calls.size(), 4u);
}

TEST(ChecksCatchViolations, ALLOC_11_SixteenByteAlignmentWarns) {
  ::testing::Test::RecordProperty("clause", "ALLOC-11");
  const ClauseResult r = run(subject<Misaligned>(), "ALLOC-11");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.level, Level::should);
  EXPECT_NE(r.message.find("to be aligned to 256 bytes, as cuMemAlloc's pointers are; seen: 0x"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(run(subject<Misaligned>(), "ALLOC-1").outcome, Outcome::pass);
}

TEST(ChecksCatchViolations, INFO_2_RuntimeErrorInsteadOfNotImplementedFails) {
  ::testing::Test::RecordProperty("clause", "INFO-2");
  const ClauseResult r = run(subject<RuntimeErrorInfo>({}), "INFO-2");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[INFO-2] at call 1 (context().get_memory_info();): expected get_memory_info() to "
            "throw emm::NotImplementedError (memory_info=false); it threw std::runtime_error: no "
            "figures");
  EXPECT_EQ(run(subject<RuntimeErrorInfo>({}), "INFO-1").outcome, Outcome::not_supported);
  EXPECT_EQ(run(subject<RuntimeErrorInfo>({}), "INFO-3").outcome, Outcome::not_supported);
}

// One defect, one failure: a plugin that declares memory info and cannot give it fails INFO-1
// only; INFO-2 (the not-provided case) and INFO-3 (provided) leave the figures to INFO-1.
TEST(ChecksCatchViolations, INFO_1_DeclaredButThrowingFailsOnce) {
  ::testing::Test::RecordProperty("clause", "INFO-1");
  const ClauseResult r = run(subject<RuntimeErrorInfo>(), "INFO-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[INFO-1] at call 1 (context().get_memory_info();): expected get_memory_info() to "
            "return figures (the plugin declares memory_info); it threw std::runtime_error: no "
            "figures");
  const ClauseResult info2 = run(subject<RuntimeErrorInfo>(), "INFO-2");
  EXPECT_EQ(info2.outcome, Outcome::pass) << info2.message;
  EXPECT_EQ(info2.notes,
            std::vector<std::string>{"memory_info declared: INFO-1 checks the figures"});
  EXPECT_EQ(run(subject<RuntimeErrorInfo>(), "INFO-3").outcome, Outcome::pass);
}

TEST(ChecksCatchViolations, INFO_1_BadFreeTotalPairFailsOnce) {
  ::testing::Test::RecordProperty("clause", "INFO-1");
  const ClauseResult r = run(subject<SwappedInfo>(), "INFO-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.message.find("expected get_memory_info() to return free <= total and total > 0; "
                           "seen: {free="),
            std::string::npos)
      << r.message;
  EXPECT_EQ(run(subject<SwappedInfo>(), "INFO-2").outcome, Outcome::pass);
  EXPECT_EQ(run(subject<SwappedInfo>(), "INFO-3").outcome, Outcome::pass);
}

TEST(ChecksCatchViolations, IPC_7_UndeclaredIpcIsNotSupportedOnlyWithNotImplementedError) {
  ::testing::Test::RecordProperty("clause", "IPC-7");
  const Capabilities no_ipc{.memory_info = true};
  const ClauseResult honest = run(subject<NoIpc>(no_ipc), "IPC-7");
  EXPECT_EQ(honest.outcome, Outcome::not_supported);
  EXPECT_EQ(honest.message,
            "[IPC-7] the plugin declares no IPC support and get_ipc_handle() throws "
            "NotImplementedError, as required");
  EXPECT_EQ(run(subject<NoIpc>(no_ipc), "IPC-1").outcome, Outcome::not_supported);
  const ClauseResult undeclared = run(subject<NumbaCUDAMemoryManager>(no_ipc), "IPC-7");
  EXPECT_EQ(undeclared.outcome, Outcome::fail);
  EXPECT_EQ(undeclared.message,
            "[IPC-7] at call 2 (auto handle2 = context().get_ipc_handle(m1);  // opened in another "
            "process): expected get_ipc_handle() to throw emm::NotImplementedError (the plugin "
            "declares ipc=false); seen: it returned a handle of size 1 (declare ipc=true if it "
            "works)");
}

TEST(ChecksCatchViolations,
     MANAGED_3_UndeclaredManagedMemoryIsNotSupportedUnlessItThrowsOtherwise) {
  ::testing::Test::RecordProperty("clause", "MANAGED-3");
  const ClauseResult declined = run(subject<NoManaged>(), "MANAGED-3");
  EXPECT_EQ(declined.outcome, Outcome::not_supported);
  EXPECT_EQ(declined.message,
            "[MANAGED-3] the plugin declares managed_memory=false and memallocmanaged() throws "
            "NotImplementedError, as required");
  EXPECT_EQ(run(subject<NoManaged>(), "MANAGED-1").outcome, Outcome::not_supported);
  // Inherited from HostOnlyCUDAMemoryManager but not declared: left uncertified, not failed.
  const ClauseResult inherited = run(subject<NumbaCUDAMemoryManager>(), "MANAGED-3");
  EXPECT_EQ(inherited.outcome, Outcome::not_supported);
  EXPECT_EQ(inherited.message,
            "[MANAGED-3] the plugin declares managed_memory=false, yet memallocmanaged(4096, "
            "attach_global=true) works (inherited from HostOnlyCUDAMemoryManager?): declare "
            "managed_memory=true to have it certified");
  // Declared but refused.
  const ClauseResult refused = run(
      subject<NoManaged>({.memory_info = true, .ipc = true, .managed_memory = true}), "MANAGED-1");
  EXPECT_EQ(refused.outcome, Outcome::fail);
  EXPECT_EQ(refused.message.rfind("[MANAGED-1] at call 1 (auto u1 = context().memallocmanaged(", 0),
            0u)
      << refused.message;
  EXPECT_NE(refused.message.find("it threw emm::NotImplementedError: this plugin has no managed "
                                 "memory"),
            std::string::npos)
      << refused.message;
}

TEST(ChecksCatchViolations, IPC_1_DeclaredIpcThatThrowsNotImplementedFails) {
  ::testing::Test::RecordProperty("clause", "IPC-1");
  const ClauseResult r = run(subject<NoIpc>(), "IPC-1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[IPC-1] at call 2 (auto handle2 = "
            "context().get_ipc_handle(std::make_shared<emm::MemoryPointer>(m1->context(), "
            "m1->device_pointer(), m1->size()));  // opened in another process): expected "
            "get_ipc_handle(a foreign MemoryPointer over m1) to return a handle (the plugin "
            "declares ipc); it threw emm::NotImplementedError: this plugin has no IPC");
}

TEST(ChecksCatchViolations, LIFE_2_InitializeThatAllocatesFails) {
  ::testing::Test::RecordProperty("clause", "LIFE-2");
  const ClauseResult r = run(subject<LeakyInitialize>(), "LIFE-2");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.message.find("initialize() must not allocate per call"), std::string::npos)
      << r.message;
}

TEST(ChecksCatchViolations, LIFE_7_ResetThatKeepsMemoryFails) {
  ::testing::Test::RecordProperty("clause", "LIFE-7");
  const ClauseResult r = run(subject<ResetKeepsEverything>(), "LIFE-7");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.message.find("reset() must release everything the plugin allocated"),
            std::string::npos)
      << r.message;
}

TEST(ChecksCatchViolations, DEFER_3_GuardWithoutTheParentsFails) {
  ::testing::Test::RecordProperty("clause", "DEFER-3");
  const ClauseResult r = run(subject<DropsParentGuard>(), "DEFER-3");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.message.find("expected the HostOnlyCUDAMemoryManager queue to be disabled while a "
                           "defer_cleanup() guard is open; seen: it is enabled"),
            std::string::npos)
      << r.message;
}

TEST(ChecksCatchViolations, DEFER_6_EmptyBehaviourWarns) {
  ::testing::Test::RecordProperty("clause", "DEFER-6");
  const ClauseResult r = run(subject<NumbaCUDAMemoryManager>({.memory_info = true}, ""), "DEFER-6");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.level, Level::should);
  EXPECT_EQ(r.message.rfind("[DEFER-6] the plugin declares no defer_cleanup behaviour", 0), 0u);
}

TEST(ChecksCatchViolations, ALLOC_10_IsNotSupportedWithoutThreadSafetyAndThenOnlyShould) {
  ::testing::Test::RecordProperty("clause", "ALLOC-10");
  const ClauseResult r = run(subject<NumbaCUDAMemoryManager>({}), "ALLOC-10");
  EXPECT_EQ(r.outcome, Outcome::not_supported);
  EXPECT_EQ(r.level, Level::should);
  EXPECT_EQ(r.message, "[ALLOC-10] the plugin declares thread_safe=false");
}

TEST(ChecksCatchViolations, DEFER_3_DoesNotApplyToPluginsNotDerivedFromHostOnly) {
  ::testing::Test::RecordProperty("clause", "DEFER-3");
  PluginSubject s = subject<NumbaCUDAMemoryManager>();
  s.description.capabilities.host_only_derived =
      false;  // as a BaseCUDAMemoryManager-only plugin declares
  const ClauseResult r = run(s, "DEFER-3");
  EXPECT_EQ(r.outcome, Outcome::not_supported);
  EXPECT_EQ(r.message, "[DEFER-3] the plugin declares host_only_derived=false");
}

TEST(ChecksCatchViolations, GpuBackendWithoutAGpuIsNotSupportedWithTheReason) {
  const std::string reason = backend_unavailable_reason(BackendKind::gpu, Capabilities{});
  if (reason.empty()) GTEST_SKIP() << "a GPU is present";
  const ClauseResult r =
      evaluate_on(subject<NumbaCUDAMemoryManager>(), clause("LIFE-2"), BackendKind::gpu);
  EXPECT_EQ(r.outcome, Outcome::not_supported);
  EXPECT_EQ(r.message, "[LIFE-2] " + reason);
  EXPECT_EQ(reason.rfind("no GPU: ", 0), 0u) << reason;
}

TEST(ClauseRunVerdict, NotSupportedOnAMandatoryClauseIsAFailure) {
  const PluginSubject s = subject<NumbaCUDAMemoryManager>();
  const auto backend = make_backend(BackendKind::fake);
  ClauseRun run(clause("LIFE-2"), s, *backend);
  EMM_EXPECT_THROW(ClauseFailure, run.not_supported("no reason"),
                   "[LIFE-2] not supported (no reason), but LIFE-2 is not optional: an undeclared "
                   "NotImplementedError is a failure");
  ClauseRun ipc(clause("IPC-1"), s, *backend);
  EMM_EXPECT_THROW(ClauseFailure, ipc.not_supported("no reason"),
                   "[IPC-1] not supported (no reason) although the plugin declares ipc=true");
}

}  // namespace
}  // namespace emm::conformance
