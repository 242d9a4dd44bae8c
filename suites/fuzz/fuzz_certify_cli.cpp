// fuzz_certify_cli — emm-certify's command line (certify_cli.hpp) on arbitrary arguments: the
// input is split at newlines into arguments for parse_certify_args(); a command line it accepts
// then goes to check_report_paths(), which only examines the file system (stat, access,
// realpath) and writes nothing, so fuzzing it cannot touch a file. Relative paths are relative
// to the working directory (scripts/fuzz.sh runs each target in its own scratch folder).
//
// Findings (abort): any exception but UsageError; an accepted command line that breaks what the
// parser promises (a plugin path without a slash, --only naming a clause twice or a clause not
// certified on plugins, a timeout outside 1..86400 s, no plugin without --help or --list).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/report_paths.hpp"
#include "fuzz_support.hpp"

namespace emm::fuzz {
namespace {

using conformance::CertifyOptions;
using conformance::UsageError;

std::vector<std::string_view> arguments_of(std::string_view input) {
  std::vector<std::string_view> arguments;
  while (!input.empty()) {
    const std::size_t newline = input.find('\n');
    arguments.push_back(input.substr(0, newline));
    if (newline == std::string_view::npos) break;
    input.remove_prefix(newline + 1);
  }
  return arguments;
}

void check_promises(const CertifyOptions& options) {
  if (!options.help && !options.list && options.plugin_path.empty()) {
    finding("a command line without --plugin, --help or --list was accepted");
  }
  if (!options.plugin_path.empty() && options.plugin_path.find('/') == std::string::npos) {
    finding("the plugin path '" + options.plugin_path + "' has no slash");
  }
  for (std::size_t i = 0; i < options.only.size(); ++i) {
    const conformance::Clause* clause = options.only[i];
    if (clause == nullptr || !clause->plugin) finding("--only holds a clause not for plugins");
    if (std::count(options.only.begin(), options.only.end(), clause) != 1) {
      finding("--only holds " + clause->id + " twice");
    }
  }
  if (options.timeout_s < 1 || options.timeout_s > 86400) {
    finding("--timeout-s " + std::to_string(options.timeout_s) + " was accepted");
  }
}

}  // namespace
}  // namespace emm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> arguments =
      emm::fuzz::arguments_of(emm::fuzz::as_text(data, size));
  emm::conformance::CertifyOptions options;
  try {
    options = emm::conformance::parse_certify_args(arguments);
  } catch (const emm::conformance::UsageError&) {
    return 0;
  }
  emm::fuzz::check_promises(options);
  try {
    emm::conformance::check_report_paths(options.reports, options.plugin_path);
  } catch (const emm::conformance::UsageError&) {
  }
  return 0;
}
