// fuzz_catalogue — Catalogue::parse (catalogue.hpp) on arbitrary text. The build parses the
// committed catalogue.tsv with it (to generate the clause skeleton and the embedded catalogue),
// so a malformed edit must be refused with an emm::Error naming its line, never misread.
//
// Findings (abort): any exception but emm::Error; an accepted catalogue whose clauses are not
// what parse() promises (find() does not return a clause by its id, a clause for neither the
// host, nor plugins, nor NEP 49 handlers; a device count from its traits outside 1..8;
// plugin_clauses() listing a clause that is not for plugins).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "emm/conformance/catalogue.hpp"
#include "emm/errors.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using emm::conformance::Catalogue;
  using emm::conformance::Clause;
  std::optional<Catalogue> parsed;
  try {
    parsed.emplace(Catalogue::parse(emm::fuzz::as_text(data, size)));
  } catch (const emm::Error&) {
    return 0;
  }
  for (const Clause& clause : parsed->clauses()) {
    const Clause* found = parsed->find(clause.id);
    if (found == nullptr || found->id != clause.id) {
      emm::fuzz::finding("find(\"" + clause.id + "\") does not return that clause");
    }
    if (!clause.host && !clause.plugin && !clause.nep49) {
      emm::fuzz::finding(clause.id +
                         " is checked neither on the host, nor on plugins, nor on "
                         "NEP 49 handlers");
    }
    if (clause.devices < 1 || clause.devices > 8) {
      emm::fuzz::finding(clause.id + " needs " + std::to_string(clause.devices) + " devices");
    }
    // What the writers and the generator derive from a clause must not fail either.
    (void)clause.full_test_name();
    (void)clause.key();
    (void)clause.group();
    (void)clause.target();
  }
  for (const Clause* clause : parsed->plugin_clauses()) {
    if (!clause->plugin) emm::fuzz::finding(clause->id + " listed among the plugin clauses");
  }
  return 0;
}
