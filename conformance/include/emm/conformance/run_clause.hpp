// emm/conformance/run_clause.hpp — runs one clause's check on one backend, in this process.
//
// The common core of every flavour: decides whether the backend can run, builds the ClauseRun,
// calls the registered body and turns what happened into a ClauseResult:
//   body returned                       -> pass (message: the notes, if any)
//   ClauseFailure                       -> fail (its message, "[ID] ...")
//   not_supported (legal)               -> not_supported
//   NotImplementedError escaping        -> not_supported when the clause is optional and its
//                                          capability declared absent; else fail ("undeclared")
//   any other exception                 -> fail, naming the exception's type and message
// Crashes and hangs are not caught here: emm-certify runs each call in a child process.
//
//   ClauseResult r = run_clause(subject, "LIFE-2", Backend::fake);
//
// Thread-safety: concurrent calls are safe (each builds its own driver and runtime).
#pragma once

#include <string>
#include <string_view>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/outcome.hpp"
#include "emm/conformance/plugin_subject.hpp"

namespace emm::conformance {

// Why `backend` cannot certify `subject` here ("" when it can): no GPU, or a plugin that
// declares it does not run on the fake driver.
std::string backend_unavailable_reason(const PluginSubject& subject, Backend backend);

ClauseResult run_clause(const PluginSubject& subject, const Clause& clause, Backend backend,
                        const RunOptions& options = {});
// Throws emm::Error for an id that is not in the catalogue.
ClauseResult run_clause(const PluginSubject& subject, std::string_view clause_id, Backend backend,
                        const RunOptions& options = {});

}  // namespace emm::conformance
