// emm/conformance/nep49_registry.hpp — NEP 49 clause -> the one check body that certifies it,
// and evaluate_nep49(), which runs it.
//
// The table is built from EMM_NEP49_CLAUSES (nep49_clauses.hpp, generated from
// conformance/catalogue.tsv): each nep49 clause's body is the specialisation
// nep49_checks::check<Nep49Clause::KEY>, defined once with EMM_NEP49_CHECK(KEY) in
// nep49/src/. A clause without a body fails to link.
//
//   ClauseResult r = evaluate_nep49(*subject, *catalogue().find("NEP49-6"), backend);
//
// evaluate_nep49 turns what happened into a ClauseResult as evaluate() does for plugins
// (evaluate.hpp): returned -> pass, ClauseFailure -> fail, ClauseNotSupported -> not_supported
// (only when NumPy cannot be loaded), any other exception -> fail. Before the body runs it hands
// the backend's driver to a handler that exports emm_nep49_bind_driver. A behavioural clause
// (NEP49-5..14) is first explored as a property of generated call sequences with `exploration`'s
// seed and budget (nep49/engine/explore.hpp); its body, the fixed scenario, runs after it as a
// regression sequence. A failure the property found carries its shortest sequence (reproducer).
//
// Thread-safety: immutable table; evaluate_nep49 calls run one at a time per subject.
#pragma once

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/clause_result.hpp"
#include "emm/conformance/exploration.hpp"
#include "emm/conformance/nep49_clauses.hpp"
#include "emm/conformance/nep49_run.hpp"
#include "emm/conformance/nep49_subject.hpp"

namespace emm::conformance {

using Nep49CheckFunction = void (*)(Nep49Run& run);

// The body of a nep49 clause; null for any other clause.
Nep49CheckFunction nep49_check_for(const Clause& clause) noexcept;

ClauseResult evaluate_nep49(Nep49Subject& subject, const Clause& clause, Backend& backend,
                            const Exploration& exploration = {});

namespace nep49_checks {
template <Nep49Clause clause>
void check(Nep49Run& run);
#define EMM_NEP49_CHECK_DECLARATION_(Key, Id, TestName) \
  template <>                                           \
  void check<Nep49Clause::Key>(Nep49Run & run);
EMM_NEP49_CLAUSES(EMM_NEP49_CHECK_DECLARATION_)
#undef EMM_NEP49_CHECK_DECLARATION_
}  // namespace nep49_checks

}  // namespace emm::conformance

// Defines a body, inside namespace emm::conformance::nep49_checks.
#define EMM_NEP49_CHECK(Key) \
  template <>                \
  void check<Nep49Clause::Key>(Nep49Run & run)
