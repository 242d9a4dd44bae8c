// emm/conformance/evaluate.hpp — runs one clause's check on one backend, in this process.
//
// The common core of every flavour: builds the ClauseRun, calls the clause's check body
// (check_registry.hpp) and turns what happened into a ClauseResult:
//   body returned                       -> pass (notes kept)
//   ClauseFailure                       -> fail (its message, "[ID] ...")
//   not_supported (legal)               -> not_supported
//   NotImplementedError escaping        -> not_supported when the clause is optional and its
//                                          capability declared absent; else fail ("undeclared")
//   any other exception                 -> fail, naming the exception's type and message
// Crashes and hangs are not caught here: emm-certify runs each call in a child process.
//
//   auto backend = make_backend(BackendKind::fake);
//   ClauseResult r = evaluate(subject, *catalogue().find("LIFE-2"), *backend);
//
// The caller decides whether the backend can run (backend_unavailable_reason, backend.hpp)
// and makes it; evaluate() only runs the check.
//
// Thread-safety: concurrent calls are safe when each has its own backend.
#pragma once

#include "emm/conformance/backend.hpp"
#include "emm/conformance/clause_result.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/plugin_subject.hpp"

namespace emm::conformance {

[[nodiscard]] ClauseResult evaluate(const PluginSubject& subject, const Clause& clause,
                                    Backend& backend, const RunOptions& options = {});

// The result for a clause that did not run because `backend` cannot run here: not_supported
// with `reason` ("no GPU: ...").
[[nodiscard]] ClauseResult backend_not_available(const PluginSubject& subject, const Clause& clause,
                                                 BackendKind backend, std::string_view reason);

// The machine the in-process flavours certify on: a fake of two devices, so that the DEV
// clauses run in a plugin's own test suite (emm-certify's --devices defaults to 1).
inline constexpr BackendSettings kInProcessBackendSettings{.fake_devices = 2};

// Decides whether `backend` can run, makes it and evaluates; what every in-process flavour
// (GoogleTest, Boost.Test) does for one test, on kInProcessBackendSettings, exploring with the
// seed and budget of the environment when set (EMMKIT_SEED, EMMKIT_BUDGET: exploration.hpp).
[[nodiscard]] ClauseResult evaluate_on(const PluginSubject& subject, const Clause& clause,
                                       BackendKind backend, const RunOptions& options = {});

}  // namespace emm::conformance
