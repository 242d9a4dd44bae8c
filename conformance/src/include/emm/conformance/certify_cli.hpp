// emm/conformance/certify_cli.hpp — emm-certify's command line (spec §5).
//
//   emm-certify --plugin PATH | --python MODULE[:ATTR] [--capabilities NAME[,NAME...]]
//             | --nep49 MODULE:ATTR | --nep49-library PATH[:SYMBOL]
//               [--backend fake|gpu|all] [--only ID[,ID...]]
//               [--json FILE] [--junit FILE] [--markdown FILE] [--html FILE] [--logs DIR]
//               [--timeout-s N] [--memory-limit SIZE|none] [--devices N]
//               [--isolation backend|clause]
//               [--in-process] [--list] [--help]
//
//   CertifyOptions options = parse_certify_args(arguments);   // throws UsageError
//
// Parsing is pure (unit-tested): it checks the shape of every argument (an empty value, an
// unknown clause, a host clause in --only, the same report path twice, a report path equal to
// the plugin's) and nothing on disk; certify.hpp checks the report paths against the file
// system before any clause runs. A --plugin without a slash is a file in the current directory,
// never a name the dynamic loader searches for.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/nep49_subject.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {

struct SubjectOption;

// A bad command line; what() says what is wrong (the usage text is printed after it).
class UsageError : public Error {
 public:
  using Error::Error;
};

// How the clauses are kept apart from each other and from emm-certify.
enum class Isolation {
  backend,     // worker processes run the clauses one after another (one on a GPU, two side by
               // side on the fake); replaced after a crash or a timeout (the default: fast)
  clause,      // one process per (clause, backend)
  in_process,  // in emm-certify's own process, for gdb and sanitizers: no protection at all
};
std::string_view to_string(Isolation isolation) noexcept;

struct ReportPaths {
  std::string json;
  std::string junit;
  std::string markdown;
  std::string html;
  // A directory for each clause's complete output, one file per (clause, backend):
  // <logs>/<ID>.<backend>.log.
  std::string logs;
};

struct CertifyOptions {
  std::string plugin_path;  // as given, with "./" prepended when it has no slash
  // --python: the Python plugin class (MODULE[:ATTR]); plugin_path is then libemm_python, told
  // the class and the --capabilities override in each child (subject.hpp).
  std::string python_target;
  std::optional<std::string> python_capabilities;
  // A NumPy data-memory handler to certify against the nep49 clauses instead of a plugin.
  std::optional<Nep49SubjectSpec> nep49;
  // Any other subject kind: its option (subject.hpp's subject_options()) and the value given.
  const SubjectOption* subject_option = nullptr;
  std::string subject_value;
  std::vector<BackendKind> backends{kBackendKinds.begin(), kBackendKinds.end()};  // all
  // empty: every clause of the subject's kind (plugin or nep49); else each once, in order
  std::vector<const Clause*> only;
  ReportPaths reports;
  int timeout_s = 60;
  // --deadline: the whole run's bound in seconds (what has not finished then is not_run, as at
  // an interruption); 0: none.
  unsigned deadline_s = 15 * 60;
  // Data-segment limit of each child (bytes); nullopt: the default (kDefaultMemoryLimit, or
  // none in a sanitizer build); 0: none.
  std::optional<std::size_t> memory_limit;
  Isolation isolation = Isolation::backend;
  BackendSettings backend_settings;  // --devices: BackendSettings::fake_devices
  bool list = false;
  bool help = false;
};

// The default limit on what a plugin's process may allocate (RLIMIT_DATA): enough for every
// check, small enough that a runaway plugin fails its clause instead of swapping the machine.
inline constexpr std::size_t kDefaultMemoryLimit = std::size_t{16} << 30;

// Parses the arguments after the program name. Throws UsageError.
CertifyOptions parse_certify_args(std::span<const std::string_view> args);
// Whether `flag` is one of emm-certify's own options (--plugin, --json, ...; not a SubjectOption).
[[nodiscard]] bool is_certify_option(std::string_view flag) noexcept;
std::string certify_usage();

// libemm_python for --python: $EMM_PYTHON_LIBRARY, else next to the running program, else where
// the build or the installation put it; "" when this kit was built without it.
std::string python_library_path();
// Why --python cannot work with this build ("" when libemm_python was built).
std::string python_unavailable_reason();

}  // namespace emm::conformance
