#include "emm/conformance/certify_cli.hpp"

#include <charconv>
#include <set>

#include "emm/conformance/catalogue.hpp"

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

}  // namespace

std::string certify_usage() {
  return "usage: emm-certify --plugin PATH.so [--backend fake|gpu|all] [--only ID[,ID...]]\n"
         "                   [--json FILE] [--junit FILE] [--markdown FILE] [--list]\n"
         "                   [--timeout-s N]\n"
         "\n"
         "Certifies an EMM plugin library against the emmkit clause catalogue.\n"
         "  --plugin PATH     the plugin shared library (built with EMM_EXPORT_MEMORY_MANAGER)\n"
         "  --backend B       fake, gpu or all (default: all = fake, and gpu when present)\n"
         "  --only IDS        certify only these plugin clauses (comma-separated ids)\n"
         "  --json FILE       write the JSON report\n"
         "  --junit FILE      write JUnit XML (one testcase per clause and backend)\n"
         "  --markdown FILE   write the Markdown certificate\n"
         "  --list            print the catalogue (id, level, target, optional, title) and exit\n"
         "  --timeout-s N     seconds each clause may take before it counts as a hang (60)\n"
         "Exit status: 0 certified, 1 not certified, 2 usage error or plugin not loadable.\n";
}

CertifyOptions parse_certify_args(std::span<const std::string_view> args) {
  CertifyOptions options;
  std::set<std::string> seen;
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
      if (has_inline) return std::string(inline_value);
      if (i + 1 >= args.size()) throw UsageError(std::string(arg) + " needs a value");
      return std::string(args[++i]);
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
    } else if (arg == "--plugin") {
      once();
      options.plugin_path = value();
      if (options.plugin_path.empty()) throw UsageError("--plugin needs a path");
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
    } else if (arg == "--only") {
      once();
      const std::vector<std::string> ids = split_commas(value());
      if (ids.empty()) throw UsageError("--only needs at least one clause id");
      for (const std::string& id : ids) {
        const Clause* clause = catalogue().find(id);
        if (clause == nullptr) {
          throw UsageError("--only: '" + id + "' is not a clause id (see --list)");
        }
        if (!clause->plugin) {
          throw UsageError("--only: " + id +
                           " is a host clause, checked by the kit's own suites; emm-certify "
                           "certifies plugin clauses");
        }
        options.only.push_back(clause);
      }
    } else if (arg == "--json") {
      once();
      options.json_path = value();
    } else if (arg == "--junit") {
      once();
      options.junit_path = value();
    } else if (arg == "--markdown") {
      once();
      options.markdown_path = value();
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
    } else {
      throw UsageError("unknown argument '" + std::string(args[i]) + "'");
    }
  }
  if (!options.help && !options.list && options.plugin_path.empty()) {
    throw UsageError("--plugin PATH is required");
  }
  return options;
}

}  // namespace emm::conformance
