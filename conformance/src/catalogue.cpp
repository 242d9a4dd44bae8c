#include "emm/conformance/catalogue.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "emm/errors.hpp"

namespace emm::conformance {
namespace detail {
// Generated at build time from conformance/catalogue.tsv (cmake/embed_catalogue.cmake).
extern const unsigned char kCatalogueTsv[];
}  // namespace detail

namespace {

constexpr std::size_t kColumns = 8;
constexpr std::string_view kHeader =
    "id\tlevel\ttarget\toptional\tdeclared_level\ttest_name\ttitle\tsource";
constexpr std::string_view kVersionTag = "# catalogue_version:";

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\r')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t tab = line.find('\t', start);
    fields.push_back(trim(line.substr(start, tab - start)));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return fields;
}

[[noreturn]] void malformed(std::size_t line_number, const std::string& why) {
  throw Error("conformance catalogue line " + std::to_string(line_number) + ": " + why);
}

bool valid_id(std::string_view id) {
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return false;
  for (std::size_t i = 0; i < dash; ++i) {
    if (id[i] < 'A' || id[i] > 'Z') return false;
  }
  for (std::size_t i = dash + 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return false;
  }
  return true;
}

}  // namespace

std::string_view to_string(Level level) noexcept {
  switch (level) {
    case Level::must:
      return "MUST";
    case Level::should:
      return "SHOULD";
    case Level::info:
      return "INFO";
  }
  return "MUST";
}

std::optional<Level> parse_level(std::string_view text) noexcept {
  if (text == "MUST") return Level::must;
  if (text == "SHOULD") return Level::should;
  if (text == "INFO") return Level::info;
  return std::nullopt;
}

std::string_view to_string(Capability capability) noexcept {
  switch (capability) {
    case Capability::memory_info:
      return "memory_info";
    case Capability::ipc:
      return "ipc";
    case Capability::thread_safe:
      return "thread_safe";
    case Capability::host_only_derived:
      return "host_only_derived";
  }
  return "memory_info";
}

std::optional<Capability> parse_capability(std::string_view text) noexcept {
  for (Capability c : {Capability::memory_info, Capability::ipc, Capability::thread_safe,
                       Capability::host_only_derived}) {
    if (text == to_string(c)) return c;
  }
  return std::nullopt;
}

bool declared(const Capabilities& capabilities, Capability capability) noexcept {
  switch (capability) {
    case Capability::memory_info:
      return capabilities.memory_info;
    case Capability::ipc:
      return capabilities.ipc;
    case Capability::thread_safe:
      return capabilities.thread_safe;
    case Capability::host_only_derived:
      return capabilities.host_only_derived;
  }
  return false;
}

std::string Clause::target() const {
  if (host && plugin) return "host+plugin";
  return host ? "host" : "plugin";
}

std::string Clause::group() const { return id.substr(0, id.find('-')); }

std::string Clause::full_test_name() const {
  std::string name = id;
  std::replace(name.begin(), name.end(), '-', '_');
  return name + "_" + test_name;
}

Level Clause::effective_level(const Capabilities& capabilities) const noexcept {
  if (optional && declared_level && declared(capabilities, *optional)) return *declared_level;
  return level;
}

Catalogue Catalogue::parse(std::string_view tsv) {
  Catalogue catalogue;
  bool header_seen = false;
  std::size_t line_number = 0;
  while (!tsv.empty()) {
    ++line_number;
    const std::size_t end = tsv.find('\n');
    std::string_view line = tsv.substr(0, end);
    tsv.remove_prefix(end == std::string_view::npos ? tsv.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    if (line.front() == '#') {
      if (line.starts_with(kVersionTag)) {
        catalogue.version_ = std::string(trim(line.substr(kVersionTag.size())));
      }
      continue;
    }
    if (!header_seen) {
      if (line != kHeader)
        malformed(line_number, "expected the header row '" + std::string(kHeader) + "'");
      header_seen = true;
      continue;
    }
    const std::vector<std::string_view> f = split_tabs(line);
    if (f.size() != kColumns) {
      malformed(line_number, "expected " + std::to_string(kColumns) +
                                 " tab-separated fields, found " + std::to_string(f.size()));
    }
    Clause clause;
    clause.id = std::string(f[0]);
    if (!valid_id(clause.id)) malformed(line_number, "bad clause id '" + clause.id + "'");
    if (catalogue.find(clause.id) != nullptr)
      malformed(line_number, "duplicate clause id " + clause.id);
    const auto level = parse_level(f[1]);
    if (!level) malformed(line_number, "bad level '" + std::string(f[1]) + "'");
    clause.level = *level;
    if (f[2] == "host") {
      clause.host = true;
    } else if (f[2] == "plugin") {
      clause.plugin = true;
    } else if (f[2] == "host+plugin") {
      clause.host = clause.plugin = true;
    } else {
      malformed(line_number, "bad target '" + std::string(f[2]) + "'");
    }
    if (f[3] != "-") {
      clause.optional = parse_capability(f[3]);
      if (!clause.optional)
        malformed(line_number, "bad optional capability '" + std::string(f[3]) + "'");
    }
    if (f[4] != "-") {
      clause.declared_level = parse_level(f[4]);
      if (!clause.declared_level || !clause.optional) {
        malformed(line_number, "declared_level needs a level and an optional capability");
      }
    }
    clause.test_name = std::string(f[5]);
    clause.title = std::string(f[6]);
    clause.source = std::string(f[7]);
    if (clause.test_name.empty() || clause.title.empty() || clause.source.empty()) {
      malformed(line_number, "empty test_name, title or source for " + clause.id);
    }
    catalogue.clauses_.push_back(std::move(clause));
  }
  if (!header_seen) throw Error("conformance catalogue: no header row");
  if (catalogue.version_.empty())
    throw Error("conformance catalogue: no '# catalogue_version:' line");
  return catalogue;
}

const Clause* Catalogue::find(std::string_view id) const noexcept {
  for (const Clause& clause : clauses_) {
    if (clause.id == id) return &clause;
  }
  return nullptr;
}

std::vector<const Clause*> Catalogue::plugin_clauses() const {
  std::vector<const Clause*> result;
  for (const Clause& clause : clauses_) {
    if (clause.plugin) result.push_back(&clause);
  }
  return result;
}

std::string_view catalogue_text() noexcept {
  return reinterpret_cast<const char*>(detail::kCatalogueTsv);
}

const Catalogue& catalogue() {
  static const Catalogue instance = Catalogue::parse(catalogue_text());
  return instance;
}

}  // namespace emm::conformance
