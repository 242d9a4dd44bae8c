// emm/conformance/gtest.hpp — the conformance suite as a GoogleTest typed test suite.
//
// A plugin author certifies a plugin type with one short file:
//
//   #include <emm/conformance/gtest.hpp>
//   struct MyTraits {
//     using Plugin = MyPlugin;                 // derives from emm::BaseCUDAMemoryManager
//     static constexpr const char* name = "my-plugin";
//     static constexpr emm::Capabilities capabilities{.memory_info = true, .ipc = true,
//                                                     .thread_safe = true,
//                                                     .defer_cleanup_behaviour = "..."};
//   };
//   EMM_INSTANTIATE_CONFORMANCE_SUITE(MyPlugin, MyTraits);
//
// and links it with emm_add_conformance_test(<target> SOURCES file.cpp LIBRARIES my_plugin)
// (cmake/EmmConformance.cmake). That instantiates one test per plugin clause and backend:
//   MyPlugin/EmmConformance/0.LIFE_2_InitializeIdempotence   TypeParam = on_fake<MyTraits>
//   MyPlugin/EmmConformance/1.LIFE_2_InitializeIdempotence   TypeParam = on_gpu<MyTraits>
// which CTest lists as MyPlugin.LIFE_2_InitializeIdempotence<emm::conformance::on_fake<MyTraits>>.
// Each test runs the clause's one check body (the same emm-certify runs), records
// RecordProperty("clause", "LIFE-2") and ("outcome", ...), fails with the check's message
// ("[LIFE-2] ..."), and skips (GTEST_SKIP) when the clause is not supported by a declared
// capability or the backend cannot run ("no GPU: ..."). The suite is registered with
// REGISTER_TYPED_TEST_SUITE_P, so a binary that includes this header but forgets the
// instantiation fails (GoogleTestVerification), as it should.
//
// REG-2 runs over a testing::StrictMock<emm::MockDriver> with no expectations: any driver call
// made while constructing, probing or destroying a null-context instance fails the test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/plugin_subject.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::conformance {

namespace gtest_detail {

// Runs `clause_id` on `backend` inside the current GoogleTest test: properties, then pass,
// failure or skip (emm_conformance_gtest).
void run_clause_test(const PluginSubject& subject, const char* clause_id, Backend backend);

// The options the GoogleTest flavour runs with (REG-2 over a StrictMock<MockDriver>).
RunOptions run_options();

template <class Instance>
void run(const char* clause_id) {
  static const PluginSubject subject = subject_from_traits<typename Instance::traits>();
  run_clause_test(subject, clause_id, Instance::backend);
}

}  // namespace gtest_detail

// The suite's type parameters: a plugin (through its traits) on one backend. GoogleTest and
// CTest show them in test names ("TypeParam = emm::conformance::on_fake<MyTraits>").
template <class Traits>
struct on_fake {
  using traits = Traits;
  static constexpr Backend backend = Backend::fake;
};
template <class Traits>
struct on_gpu {
  using traits = Traits;
  static constexpr Backend backend = Backend::gpu;
};

namespace gtest_detail {
template <class Traits>
using Instances = ::testing::Types<on_fake<Traits>, on_gpu<Traits>>;
}  // namespace gtest_detail
}  // namespace emm::conformance

// The fixture lives in the global namespace: GoogleTest's INSTANTIATE_TYPED_TEST_SUITE_P, used
// at namespace scope in the author's file, names it unqualified.
template <class Instance>
class EmmConformance : public ::testing::Test {};

TYPED_TEST_SUITE_P(EmmConformance);

// One test per plugin clause of the catalogue; the golden-list test checks this list against
// conformance/catalogue.tsv and the check registry.
#define EMM_CONFORMANCE_CLAUSE_TEST_(TestName, ClauseId)        \
  TYPED_TEST_P(EmmConformance, TestName) {                      \
    ::emm::conformance::gtest_detail::run<TypeParam>(ClauseId); \
  }

