// emm_generate_clause_skeleton — turns conformance/catalogue.tsv into the code every flavour is
// built from, so that the catalogue is the only hand-kept list of clauses (the build runs it;
// see conformance/CMakeLists.txt):
//
//   emm_generate_clause_skeleton CATALOGUE.tsv OUTPUT_DIR
//
// writes, each only when its content changed (so an unchanged catalogue rebuilds nothing):
//   OUTPUT_DIR/include/emm/conformance/plugin_clauses.hpp  PluginClause (one enumerator per
//       plugin clause), EMM_PLUGIN_CLAUSES(X) and EMM_PLUGIN_CLAUSE_TEST_NAMES;
//   OUTPUT_DIR/include/emm/conformance/nep49_clauses.hpp   the same for the NEP 49 handler
//       clauses: Nep49Clause and EMM_NEP49_CLAUSES(X);
//   OUTPUT_DIR/catalogue_data.cpp   the TSV's bytes, which catalogue() parses at run time;
//   OUTPUT_DIR/clause_ids.cmake     EMM_HOST_CLAUSE_IDS, EMM_PLUGIN_CLAUSE_IDS,
//       EMM_NEP49_CLAUSE_IDS and EMM_THREAD_CLAUSE_IDS (plugin clauses with the trait `threads`)
//       for CMake tests.
// The TSV is parsed with the library's own Catalogue::parse, so a malformed catalogue fails the
// build with the parser's message.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/catalogue.hpp"

