#include "emm/conformance/evaluate.hpp"

#include <chrono>
#include <cstdint>
#include <string>

#include "emm/conformance/check_registry.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "engine/explore.hpp"

namespace emm::conformance {

ClauseResult backend_not_available(const PluginSubject& subject, const Clause& clause,
                                   BackendKind backend, std::string_view reason) {
  ClauseResult result;
  result.clause = &clause;
  result.backend = backend;
  result.level = clause.effective_level(subject.description.capabilities);
  result.outcome = Outcome::not_supported;
  result.message = clause.tag(reason);
  return result;
}

ClauseResult evaluate(const PluginSubject& subject, const Clause& clause, Backend& backend,
                      const RunOptions& options) {
  const Capabilities& capabilities = subject.description.capabilities;
  ClauseResult result;
  result.clause = &clause;
  result.backend = backend.kind();
  result.level = clause.effective_level(capabilities);
  const auto started = std::chrono::steady_clock::now();

  const CheckFunction body = check_for(clause);
  if (body == nullptr) {
    result.message = clause.tag("is a host clause: the kit's own suites check it");
    return result;
  }
  // Finalizers may report into Diagnostics; keep them off the console (checks read them).
  Diagnostics::Capture quiet(true);
  backend.interleave_threads(clause.runs_threads);
  try {
    ClauseRun run(clause, subject, backend, options);
    try {
      // The clause's property over generated sequences first (a failure comes with its shortest
      // sequence), then its fixed scenario as a regression sequence.
      if (const std::optional<PluginClause> key = plugin_clause(clause.id)) {
        if (const engine::Property* property = engine::property_for(*key)) {
          engine::explore(run, *property);
        }
      }
      if (options.exploration.sequences_in_children) {
        run.note(
            "only the generated sequences ran, each in a process of its own: none crashed, "
            "hung or failed");
      } else {
        body(run);
      }
      if (const std::uint32_t stride = backend.interleaving_stride(); stride > 1) {
        run.note(
            "the machine was busy (the clause's threads got less than a quarter of a core): "
            "the fake driver yielded at only one call in " +
            std::to_string(stride) +
            " in the end, so threads interleaved inside the plugin less than on an idle "
            "machine");
      }
      result.outcome = Outcome::pass;
    } catch (...) {
      result.properties = run.properties();
      result.notes = run.notes();
      result.unobserved = run.unobserved();
      result.reproducer = run.reproducer();
      throw;
    }
    result.properties = run.properties();
    result.notes = run.notes();
    result.unobserved = run.unobserved();
  } catch (const ClauseFailure& failure) {
    result.outcome = Outcome::fail;
    result.message = failure.what();
  } catch (const ClauseNotSupported& unsupported) {
    result.outcome = Outcome::not_supported;
    result.message = unsupported.what();
  } catch (const NotImplementedError& error) {
    if (!clause.applies_to(capabilities)) {
      result.outcome = Outcome::not_supported;
      result.message = clause.tag("the plugin declares " + std::string(clause.optional->name) +
                                  "=false and threw NotImplementedError: " + error.what());
    } else {
      result.outcome = Outcome::fail;
      result.message =
          clause.tag(std::string("undeclared NotImplementedError (a failure: only a ") +
                     "capability declared absent allows it): " + error.what());
    }
  } catch (...) {
    result.outcome = Outcome::fail;
    result.message = clause.tag("unexpected exception from the plugin or the host: " +
                                describe_current_exception());
  }
  result.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

ClauseResult evaluate_on(const PluginSubject& subject, const Clause& clause, BackendKind backend,
                         const RunOptions& options) {
  const std::string why = backend_unavailable_reason(backend, subject.description.capabilities);
  if (!why.empty()) return backend_not_available(subject, clause, backend, why);
  RunOptions with_environment = options;
  with_environment.exploration = exploration_from_environment(options.exploration);
  std::unique_ptr<Backend> made;
  try {
    made = make_backend(backend, kInProcessBackendSettings);
  } catch (...) {
    return backend_not_available(
        subject, clause, backend,
        std::string(to_string(backend)) + " unavailable: " + describe_current_exception());
  }
  return evaluate(subject, clause, *made, with_environment);
}

}  // namespace emm::conformance