EMM_CONFORMANCE_CLAUSE_TEST_(REG_1_InterfaceVersion, "REG-1")
EMM_CONFORMANCE_CLAUSE_TEST_(REG_2_NullContextConstruction, "REG-2")
EMM_CONFORMANCE_CLAUSE_TEST_(LIFE_2_InitializeIdempotence, "LIFE-2")
EMM_CONFORMANCE_CLAUSE_TEST_(LIFE_4_ConstructWithoutCurrentContext, "LIFE-4")
EMM_CONFORMANCE_CLAUSE_TEST_(LIFE_5_ResetBeforeInitialize, "LIFE-5")
EMM_CONFORMANCE_CLAUSE_TEST_(LIFE_6_UsableAfterReset, "LIFE-6")
EMM_CONFORMANCE_CLAUSE_TEST_(LIFE_7_ResetReleasesEverything, "LIFE-7")
EMM_CONFORMANCE_CLAUSE_TEST_(LIFE_8_LateFinalizers, "LIFE-8")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_1_MemallocBasics, "ALLOC-1")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_2_NoOverlap, "ALLOC-2")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_3_OutOfMemory, "ALLOC-3")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_5_RefcountAtRest, "ALLOC-5")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_6_MemhostallocKinds, "ALLOC-6")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_7_MempinOwnershipAndUnpin, "ALLOC-7")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_10_ConcurrentAllocation, "ALLOC-10")
EMM_CONFORMANCE_CLAUSE_TEST_(ALLOC_11_Alignment256, "ALLOC-11")
EMM_CONFORMANCE_CLAUSE_TEST_(FIN_1_FinalizerExactlyOnce, "FIN-1")
EMM_CONFORMANCE_CLAUSE_TEST_(FIN_5_FreesOnlyItsAllocation, "FIN-5")
EMM_CONFORMANCE_CLAUSE_TEST_(DEFER_2_GuardScopesAndNesting, "DEFER-2")
EMM_CONFORMANCE_CLAUSE_TEST_(DEFER_3_HoldsParentGuard, "DEFER-3")
EMM_CONFORMANCE_CLAUSE_TEST_(DEFER_4_DeferredFreesExecuted, "DEFER-4")
EMM_CONFORMANCE_CLAUSE_TEST_(DEFER_6_DocumentedBehaviour, "DEFER-6")
EMM_CONFORMANCE_CLAUSE_TEST_(INFO_1_MemoryInfoShape, "INFO-1")
EMM_CONFORMANCE_CLAUSE_TEST_(INFO_2_NotProvidedThrowsNotImplemented, "INFO-2")
EMM_CONFORMANCE_CLAUSE_TEST_(INFO_3_MemoryInfoProvided, "INFO-3")
EMM_CONFORMANCE_CLAUSE_TEST_(IPC_1_OffsetsEndToEnd, "IPC-1")
EMM_CONFORMANCE_CLAUSE_TEST_(IPC_2_PoolSubAllocations, "IPC-2")
EMM_CONFORMANCE_CLAUSE_TEST_(IPC_7_UndeclaredIpcThrowsNotImplemented, "IPC-7")
EMM_CONFORMANCE_CLAUSE_TEST_(PERF_1_AllocFreeLatency, "PERF-1")
EMM_CONFORMANCE_CLAUSE_TEST_(PERF_2_InitializeCost, "PERF-2")
EMM_CONFORMANCE_CLAUSE_TEST_(PERF_3_ThroughputVsDriver, "PERF-3")

REGISTER_TYPED_TEST_SUITE_P(
    EmmConformance, REG_1_InterfaceVersion, REG_2_NullContextConstruction,
    LIFE_2_InitializeIdempotence, LIFE_4_ConstructWithoutCurrentContext,
    LIFE_5_ResetBeforeInitialize, LIFE_6_UsableAfterReset, LIFE_7_ResetReleasesEverything,
    LIFE_8_LateFinalizers, ALLOC_1_MemallocBasics, ALLOC_2_NoOverlap, ALLOC_3_OutOfMemory,
    ALLOC_5_RefcountAtRest, ALLOC_6_MemhostallocKinds, ALLOC_7_MempinOwnershipAndUnpin,
    ALLOC_10_ConcurrentAllocation, ALLOC_11_Alignment256, FIN_1_FinalizerExactlyOnce,
    FIN_5_FreesOnlyItsAllocation, DEFER_2_GuardScopesAndNesting, DEFER_3_HoldsParentGuard,
    DEFER_4_DeferredFreesExecuted, DEFER_6_DocumentedBehaviour, INFO_1_MemoryInfoShape,
    INFO_2_NotProvidedThrowsNotImplemented, INFO_3_MemoryInfoProvided, IPC_1_OffsetsEndToEnd,
    IPC_2_PoolSubAllocations, IPC_7_UndeclaredIpcThrowsNotImplemented, PERF_1_AllocFreeLatency,
    PERF_2_InitializeCost, PERF_3_ThroughputVsDriver);

// Instantiates the suite for `Traits` on the fake and the gpu backend, under `Prefix`.
#define EMM_INSTANTIATE_CONFORMANCE_SUITE(Prefix, Traits) \
  INSTANTIATE_TYPED_TEST_SUITE_P(Prefix, EmmConformance,  \
                                 ::emm::conformance::gtest_detail::Instances<Traits>)
