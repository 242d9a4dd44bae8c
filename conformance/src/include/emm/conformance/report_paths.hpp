// emm/conformance/report_paths.hpp — the report paths, checked against the file system before
// any clause runs (a certification must not run for minutes and then fail to write).
//
//   check_report_paths(options.reports, options.plugin_path);   // throws UsageError
//
// Each given path must be writable: its directory exists and accepts a new file, or the file
// exists and is a writable regular file. It must not be the plugin library (same file, however
// spelled) nor another report's file. The error names the flag, the path and the OS reason
// ("--json /nope/r.json: the directory /nope does not exist (No such file or directory)").
#pragma once

#include <string>

#include "emm/conformance/certify_cli.hpp"

namespace emm::conformance {

void check_report_paths(const ReportPaths& reports, const std::string& plugin_path);

}  // namespace emm::conformance
