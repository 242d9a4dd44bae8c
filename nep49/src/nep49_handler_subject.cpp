// A NumPy data-memory handler (NEP 49) as emm-certify's subject (subject.hpp): the NEP49
// clauses, with the same scheduler, outcomes and reports as a plugin. Like a plugin library the
// handler is loaded (and CPython started, for --nep49) only in child processes, and here only for
// --in-process.
#include <cstdio>
#include <cstring>
#include <memory>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/child_process.hpp"
#include "emm/conformance/nep49_registry.hpp"
#include "emm/conformance/nep49_subject.hpp"
#include "emm/conformance/subject.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {
namespace {

// The name as far as it is text: up to its NUL, or all 127 bytes when it has none (NEP49-1).
std::string handler_name(const nep49::Handler& handler) {
  const void* end = std::memchr(handler.name, '\0', sizeof handler.name);
  const std::size_t length =
      end != nullptr ? static_cast<const char*>(end) - handler.name : sizeof handler.name;
  return std::string(handler.name, length);
}

ProbeResult loaded(const Nep49SubjectSpec& spec, const std::string& name) {
  ProbeResult result;
  result.loaded = true;
  result.description.name = name;
  result.description.path = spec.text();
  return result;
}

ProbeResult probe_nep49_in_process(const Nep49SubjectSpec& spec) {
  try {
    const std::unique_ptr<Nep49Subject> subject = Nep49Subject::load(spec);
    return loaded(spec, handler_name(subject->handler()));
  } catch (const std::exception& error) {
    ProbeResult result;
    result.failure = error.what();
    return result;
  }
}

ProbeResult probe_nep49(const Nep49SubjectSpec& spec, const ProbeSettings& settings) {
  ProbeResult result;
  try {
    const OneFrame answer = one_frame_from_child(
        [&spec] {
          const ProbeResult probe = probe_nep49_in_process(spec);
          std::fflush(nullptr);
          send_result_frame(probe.loaded ? "OK\t" + probe.description.name
                                         : "NO\t" + probe.failure);
        },
        settings.timeout, settings.memory_limit_bytes);
    if (!answer.payload) {
      std::string output = answer.output;
      while (!output.empty() && output.back() == '\n') output.pop_back();
      result.failure = "loading the handler in a child process failed (it " +
                       answer.end.describe() + ")" + (output.empty() ? "" : "; output: " + output);
      return result;
    }
    const std::string& payload = *answer.payload;
    if (payload.starts_with("OK\t")) return loaded(spec, payload.substr(3));
    result.failure = payload.size() > 3 ? payload.substr(3) : payload;
  } catch (const std::exception& error) {
    result.failure = std::string("the loading process could not start: ") + error.what();
  }
  return result;
}

std::function<LoadedSubject()> nep49_subject_loader(const Nep49SubjectSpec& spec) {
  return [spec]() -> LoadedSubject {
    LoadedSubject loaded;
    std::shared_ptr<Nep49Subject> subject;
    try {
      subject = Nep49Subject::load(spec);
    } catch (...) {
      loaded.failure = describe_current_exception();
      return loaded;
    }
    loaded.evaluate = [subject](const Clause& clause, BackendKind kind,
                                const BackendSettings& settings, bool& reusable) {
      std::unique_ptr<Backend> backend;
      try {
        backend = make_backend(kind, settings);
      } catch (...) {
        ClauseResult result;
        result.clause = &clause;
        result.backend = kind;
        result.level = clause.level;
        result.outcome = Outcome::not_supported;
        result.message = clause.tag(describe_current_exception());
        return result;
      }
      ClauseResult result = evaluate_nep49(*subject, clause, *backend, settings.exploration);
      if (const std::optional<std::string> why = backend->unusable_device()) {
        reusable = false;
        result.outcome = Outcome::fail;
        result.message +=
            "; after this clause the device cannot be used by the process any more (" + *why + ")";
      }
      return result;
    };
    return loaded;
  };
}

class Nep49HandlerSubject final : public Subject {
 public:
  explicit Nep49HandlerSubject(Nep49SubjectSpec spec) : spec_(std::move(spec)) {}

  SubjectKind kind() const noexcept override { return SubjectKind::nep49_handler; }
  std::string path() const override { return spec_.text(); }
  std::string title() const override { return "the NEP 49 handler " + spec_.text(); }
  std::vector<const Clause*> clauses() const override { return catalogue().nep49_clauses(); }
  ProbeResult probe(const ProbeSettings& settings) const override {
    return probe_nep49(spec_, settings);
  }
  ProbeResult probe_in_process() const override { return probe_nep49_in_process(spec_); }
  void describe(const ProbeResult& probe, std::ostream& out, std::ostream&) const override {
    out << "handler '" << report_format::console_text(probe.description.name) << "'\n";
  }
  std::function<LoadedSubject()> loader() const override { return nep49_subject_loader(spec_); }

 private:
  Nep49SubjectSpec spec_;
};

}  // namespace

std::unique_ptr<Subject> nep49_handler_subject(Nep49SubjectSpec spec) {
  return std::make_unique<Nep49HandlerSubject>(std::move(spec));
}

}  // namespace emm::conformance
