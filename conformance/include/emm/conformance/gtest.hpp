// emm/conformance/gtest.hpp — the conformance suite as a GoogleTest typed test suite.
//
// A plugin author certifies a plugin type with one short file:
//
//   #include <emm/conformance/gtest.hpp>
//   struct MyTraits {
//     using Plugin = MyPlugin;                 // derives from emm::BaseCUDAMemoryManager
//     // The plugin's declaration: the same constant its EMM_EXPORT_MEMORY_MANAGER uses.
//     static constexpr emm::PluginDeclaration declaration = kMyDeclaration;
//     // Optional: how to build an instance (default: std::make_unique<Plugin>(context)).
//     static std::unique_ptr<emm::BaseCUDAMemoryManager> make(emm::Context* context);
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
//
// Thread-safety: the generated tests run on GoogleTest's thread, one at a time (the clauses
// that run threads start and join their own). Nothing here may be called from other threads.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/plugin_clauses.hpp"
#include "emm/conformance/plugin_subject.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::conformance {

namespace gtest_detail {

// Runs `clause_id` on `backend` inside the current GoogleTest test: properties, then pass,
// failure or skip (emm_conformance_gtest).
void run_clause_test(const PluginSubject& subject, const char* clause_id, BackendKind backend);

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
  static constexpr BackendKind backend = BackendKind::fake;
};
template <class Traits>
struct on_gpu {
  using traits = Traits;
  static constexpr BackendKind backend = BackendKind::gpu;
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

// One test per plugin clause of the catalogue (EMM_PLUGIN_CLAUSES is generated from
// conformance/catalogue.tsv); the golden-list test checks the compiled list against it.
#define EMM_CONFORMANCE_CLAUSE_TEST_(Key, ClauseId, TestName)   \
  TYPED_TEST_P(EmmConformance, TestName) {                      \
    ::emm::conformance::gtest_detail::run<TypeParam>(ClauseId); \
  }
EMM_PLUGIN_CLAUSES(EMM_CONFORMANCE_CLAUSE_TEST_)
#undef EMM_CONFORMANCE_CLAUSE_TEST_

// REGISTER_TYPED_TEST_SUITE_P stringifies its arguments unexpanded: expand the list first.
#define EMM_CONFORMANCE_REGISTER_(Suite, ...) REGISTER_TYPED_TEST_SUITE_P(Suite, __VA_ARGS__)
EMM_CONFORMANCE_REGISTER_(EmmConformance, EMM_PLUGIN_CLAUSE_TEST_NAMES);
#undef EMM_CONFORMANCE_REGISTER_

// Instantiates the suite for `Traits` on the fake and the gpu backend, under `Prefix`.
#define EMM_INSTANTIATE_CONFORMANCE_SUITE(Prefix, Traits) \
  INSTANTIATE_TYPED_TEST_SUITE_P(Prefix, EmmConformance,  \
                                 ::emm::conformance::gtest_detail::Instances<Traits>)
