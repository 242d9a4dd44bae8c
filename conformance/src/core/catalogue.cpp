#include "emm/conformance/catalogue.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

constexpr std::size_t kColumns = 9;
constexpr std::string_view kHeader =
    "id\tlevel\ttarget\toptional\tdeclared_level\ttraits\ttest_name\ttitle\tsource";
constexpr std::string_view kVersionTag = "# catalogue_version:";

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\r')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// The traits column: "-" or comma-separated names (catalogue.tsv's header says which); "" when
// they are all known and set on `clause`, else what is wrong.
std::string parse_traits(std::string_view text, Clause& clause) {
  if (text == "-") return "";
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view trait = text.substr(0, comma);
    if (trait == "threads") {
      clause.runs_threads = true;
    } else if (trait == "destroys_contexts") {
      clause.destroys_contexts = true;
    } else if (trait == "imports") {
      clause.imports_elsewhere = true;
    } else if (trait == "property") {
      clause.has_property = true;
    } else if (trait.starts_with("devices=") && trait.size() == 9 && trait[8] >= '2' &&
               trait[8] <= '8') {
      clause.devices = trait[8] - '0';
    } else {
      return "bad trait '" + std::string(trait) +
             "' (threads, destroys_contexts, imports, property or devices=N with N from 2 to 8)";
    }
    if (comma == std::string_view::npos) return "";
    text.remove_prefix(comma + 1);
  }
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

bool valid_test_name(std::string_view name) {
  if (name.empty() || name.front() < 'A' || name.front() > 'Z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

// "LIFE-2", "NEP49-3": a group of capitals (digits after the first letter) and a number.
bool valid_id(std::string_view id) {
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return false;
  if (id[0] < 'A' || id[0] > 'Z') return false;
  for (std::size_t i = 1; i < dash; ++i) {
    if ((id[i] < 'A' || id[i] > 'Z') && (id[i] < '0' || id[i] > '9')) return false;
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

std::string_view Clause::target() const noexcept {
  if (nep49) return "nep49";
  if (host && plugin) return "host+plugin";
  return host ? "host" : "plugin";
}

std::string Clause::tag(std::string_view text) const {
  std::string tagged;
  tagged.reserve(id.size() + 3 + text.size());
  tagged.append("[").append(id).append("] ").append(text);
  return tagged;
}

std::string_view Clause::group() const noexcept {
  return std::string_view(id).substr(0, id.find('-'));
}

std::string Clause::key() const {
  std::string name = id;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string Clause::full_test_name() const { return key() + "_" + test_name; }

Level Clause::effective_level(const Capabilities& capabilities) const noexcept {
  if (optional != nullptr && declared_level && declared(capabilities, *optional)) {
    return *declared_level;
  }
  return level;
}

bool Clause::applies_to(const Capabilities& capabilities) const noexcept {
  return optional == nullptr || declared(capabilities, *optional);
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
    } else if (f[2] == "nep49") {
      clause.nep49 = true;
    } else {
      malformed(line_number, "bad target '" + std::string(f[2]) + "'");
    }
    if (f[3] != "-") {
      clause.optional = find_capability(f[3]);
      if (clause.optional == nullptr) {
        malformed(line_number, "bad optional capability '" + std::string(f[3]) +
                                   "' (not in emm::kCapabilityFields)");
      }
    }
    if (f[4] != "-") {
      clause.declared_level = parse_level(f[4]);
      if (!clause.declared_level || clause.optional == nullptr) {
        malformed(line_number, "declared_level needs a level and an optional capability");
      }
    }
    if (const std::string wrong = parse_traits(f[5], clause); !wrong.empty()) {
      malformed(line_number, wrong + " for " + clause.id);
    }
    clause.test_name = std::string(f[6]);
    clause.title = std::string(f[7]);
    clause.source = std::string(f[8]);
    if (clause.nep49 && (clause.group() != "NEP49" || clause.optional != nullptr)) {
      malformed(line_number, "a nep49 clause has an id NEP49-<n> and no optional capability (" +
                                 clause.id + ")");
    }
    if (clause.test_name.empty() || clause.title.empty() || clause.source.empty()) {
      malformed(line_number, "empty test_name, title or source for " + clause.id);
    }
    // The test name becomes part of C++ identifiers (the typed tests, the check registry).
    if (!valid_test_name(clause.test_name)) {
      malformed(line_number, "test_name '" + clause.test_name + "' of " + clause.id +
                                 " is not CamelCase letters and digits");
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

std::vector<const Clause*> Catalogue::nep49_clauses() const {
  std::vector<const Clause*> result;
  for (const Clause& clause : clauses_) {
    if (clause.nep49) result.push_back(&clause);
  }
  return result;
}

}  // namespace emm::conformance
