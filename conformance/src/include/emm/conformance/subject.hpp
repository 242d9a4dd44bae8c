// emm/conformance/subject.hpp — what emm-certify certifies, behind one interface: an EMM plugin
// library (--plugin), a Python plugin class (--python) or a NumPy data-memory handler (--nep49,
// --nep49-library).
//
//   std::unique_ptr<Subject> subject = make_subject(options);   // the command line's subject
//   ProbeResult probe = subject->probe(probe_settings);          // loads it in a child
//   settings.load_subject = subject->loader();                   // runs in each clause child
//
// Each kind owns what differs between them: the clauses it answers, how it is loaded (in child
// processes; for --in-process also in emm-certify's own), what the console says about it, and
// when a run certifies nothing. Nothing reaches a child through the environment: the children
// are forked and carry the subject value with them.
//
// Ownership: make_subject returns the only owner; loader()'s function holds what it needs.
// Thread-safety: the const members may be called from any thread; the function loader()
// returns loads the subject into the process that calls it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/clause_scheduler.hpp"
#include "emm/conformance/plugin_probe.hpp"
#include "emm/conformance/report.hpp"

namespace emm::conformance {

struct Clause;

class Subject {
 public:
  virtual ~Subject() = default;

  [[nodiscard]] virtual SubjectKind kind() const noexcept = 0;
  // The report's path: the library (libemm_python for a Python class), or the handler's spec.
  [[nodiscard]] virtual std::string path() const = 0;
  // What the console's first line certifies, e.g. "the NEP 49 handler numpy:X".
  [[nodiscard]] virtual std::string title() const = 0;
  // Every clause of its kind, in catalogue order.
  [[nodiscard]] virtual std::vector<const Clause*> clauses() const = 0;
  // Lines the console prints before the subject is loaded; none by default.
  [[nodiscard]] virtual std::vector<std::string> preface() const { return {}; }

  // Loads it in a child process with the probe's deadline and memory limit (plugin_probe.hpp).
  [[nodiscard]] virtual ProbeResult probe(const ProbeSettings& settings) const = 0;
  // The same in this process, for --in-process once probe() loaded it in a child.
  [[nodiscard]] virtual ProbeResult probe_in_process() const = 0;
  // What the loaded subject declares, as console lines (out), and warnings about it (err).
  virtual void describe(const ProbeResult& probe, std::ostream& out, std::ostream& err) const = 0;
  // The function each process that runs clauses calls to load it and make its evaluator.
  [[nodiscard]] virtual std::function<LoadedSubject()> loader() const = 0;

  // Why a run in which no backend ran certifies nothing and is a usage error (exit status 2),
  // or nullopt when the verdict says it: a Python class runs on the gpu backend only.
  [[nodiscard]] virtual std::optional<std::string> nothing_ran(
      const std::vector<BackendStatus>& backends) const {
    (void)backends;
    return std::nullopt;
  }
};

// A subject kind beyond the plugin library, the Python class and the NEP 49 handler, named on
// the command line by an option of its own: `emm-certify FLAG VALUE [options]`. The command line
// parses it, --help lists it and make_subject builds it, with no other code to change: a kind in
// this tree is a file with its Subject and one row in in_tree_options() (subject_options.cpp); a
// program that calls certify_main may add its own with add_subject_option before it does.
struct SubjectOption {
  std::string flag;        // "--rust-plugin"
  std::string value_name;  // "PATH"
  std::string help;        // what --help says of it, one line
  // The subject for VALUE; throws UsageError when VALUE cannot name one.
  std::function<std::unique_ptr<Subject>(const std::string& value)> make;
};

// Every such option: this tree's rows, then those added. The references stay valid.
[[nodiscard]] const std::vector<const SubjectOption*>& subject_options();
// The option whose flag is `flag`, or nullptr.
[[nodiscard]] const SubjectOption* find_subject_option(std::string_view flag);
// Adds one, before certify_main or parse_certify_args run (not thread-safe). Throws Error when
// the flag is empty, does not start with "--", or is taken.
void add_subject_option(SubjectOption option);

// The subject the command line names (certify_cli.hpp). Throws UsageError for a value a
// SubjectOption cannot use.
[[nodiscard]] std::unique_ptr<Subject> make_subject(const CertifyOptions& options);

// The subjects make_subject builds, for tests and for a host that certifies without a command
// line. `capabilities`: --capabilities for a Python class (nullopt: the class's own).
[[nodiscard]] std::unique_ptr<Subject> plugin_library_subject(std::string path);
[[nodiscard]] std::unique_ptr<Subject> python_class_subject(
    std::string library, std::string target, std::optional<std::string> capabilities);
[[nodiscard]] std::unique_ptr<Subject> nep49_handler_subject(Nep49SubjectSpec spec);

}  // namespace emm::conformance