namespace {

namespace fs = std::filesystem;
using emm::conformance::Catalogue;
using emm::conformance::Clause;

constexpr std::string_view kBanner =
    "Generated from conformance/catalogue.tsv by emm_generate_clause_skeleton; do not edit: "
    "edit the catalogue.";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_if_changed(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  if (fs::exists(path) && read_file(path) == text) return;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// EMM_<KIND>_PROPERTIES(X): X(Key, function) once per clause of `clauses` with the catalogue's
// trait `property`, where function is the key in lower case: the engine's registry declares
// `const Property& function();` (defined in the family's file) and property_for() switches on it.
std::string properties_macro(std::string_view kind, const std::vector<const Clause*>& clauses) {
  std::string text = "\n\n#define EMM_" + std::string(kind) + "_PROPERTIES(X)";
  for (const Clause* clause : clauses) {
    if (!clause->has_property) continue;
    std::string function = clause->key();
    for (char& c : function) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    text += " \\\n  X(" + clause->key() + ", " + function + ")";
  }
  return text;
}

std::string plugin_clauses_header(const Catalogue& catalogue) {
  std::ostringstream h;
  h << "// emm/conformance/plugin_clauses.hpp — the plugin clauses of the catalogue as code.\n"
    << "// " << kBanner << "\n"
    << "//\n"
    << "// EMM_PLUGIN_CLAUSES(X) calls X(Key, \"ID\", TestName) once per plugin clause, in\n"
    << "// catalogue order; the GoogleTest suite (gtest.hpp) and the check registry expand it.\n"
    << "// EMM_PLUGIN_PROPERTIES(X) calls X(Key, function) once per clause checked as a property\n"
    << "// (the catalogue's trait `property`); the sequence engine's registry expands it.\n"
    << "#pragma once\n\n#include <cstddef>\n\nnamespace emm::conformance {\n\n"
    << "// One enumerator per plugin clause (catalogue version " << catalogue.version()
    << ").\nenum class PluginClause : unsigned {\n";
  std::size_t count = 0;
  for (const Clause* clause : catalogue.plugin_clauses()) {
    h << "  " << clause->key() << ",\n";
    ++count;
  }
  h << "};\n\ninline constexpr std::size_t kPluginClauseCount = " << count << ";\n\n"
    << "}  // namespace emm::conformance\n\n#define EMM_PLUGIN_CLAUSES(X)";
  for (const Clause* clause : catalogue.plugin_clauses()) {
    h << " \\\n  X(" << clause->key() << ", \"" << clause->id << "\", " << clause->full_test_name()
      << ")";
  }
  h << "\n\n#define EMM_PLUGIN_CLAUSE_TEST_NAMES";
  const char* separator = " ";
  for (const Clause* clause : catalogue.plugin_clauses()) {
    h << separator << "\\\n  " << clause->full_test_name();
    separator = ", ";
  }
  h << properties_macro("PLUGIN", catalogue.plugin_clauses()) << "\n";
  return h.str();
}

std::string nep49_clauses_header(const Catalogue& catalogue) {
  std::ostringstream h;
  h << "// emm/conformance/nep49_clauses.hpp — the NEP 49 handler clauses of the catalogue as "
       "code.\n"
    << "// " << kBanner << "\n"
    << "//\n"
    << "// EMM_NEP49_CLAUSES(X) calls X(Key, \"ID\", TestName) once per nep49 clause, in "
       "catalogue\n"
    << "// order; the NEP 49 check registry (nep49_registry.hpp) expands it.\n"
    << "// EMM_NEP49_PROPERTIES(X) calls X(Key, function) once per clause checked as a property.\n"
    << "#pragma once\n\n#include <cstddef>\n\nnamespace emm::conformance {\n\n"
    << "// One enumerator per NEP 49 handler clause (catalogue version " << catalogue.version()
    << ").\nenum class Nep49Clause : unsigned {\n";
  const std::vector<const Clause*> clauses = catalogue.nep49_clauses();
  for (const Clause* clause : clauses) h << "  " << clause->key() << ",\n";
  h << "};\n\ninline constexpr std::size_t kNep49ClauseCount = " << clauses.size() << ";\n\n"
    << "}  // namespace emm::conformance\n\n#define EMM_NEP49_CLAUSES(X)";
  for (const Clause* clause : clauses) {
    h << " \\\n  X(" << clause->key() << ", \"" << clause->id << "\", " << clause->full_test_name()
      << ")";
  }
  h << properties_macro("NEP49", clauses) << "\n";
  return h.str();
}

// A byte array rather than a string literal: the catalogue is longer than the 4095 characters
// -Wpedantic allows a literal.
std::string catalogue_source(const std::string& tsv) {
  std::ostringstream c;
  c << "// " << kBanner << "\n"
    << "namespace emm::conformance::detail {\n"
    << "extern const unsigned char kCatalogueTsv[];\n"
    << "const unsigned char kCatalogueTsv[] = {\n ";
  for (const unsigned char byte : tsv) {
    c << ' ' << static_cast<unsigned>(byte) << ',';
    if (byte == '\n') c << "\n ";
  }
  c << " 0};\n}  // namespace emm::conformance::detail\n";
  return c.str();
}

std::string clause_ids_cmake(const Catalogue& catalogue) {
  std::ostringstream m;
  m << "# " << kBanner << "\n";
  for (const bool host : {true, false}) {
    m << (host ? "set(EMM_HOST_CLAUSE_IDS" : "set(EMM_PLUGIN_CLAUSE_IDS");
    for (const Clause& clause : catalogue.clauses()) {
      if (host ? clause.host : clause.plugin) m << ' ' << clause.id;
    }
    m << ")\n";
  }
  m << "set(EMM_NEP49_CLAUSE_IDS";
  for (const Clause* clause : catalogue.nep49_clauses()) m << ' ' << clause->id;
  m << ")\n";
  m << "set(EMM_THREAD_CLAUSE_IDS";
  for (const Clause* clause : catalogue.plugin_clauses()) {
    if (clause->runs_threads) m << ' ' << clause->id;
  }
  m << ")\n";
  return m.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: emm_generate_clause_skeleton CATALOGUE.tsv OUTPUT_DIR\n";
    return 2;
  }
  try {
    const fs::path output(argv[2]);
    const std::string tsv = read_file(argv[1]);
    const Catalogue catalogue = Catalogue::parse(tsv);
    write_if_changed(output / "include/emm/conformance/plugin_clauses.hpp",
                     plugin_clauses_header(catalogue));
    write_if_changed(output / "include/emm/conformance/nep49_clauses.hpp",
                     nep49_clauses_header(catalogue));
    write_if_changed(output / "catalogue_data.cpp", catalogue_source(tsv));
    write_if_changed(output / "clause_ids.cmake", clause_ids_cmake(catalogue));
  } catch (const std::exception& error) {
    std::cerr << argv[1] << ": " << error.what() << "\n";
    return 1;
  }
  return 0;
}
