// emm/conformance/certify_cli.hpp — emm-certify's command line (spec §5).
//
//   emm-certify --plugin PATH.so [--backend fake|gpu|all] [--only ID[,ID...]]
//               [--json FILE] [--junit FILE] [--markdown FILE] [--list] [--timeout-s N]
//
// Exit codes: 0 certified, 1 not certified (also when no backend could run, e.g.
// `--backend gpu` on a machine without a GPU), 2 usage error or plugin could not be loaded.
// `--list` needs no plugin. `--only` takes plugin clause ids from the catalogue.
//
//   CertifyOptions options = parse_certify_args(arguments);   // throws UsageError
//
// Pure functions (unit-tested); certify.hpp runs the certification the options describe.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/catalogue.hpp"

namespace emm::conformance {

// A bad command line; what() says what is wrong (the usage text is printed after it).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CertifyOptions {
  std::string plugin_path;
  std::vector<BackendKind> backends{kBackendKinds.begin(), kBackendKinds.end()};  // all
  std::vector<const Clause*> only;  // empty: every plugin clause
  std::string json_path;
  std::string junit_path;
  std::string markdown_path;
  bool list = false;
  bool help = false;
  int timeout_s = 60;
};

// Parses the arguments after the program name. Throws UsageError.
CertifyOptions parse_certify_args(std::span<const std::string_view> args);
std::string certify_usage();

}  // namespace emm::conformance
