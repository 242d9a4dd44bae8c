#include "emm/conformance/nep49_certify.hpp"

#include <cstdio>
#include <cstring>
#include <memory>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/child_process.hpp"
#include "emm/conformance/nep49_registry.hpp"

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

}  // namespace

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
  ChildOptions options;
  options.result_channel = true;
  options.memory_limit_bytes = settings.memory_limit_bytes;
  try {
    ChildProcess child = ChildProcess::fork(
        [&spec] {
          const ProbeResult probe = probe_nep49_in_process(spec);
          std::fflush(nullptr);
          send_result_frame(probe.loaded ? "OK\t" + probe.description.name
                                         : "NO\t" + probe.failure);
          return 0;
        },
        options);
    const ChildEnd end = child.wait(settings.timeout);
    kill_stray_children();
    std::string problem;
    const std::optional<std::string> payload = decode_frame(child.result_bytes(), problem);
    if (end.kind != ChildEnd::Kind::exited || end.exit_status != 0 || !payload) {
      std::string output = child.output().text();
      while (!output.empty() && output.back() == '\n') output.pop_back();
      result.failure = "loading the handler in a child process failed (it " + end.describe() + ")" +
                       (output.empty() ? "" : "; output: " + output);
      return result;
    }
    if (payload->starts_with("OK\t")) return loaded(spec, payload->substr(3));
    result.failure = payload->size() > 3 ? payload->substr(3) : *payload;
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
        result.message = "[" + clause.id + "] " + describe_current_exception();
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

}  // namespace emm::conformance
