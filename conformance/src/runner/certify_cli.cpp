#include "emm/conformance/certify_cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <set>

#include "emm/conformance/subject.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "emm/plugin_declaration.hpp"
#include "emm/python/dotted_name.hpp"

namespace emm::conformance {
namespace {

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view part = text.substr(start, comma - start);
    if (!part.empty()) parts.emplace_back(part);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

// --deadline: "900", "900s", "15m", "2h" (seconds), or "none" (0); at most a week.
unsigned parse_deadline(std::string_view text) {
  if (text == "none") return 0;
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  const unsigned scale = unit.empty() || unit == "s" ? 1
                         : unit == "m"               ? 60
                         : unit == "h"               ? 3600
                                                     : 0;
  constexpr unsigned kWeek = 7 * 24 * 3600;
  if (error != std::errc() || scale == 0 || value == 0 || value > kWeek / scale) {
    throw UsageError(
        "--deadline needs a duration such as 900, 900s, 15m or 2h (at most a week), "
        "or none (got '" +
        std::string(text) + "')");
  }
  return value * scale;
}

// "16G", "512M", "1048576", "none".
std::size_t parse_size(std::string_view text) {
  if (text == "none") return 0;
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::size_t shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  if (suffix == "M" || suffix == "m") shift = 20;
  if (suffix == "G" || suffix == "g") shift = 30;
  const bool suffix_ok = suffix.empty() || shift != 0;
  if (error != std::errc() || end == text.data() || !suffix_ok || value == 0 ||
      value > (std::size_t{1} << (63 - shift))) {
    throw UsageError("--memory-limit needs a size such as 16G, 512M or 1048576, or none (got '" +
                     std::string(text) + "')");
  }
  return value << shift;
}

#ifdef EMM_PYTHON_LIBRARY_BUILD_PATH
bool is_file(const std::string& path) { return !path.empty() && ::access(path.c_str(), R_OK) == 0; }

// The directory of the running program (for a libemm_python installed beside emm-certify).
std::string program_directory() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  const std::string path(buffer, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}
#endif

}  // namespace

std::string python_unavailable_reason() {
#ifdef EMM_PYTHON_LIBRARY_BUILD_PATH
  return {};
#elif defined(EMM_PYTHON_NOT_BUILT_REASON)
  return "this emmkit was built without libemm_python (" EMM_PYTHON_NOT_BUILT_REASON
         "); install python3-dev and pybind11 and configure with -DEMMKIT_PYTHON=ON";
#else
  return "this emmkit was built without libemm_python; install python3-dev and pybind11 and "
         "configure with -DEMMKIT_PYTHON=ON";
#endif
}

std::string python_library_path() {
  if (const char* given = std::getenv("EMM_PYTHON_LIBRARY"); given != nullptr && *given != '\0') {
    return given;
  }
#ifdef EMM_PYTHON_LIBRARY_BUILD_PATH
  for (const std::string& candidate :
       {program_directory() + "/libemm_python.so", std::string(EMM_PYTHON_LIBRARY_BUILD_PATH),
        std::string(EMM_PYTHON_LIBRARY_INSTALL_PATH)}) {
    if (is_file(candidate)) return candidate;
  }
  return EMM_PYTHON_LIBRARY_BUILD_PATH;
#else
  return {};
#endif
}

std::string_view to_string(Isolation isolation) noexcept {
  switch (isolation) {
    case Isolation::clause:
      return "clause";
    case Isolation::in_process:
      return "in-process";
    case Isolation::backend:
      break;
  }
  return "backend";
}

namespace {

// --help's lines for the subject kinds of subject_options(), as for the built-in ones.
std::string subject_option_lines() {
  std::string lines;
  for (const SubjectOption* option : subject_options()) {
    std::string head = "  " + option->flag + " " + option->value_name;
    head.resize(std::max<std::size_t>(head.size() + 1, 22), ' ');
    lines += head + option->help + "\n";
  }
  return lines;
}

// emm-certify's own options, which a SubjectOption may not take; the usage text shows each
// (CertifyCli.TheOptionListIsTheUsageTextsFlagsAndTheParserKnowsEach).
constexpr std::string_view kCertifyOptions[] = {"--plugin",
                                                "--python",
                                                "--capabilities",
                                                "--nep49",
                                                "--nep49-library",
                                                "--backend",
                                                "--only",
                                                "--json",
                                                "--junit",
                                                "--markdown",
                                                "--html",
                                                "--logs",
                                                "--timeout-s",
                                                "--deadline",
                                                "--memory-limit",
                                                "--devices",
                                                "--seed",
                                                "--budget",
                                                "--isolation",
                                                "--in-process",
                                                "--list",
                                                "--help",
                                                "-h"};

}  // namespace

bool is_certify_option(std::string_view flag) noexcept {
  return std::find(std::begin(kCertifyOptions), std::end(kCertifyOptions), flag) !=
         std::end(kCertifyOptions);
}

std::string certify_usage() {
  const std::string python = python_unavailable_reason();
  return "usage: emm-certify --plugin PATH [--backend fake|gpu|all] [--only ID[,ID...]]\n"
         "       emm-certify --python MODULE[:ATTR] [--capabilities NAME[,NAME...]] ...\n"
         "       emm-certify --nep49 MODULE:ATTR | --nep49-library PATH[:SYMBOL] [options]\n"
         "                   [--json FILE] [--junit FILE] [--markdown FILE] [--html FILE]\n"
         "                   [--logs DIR]\n"
         "                   [--timeout-s N] [--deadline D] [--memory-limit SIZE|none]\n"
         "                   [--devices N]\n"
         "                   [--seed N] [--budget N]\n"
         "                   [--isolation backend|clause] [--in-process] [--list] [--help]\n"
         "\n"
         "Certifies an EMM plugin library against the emmkit clause catalogue.\n"
         "  --plugin PATH       the plugin shared library (built with EMM_EXPORT_MEMORY_MANAGER);\n"
         "                      a PATH without a slash is a file in the current directory, never\n"
         "                      a name the dynamic loader searches for. A library built with\n"
         "                      -fsanitize=thread runs with ThreadSanitizer's runtime (preloaded;\n"
         "                      emm-certify restarts with it): a race it reports fails the clause\n"
         "                      that ran (ALLOC-10 and LIFE-8 run threads)\n"
         "  --python M[:A]      certify the Python EMM plugin class A of module M (A defaults to\n"
         "                      _numba_memory_manager, as NUMBA_CUDA_MEMORY_MANAGER reads it)\n"
         "                      through libemm_python, on the gpu backend (no GPU: exit 2)\n" +
         (python.empty() ? std::string()
                         : "                      NOT AVAILABLE: " + python + "\n") +
         "  --capabilities C    with --python: the capabilities to certify (comma-separated, e.g.\n"
         "                      ipc,memory_info,thread_safe; none for none) instead of the "
         "class's\n"
         "                      emmkit_capabilities attribute (without one: memory_info and ipc\n"
         "                      inferred from the methods the class overrides)\n"
         "  --nep49 MODULE:ATTR certify a NumPy data-memory handler (NEP 49) against the NEP49\n"
         "                      clauses: the \"mem_handler\" capsule MODULE.ATTR, or what ATTR()\n"
         "                      returns; numpy:PyDataMem_DefaultHandler is NumPy's default\n"
         "  --nep49-library P   the same for a shared library exporting\n"
         "                      emm::nep49::Handler* emm_nep49_handler() (P:SYMBOL: another "
         "name)\n" +
         subject_option_lines() +
         "  --backend B         fake, gpu or all (default: all = fake, and gpu when present)\n"
         "  --only IDS          certify only these plugin clauses (comma-separated ids; each runs\n"
         "                      once): the verdict is then PARTIAL at best, never CERTIFIED\n"
         "  --json FILE         write the JSON report (schema: docs/report.schema.json)\n"
         "  --junit FILE        write JUnit XML (one testcase per clause and backend)\n"
         "  --markdown FILE     write the Markdown certificate\n"
         "  --html FILE         write the HTML certificate (one self-contained file)\n"
         "  --logs DIR          write each clause's complete stdout and stderr to\n"
         "                      DIR/<ID>.<backend>.log (the reports keep them too)\n"
         "  --timeout-s N       seconds each clause (and loading the plugin) may take (60)\n"
         "  --deadline D        the whole run's bound: 900, 900s, 15m, 2h or none (default\n"
         "                      15m); then what runs is ended, the rest is not_run, the\n"
         "                      reports are written and the exit status is 124\n"
         "  --devices N         devices of the fake backend's machine, 1 to 16 (default 2, as\n"
         "                      the DEV clauses need; 1 leaves them not_supported); the gpu\n"
         "                      backend uses every GPU present\n"
         "  --seed N            the seed of the generated sequences every plugin clause is\n"
         "                      checked over (default 1: certificates are reproducible); a\n"
         "                      failure's reproducer names the seed that replays it\n"
         "  --budget N          sequences per clause (default: " +
         std::to_string(default_budget(BackendKind::fake)) + " on the fake, " +
         std::to_string(default_budget(BackendKind::gpu)) +
         " on a GPU); more for nightly runs, e.g. 500\n"
         "  --memory-limit S    data-segment limit of each process that runs plugin code: 16G,\n"
         "                      512M, a byte count, or none (default 16G; none where a\n"
         "                      sanitizer runtime is loaded)\n"
         "  --isolation I       backend: worker processes run the clauses in a fixed order and\n"
         "                      are replaced after a crash or a timeout (default; one on a GPU,\n"
         "                      two side by side on the fake, each with fixed clauses);\n"
         "                      clause: one process per clause and backend\n"
         "  --in-process        run every clause in emm-certify's own process (for gdb and\n"
         "                      sanitizers; a crashing plugin then takes emm-certify down)\n"
         "  --list              print the catalogue (id, level, target, optional, title) and exit\n"
         "  report ... --html   one HTML page over many JSON reports (a matrix for CI dashboards)\n"
         "Every report path is checked before any clause runs.\n"
         "\n"
         "Exit status:\n"
         "  0  CERTIFIED: every plugin clause ran and every MUST clause passed on every backend\n"
         "     that ran (the verdict names them: CERTIFIED (fake) without a GPU)\n"
         "  1  NOT CERTIFIED: a MUST clause failed, crashed or timed out, or no backend could run\n"
         "  2  usage error, a report that cannot be written, or a plugin that could not be loaded\n"
         "     (the reports are still written, every clause marked not run)\n"
         "  3  PARTIAL: an --only run in which every selected clause passed\n"
         "  124  NOT CERTIFIED: the run reached its --deadline (the reports hold what ran)\n"
         "  128+n  NOT CERTIFIED: signal n (SIGINT 130, SIGTERM 143, SIGHUP 129) interrupted\n"
         "       the run; every process it started was ended and the reports written\n";
}

CertifyOptions parse_certify_args(std::span<const std::string_view> args) {
  CertifyOptions options;
  std::set<std::string> seen;
  std::vector<std::string> only_ids;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view inline_value;
    bool has_inline = false;
    if (arg.starts_with("--")) {
      if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    auto value = [&]() -> std::string {
      std::string text;
      if (has_inline) {
        text = std::string(inline_value);
      } else {
        if (i + 1 >= args.size()) throw UsageError(std::string(arg) + " needs a value");
        text = std::string(args[++i]);
      }
      if (text.empty()) throw UsageError(std::string(arg) + " needs a non-empty value");
      return text;
    };
    auto once = [&] {
      if (!seen.insert(std::string(arg)).second) {
        throw UsageError(std::string(arg) + " is given more than once");
      }
    };
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--in-process") {
      once();
      options.isolation = Isolation::in_process;
    } else if (arg == "--plugin") {
      once();
      options.plugin_path = value();
      if (options.plugin_path.find('/') == std::string::npos) {
        options.plugin_path = "./" + options.plugin_path;
      }
    } else if (arg == "--python") {
      once();
      options.python_target = value();
      const std::string_view target = options.python_target;
      const std::size_t colon = target.find(':');
      if (!python::is_dotted_name(target.substr(0, colon)) ||
          (colon != std::string_view::npos && !python::is_dotted_name(target.substr(colon + 1)))) {
        throw UsageError(
            "--python needs MODULE[:ATTR] with dotted Python names, e.g. "
            "rmm.allocators.numba:RMMNumbaManager (got '" +
            visible_text(options.python_target) + "')");
      }
    } else if (arg == "--capabilities") {
      once();
      const std::string text = value();
      for (const std::string& name : split_commas(text)) {
        const CapabilityField* field = find_capability(name);
        if (name == "none" && text == "none") continue;
        if (field == nullptr || field->name == "runs_on_fake_driver" ||
            field->name == "host_only_derived") {
          std::string known;
          for (const CapabilityField& each : kCapabilityFields) {
            if (each.name == "runs_on_fake_driver" || each.name == "host_only_derived") continue;
            if (!known.empty()) known += ',';
            known += each.name;
          }
          throw UsageError("--capabilities: '" + name +
                           "' is not a capability a Python plugin can declare; use some of " +
                           known + ", or none");
        }
      }
      options.python_capabilities = text;
    } else if (arg == "--backend") {
      once();
      const std::string backend = value();
      if (backend == "all") {
        options.backends.assign(kBackendKinds.begin(), kBackendKinds.end());
      } else if (auto parsed = parse_backend(backend)) {
        options.backends = {*parsed};
      } else {
        throw UsageError("--backend must be fake, gpu or all (got '" + backend + "')");
      }
    } else if (arg == "--nep49" || arg == "--nep49-library") {
      if (options.nep49) throw UsageError("--nep49 and --nep49-library name one handler: give one");
      once();
      try {
        options.nep49 = arg == "--nep49" ? Nep49SubjectSpec::module(value())
                                         : Nep49SubjectSpec::library(value());
      } catch (const std::invalid_argument& error) {
        throw UsageError(error.what());
      }
    } else if (arg == "--only") {
      once();
      only_ids = split_commas(value());
      if (only_ids.empty()) throw UsageError("--only needs at least one clause id");
    } else if (arg == "--json" || arg == "--junit" || arg == "--markdown" || arg == "--html") {
      once();
      std::string& path = arg == "--json"    ? options.reports.json
                          : arg == "--junit" ? options.reports.junit
                          : arg == "--html"  ? options.reports.html
                                             : options.reports.markdown;
      path = value();
    } else if (arg == "--logs") {
      once();
      options.reports.logs = value();
    } else if (arg == "--timeout-s") {
      once();
      const std::string text = value();
      int seconds = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      if (error != std::errc() || end != text.data() + text.size() || seconds < 1 ||
          seconds > 86400) {
        throw UsageError("--timeout-s needs a whole number of seconds from 1 to 86400 (got '" +
                         text + "')");
      }
      options.timeout_s = seconds;
    } else if (arg == "--deadline") {
      once();
      options.deadline_s = parse_deadline(value());
    } else if (arg == "--devices") {
      once();
      const std::string text = value();
      int devices = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), devices);
      if (error != std::errc() || end != text.data() + text.size() || devices < 1 ||
          devices > kMaxFakeDevices) {
        throw UsageError("--devices needs a whole number of fake devices from 1 to " +
                         std::to_string(kMaxFakeDevices) + " (got '" + text + "')");
      }
      options.backend_settings.fake_devices = devices;
    } else if (arg == "--seed") {
      once();
      const std::string text = value();
      std::uint64_t seed = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
      if (error != std::errc() || end != text.data() + text.size()) {
        throw UsageError("--seed needs a whole number from 0 to 18446744073709551615 (got '" +
                         text + "'); a reproducer names the seed that replays it");
      }
      options.backend_settings.exploration.seed = seed;
    } else if (arg == "--budget") {
      once();
      const std::string text = value();
      int budget = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), budget);
      if (error != std::errc() || end != text.data() + text.size() || budget < 1 ||
          budget > kMaxBudget) {
        throw UsageError("--budget needs a whole number of sequences per clause from 1 to " +
                         std::to_string(kMaxBudget) + " (got '" + text + "')");
      }
      options.backend_settings.exploration.budget = budget;
    } else if (arg == "--memory-limit") {
      once();
      options.memory_limit = parse_size(value());
    } else if (arg == "--isolation") {
      once();
      const std::string mode = value();
      if (mode == "backend") {
        options.isolation = Isolation::backend;
      } else if (mode == "clause") {
        options.isolation = Isolation::clause;
      } else {
        throw UsageError("--isolation must be backend or clause (got '" + mode +
                         "'); --in-process runs the clauses in emm-certify itself");
      }
    } else if (const SubjectOption* subject = find_subject_option(arg)) {
      once();
      if (options.subject_option != nullptr) {
        throw UsageError(options.subject_option->flag + " and " + subject->flag +
                         " exclude each other: certify one subject per run");
      }
      options.subject_option = subject;
      options.subject_value = value();
    } else {
      throw UsageError("unknown argument '" + std::string(args[i]) + "'");
    }
  }
  if (seen.contains("--isolation") && seen.contains("--in-process")) {
    throw UsageError("--isolation and --in-process exclude each other");
  }
  if (!options.python_target.empty() && !options.plugin_path.empty()) {
    throw UsageError("--plugin and --python exclude each other: certify a library or a class");
  }
  if (options.python_capabilities && options.python_target.empty()) {
    throw UsageError("--capabilities applies to --python only: a plugin library declares its own");
  }
  if (!options.python_target.empty() && !options.help && !options.list) {
    if (const std::string why = python_unavailable_reason(); !why.empty()) {
      throw UsageError("--python cannot be used: " + why);
    }
    options.plugin_path = python_library_path();
  }
  if (options.nep49 && !options.python_target.empty()) {
    throw UsageError("--python and --nep49 exclude each other: certify one subject per run");
  }
  // The flag that named the NEP 49 handler, for the messages below.
  const char* const nep49_flag = !options.nep49 ? nullptr
                                 : options.nep49->kind == Nep49SubjectSpec::Kind::module
                                     ? "--nep49"
                                     : "--nep49-library";
  if (options.nep49 && !options.plugin_path.empty()) {
    throw UsageError("--plugin and " + std::string(nep49_flag) +
                     " exclude each other: certify one subject per run");
  }
  if (options.subject_option != nullptr) {
    const char* other = !options.python_target.empty() ? "--python"
                        : !options.plugin_path.empty() ? "--plugin"
                                                       : nep49_flag;
    if (other != nullptr) {
      throw UsageError(std::string(other) + " and " + options.subject_option->flag +
                       " exclude each other: certify one subject per run");
    }
  }
  if (!options.help && !options.list && options.plugin_path.empty() && !options.nep49 &&
      options.subject_option == nullptr) {
    throw UsageError(
        "--plugin PATH is required (or, for a NumPy handler, --nep49 MODULE:ATTR or "
        "--nep49-library PATH)");
  }
  for (const std::string& id : only_ids) {
    const Clause* clause = catalogue().find(id);
    if (clause == nullptr) {
      throw UsageError("--only: '" + id + "' is not a clause id (see --list)");
    }
    // An added subject kind's clauses are known once its subject is built: certify_main checks
    // them (Subject::clauses).
    if (options.subject_option == nullptr && options.nep49 && !clause->nep49) {
      throw UsageError("--only: " + id +
                       " is not a NEP49 clause; a --nep49 run certifies the NEP49-* clauses");
    }
    if (options.subject_option == nullptr && !options.nep49 && clause->nep49) {
      throw UsageError("--only: " + id +
                       " is a NEP 49 handler clause: certify a handler with --nep49 or "
                       "--nep49-library");
    }
    if (!clause->plugin && !clause->nep49) {
      throw UsageError("--only: " + id +
                       " is a host clause, checked by the kit's own suites; emm-certify "
                       "certifies plugin clauses");
    }
    if (std::find(options.only.begin(), options.only.end(), clause) == options.only.end()) {
      options.only.push_back(clause);
    }
  }
  // The same file for two reports, or a report over the plugin, would lose one of them.
  std::vector<std::pair<std::string_view, const std::string*>> named = {
      {"--json", &options.reports.json},
      {"--junit", &options.reports.junit},
      {"--markdown", &options.reports.markdown},
      {"--html", &options.reports.html}};
  const std::string& subject_path =
      options.nep49 && options.nep49->kind == Nep49SubjectSpec::Kind::library
          ? options.nep49->location
          : options.plugin_path;
  for (std::size_t a = 0; a < named.size(); ++a) {
    const std::string& path = *named[a].second;
    if (path.empty()) continue;
    if (path == subject_path || "./" + path == subject_path) {
      throw UsageError(std::string(named[a].first) + " " + path +
                       " is the plugin library itself: writing the report would overwrite it");
    }
    for (std::size_t b = a + 1; b < named.size(); ++b) {
      if (*named[b].second == path) {
        throw UsageError(std::string(named[a].first) + " and " + std::string(named[b].first) +
                         " name the same file " + path + "; give each report its own path");
      }
    }
  }
  return options;
}

}  // namespace emm::conformance
