#include "emm/conformance/run_clause.hpp"

#include <chrono>

#include "emm/conformance/registry.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm::conformance {
namespace {

std::string join_notes(const std::vector<std::string>& notes) {
  std::string text;
  for (const std::string& note : notes) {
    if (!text.empty()) text += "; ";
    text += note;
  }
  return text;
}

}  // namespace

std::string backend_unavailable_reason(const PluginSubject& subject, Backend backend) {
  if (backend == Backend::fake) {
    if (!subject.capabilities.runs_on_fake_driver) {
      return "the plugin declares runs_on_fake_driver=false (it calls CUDA itself): it is "
             "certified on a GPU only";
    }
    return "";
  }
  const std::string& reason = gpu_unavailable_reason();
  return reason.empty() ? "" : "no GPU: " + reason;
}

ClauseResult run_clause(const PluginSubject& subject, const Clause& clause, Backend backend,
                        const RunOptions& options) {
  ClauseResult result;
  result.clause = clause.id;
  result.backend = std::string(to_string(backend));
  result.level = clause.effective_level(subject.capabilities);
  const auto started = std::chrono::steady_clock::now();
  auto finish = [&](Outcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    result.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    return result;
  };

  if (std::string why = backend_unavailable_reason(subject, backend); !why.empty()) {
    return finish(Outcome::not_supported, "[" + clause.id + "] " + why);
  }
  const CheckFunction body = check_registry().find(clause.id);
  if (body == nullptr) {
    return finish(Outcome::fail, "[" + clause.id + "] the kit has no check for this clause");
  }

  std::shared_ptr<Driver> driver;
  try {
    driver = backend == Backend::fake ? std::shared_ptr<Driver>(std::make_shared<FakeDriver>())
                                      : gpu_driver();
  } catch (...) {
    return finish(Outcome::not_supported, "[" + clause.id + "] backend " +
                                              std::string(to_string(backend)) +
                                              " unavailable: " + describe_current_exception());
  }

  // Finalizers may report into Diagnostics; keep them off the console (checks read them).
  Diagnostics::Capture quiet(true);
  std::vector<Property> properties;
  std::vector<std::string> notes;
  Outcome outcome = Outcome::pass;
  std::string message;
  try {
    ClauseRun run(clause, subject, backend, driver, options);
    try {
      body(run);
    } catch (...) {
      properties = run.properties();
      throw;
    }
    properties = run.properties();
    notes = run.notes();
  } catch (const ClauseFailure& failure) {
    outcome = Outcome::fail;
    message = failure.what();
  } catch (const ClauseNotSupported& unsupported) {
    outcome = Outcome::not_supported;
    message = unsupported.what();
  } catch (const NotImplementedError& error) {
    if (clause.optional && !declared(subject.capabilities, *clause.optional)) {
      outcome = Outcome::not_supported;
      message = "[" + clause.id + "] the plugin declares " +
                std::string(to_string(*clause.optional)) +
                "=false and threw NotImplementedError: " + error.what();
    } else {
      outcome = Outcome::fail;
      message = "[" + clause.id + "] undeclared NotImplementedError (a failure: only a " +
                "capability declared absent allows it): " + error.what();
    }
  } catch (...) {
    outcome = Outcome::fail;
    message = "[" + clause.id +
              "] unexpected exception from the plugin or the host: " + describe_current_exception();
  }
  result.properties = std::move(properties);
  if (outcome == Outcome::pass) message = join_notes(notes);
  return finish(outcome, std::move(message));
}

ClauseResult run_clause(const PluginSubject& subject, std::string_view clause_id, Backend backend,
                        const RunOptions& options) {
  const Clause* clause = catalogue().find(clause_id);
  if (clause == nullptr) {
    throw Error("run_clause: '" + std::string(clause_id) + "' is not in the clause catalogue");
  }
  return run_clause(subject, *clause, backend, options);
}

}  // namespace emm::conformance
