// emm_render_clauses — writes docs/clauses.md from the embedded catalogue (the
// emm_clauses_doc target runs it; suites/conformance checks the committed file is current).
#include <fstream>
#include <iostream>
#include <sstream>

#include "emm/conformance/catalogue.hpp"

namespace {

std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string render() {
  using namespace emm::conformance;
  const Catalogue& c = catalogue();
  std::ostringstream md;
  md << "# Clause catalogue\n\n"
     << "<!-- Generated from conformance/catalogue.tsv by the emm_clauses_doc target; do not "
        "edit. -->\n\n"
     << "Catalogue version " << c.version() << ", " << c.clauses().size() << " clauses ("
     << c.plugin_clauses().size() << " certified on plugins, " << c.nep49_clauses().size()
     << " on NumPy data-memory handlers). Each rule is stated in full, with "
     << "how it is checked, in the emmkit specification (EMM-SPEC.md) §4; the outcomes and the "
     << "verdict are in §3.\n\n"
     << "- **Level**: MUST clauses decide the verdict, SHOULD clauses warn, INFO clauses "
        "measure.\n"
     << "- **Target**: *plugin* clauses are certified on any plugin by the typed suites and "
        "`emm-certify`; *host* clauses are checked by the kit's own suites on the reference "
        "system and describe what plugins can rely on; *nep49* clauses are certified on a NumPy "
        "data-memory handler (NEP 49) by `emm-certify --nep49` or `--nep49-library` "
        "(docs/nep49-handlers.md).\n"
     << "- **Optional**: when the plugin declares this capability absent, the clause reports "
        "`not_supported` (allowed); an undeclared `NotImplementedError` is a failure.";
  for (const emm::CapabilityField& field : emm::kCapabilityFields) {
    std::string ids;
    for (const Clause& clause : c.clauses()) {
      if (clause.optional != &field) continue;
      ids += (ids.empty() ? "" : ", ") + clause.id;
    }
    if (!ids.empty()) md << " `" << field.name << "` (" << field.meaning << "): " << ids << ".";
  }
  for (const Clause& clause : c.clauses()) {
    if (!clause.declared_level) continue;
    md << " " << clause.id << " is " << to_string(clause.level) << ", and "
       << to_string(*clause.declared_level) << " for plugins declaring `" << clause.optional->name
       << "`.";
  }
  md << "\n"
     << "- **Test name**: the GoogleTest/Boost.Test name of the clause's test.\n\n"
     << "| Id | Level | Target | Optional | Test name | Rule | Source |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const Clause& clause : c.clauses()) {
    std::string level(to_string(clause.level));
    if (clause.declared_level) {
      level += " (" + std::string(to_string(*clause.declared_level)) + " when declared)";
    }
    md << "| " << clause.id << " | " << level << " | " << clause.target() << " | ";
    if (clause.optional != nullptr) md << clause.optional->name;
    md << " | ";
    // Streamed piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "`" + std::string.
    if (clause.plugin) md << '`' << clause.full_test_name() << '`';
    md << " | " << cell(clause.title) << " | " << cell(clause.source) << " |\n";
  }
  return md.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string text = render();
  if (argc < 2) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) {
    std::cerr << "emm_render_clauses: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
