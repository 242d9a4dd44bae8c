// emm/conformance/report_index.hpp — many certificates on one page: the index a CI dashboard
// shows for a set of plugins (`emm-certify report *.json --html index.html`).
//
//   std::vector<IndexEntry> entries = {read_index_entry("pool.json"), ...};
//   std::string page = index_html(entries);
//
// One row per (plugin, backend) and one column per clause, in colour, with each report's
// verdict; a report that cannot be read is a row saying why. Self-contained HTML, like
// to_html(). Reads emm-certify's JSON reports (docs/report.schema.json).
#pragma once

#include <string>
#include <vector>

#include "emm/conformance/json_reader.hpp"

namespace emm::conformance {

struct IndexEntry {
  std::string path;
  std::string problem;  // why the report could not be read; empty when it was
  JsonValue report;
};

// Reads and parses `path`; a file that cannot be read or parsed gives an entry with `problem`.
IndexEntry read_index_entry(const std::string& path);

std::string index_html(const std::vector<IndexEntry>& entries);

}  // namespace emm::conformance
