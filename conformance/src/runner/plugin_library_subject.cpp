#include "runner/plugin_library_subject.hpp"

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/evaluate.hpp"
#include "emm/errors.hpp"
#include "runner/report_format.hpp"
#include "runner/thread_sanitizer.hpp"

namespace emm::conformance {
namespace {

// The clause left the device unusable for this process: whatever it concluded, it fails for
// that, since only this clause's plugin calls ran since the device was last usable.
void poisoned_device(ClauseResult& result, const std::string& why) {
  const std::string text =
      "after this clause the device cannot be used by the process any more (" + why +
      "): the plugin made the driver fault, e.g. by freeing memory twice or handing out memory "
      "that was freed, so a copy or memset hit memory that was no longer allocated";
  if (result.outcome == Outcome::pass || result.outcome == Outcome::not_supported) {
    result.outcome = Outcome::fail;
    result.message = result.clause->tag(text);
  } else {
    result.message += "; " + text;
  }
}

}  // namespace

PluginLibrarySubject::PluginLibrarySubject(std::string path)
    : PluginLibrarySubject(
          path, [path] { return load_plugin(path); }, false) {}

PluginLibrarySubject::PluginLibrarySubject(std::string path, PluginLoad load, bool python_plugin)
    : path_(std::move(path)), load_(std::move(load)), python_plugin_(python_plugin) {}

std::vector<const Clause*> PluginLibrarySubject::clauses() const {
  return catalogue().plugin_clauses();
}

std::vector<std::string> PluginLibrarySubject::preface() const {
  if (const std::optional<std::string> line = thread_sanitizer_status(path_)) return {*line};
  return {};
}

ProbeResult PluginLibrarySubject::probe(const ProbeSettings& settings) const {
  return probe_plugin(path_, settings, load_);
}

ProbeResult PluginLibrarySubject::probe_in_process() const {
  return probe_plugin_in_process(path_, load_);
}

void PluginLibrarySubject::describe(const ProbeResult& probe, std::ostream& out,
                                    std::ostream& err) const {
  out << "plugin '" << report_format::console_text(probe.description.name) << "', declares:";
  for (const CapabilityField& field : kCapabilityFields) {
    if (declared(probe.description.capabilities, field)) out << " " << field.name;
  }
  out << "\n";
  if (!probe.interface_version) {
    err << "emm-certify: warning: could not read interface_version() from a null-context "
           "instance ("
        << report_format::console_text(probe.interface_problem) << "; REG-1/REG-2 report why)\n";
  }
}

// The plugin clauses on a backend made with the run's settings; a clause that leaves the device
// unusable fails for it.
std::function<LoadedSubject()> PluginLibrarySubject::loader() const {
  return [load = load_, python_plugin = python_plugin_]() -> LoadedSubject {
    LoadedSubject loaded;
    try {
      loaded.evaluate = [subject = subject_from_library(load()), python_plugin](
                            const Clause& clause, BackendKind kind, const BackendSettings& settings,
                            bool& reusable) {
        try {
          const std::unique_ptr<Backend> backend = make_backend(kind, settings);
          RunOptions options;
          options.exploration = settings.exploration;
          options.python_plugin = python_plugin;
          ClauseResult result = evaluate(subject, clause, *backend, options);
          if (const std::optional<std::string> why = backend->unusable_device()) {
            reusable = false;
            poisoned_device(result, *why);
          }
          if (!backend->reusable()) reusable = false;
          return result;
        } catch (...) {
          return backend_not_available(subject, clause, kind, describe_current_exception());
        }
      };
    } catch (...) {
      loaded.failure = describe_current_exception();
    }
    return loaded;
  };
}

std::unique_ptr<Subject> plugin_library_subject(std::string path) {
  return std::make_unique<PluginLibrarySubject>(std::move(path));
}

}  // namespace emm::conformance
