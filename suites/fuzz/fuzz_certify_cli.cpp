// fuzz_certify_cli — emm-certify's command line (certify_cli.hpp) on arbitrary arguments: the
// input is split at newlines into arguments for parse_certify_args(); a command line it accepts
// then goes to check_report_paths(), which only examines the file system (stat, access,
// realpath) and writes nothing, so fuzzing it cannot touch a file. Relative paths are relative
// to the working directory (scripts/fuzz.sh runs each target in its own scratch folder).
//
// Findings (abort): any exception but UsageError; an accepted command line that breaks what the
// parser promises: no subject (--plugin, --python or --nep49/--nep49-library) without --help
// or --list, two subjects, a plugin path without a slash, a --python or --nep49 target that is
// not dotted Python names, --only naming a clause twice or a clause of the other kind of subject
// (plugin clauses for plugins, NEP49-* for handlers), a timeout outside 1..86400 s.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/nep49_subject.hpp"
#include "emm/conformance/report_paths.hpp"
#include "emm/python/dotted_name.hpp"
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

bool is_target(std::string_view text, bool attribute_required) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return !attribute_required && python::is_dotted_name(text);
  return python::is_dotted_name(text.substr(0, colon)) &&
         python::is_dotted_name(text.substr(colon + 1));
}

void check_promises(const CertifyOptions& options) {
  const bool plugin = !options.plugin_path.empty() && options.python_target.empty();
  const bool python = !options.python_target.empty();
  const bool nep49 = options.nep49.has_value();
  const int subjects = int{plugin} + int{python} + int{nep49};
  if (subjects == 0 && !options.help && !options.list) {
    finding(
        "a command line without a subject (--plugin, --python, --nep49), --help or --list "
        "was accepted");
  }
  if (subjects > 1) finding("a command line naming two subjects was accepted");
  if (plugin && options.plugin_path.find('/') == std::string::npos) {
    finding("the plugin path '" + options.plugin_path + "' has no slash");
  }
  if (python && !is_target(options.python_target, false)) {
    finding("the --python target '" + options.python_target + "' was accepted");
  }
  if (nep49 && options.nep49->kind == conformance::Nep49SubjectSpec::Kind::module &&
      !is_target(options.nep49->text(), true)) {
    finding("the --nep49 target '" + options.nep49->text() + "' was accepted");
  }
  if (nep49 && options.nep49->kind == conformance::Nep49SubjectSpec::Kind::library &&
      (options.nep49->location.find('/') == std::string::npos || options.nep49->symbol.empty())) {
    finding("the --nep49-library subject '" + options.nep49->text() + "' was accepted");
  }
  for (std::size_t i = 0; i < options.only.size(); ++i) {
    const conformance::Clause* clause = options.only[i];
    if (clause == nullptr) finding("--only holds no clause");
    if (nep49 ? !clause->nep49 : !clause->plugin) {
      finding("--only holds " + clause->id + ", not a clause for this subject");
    }
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
