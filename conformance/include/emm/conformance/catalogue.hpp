// emm/conformance/catalogue.hpp — the clause catalogue (spec §4) as data.
//
// conformance/catalogue.tsv is the single source of every clause. The build parses it with
// Catalogue::parse twice: once to generate the clause skeleton (the PluginClause enumeration,
// the typed-test list, the check registry's declarations: plugin_clauses.hpp, written by
// emm_generate_clause_skeleton), and once embedded in the library, parsed on first use of
// catalogue(). Each Clause says what is checked (id, title), how much it matters (level), who
// is checked (target: the host's own suites or any plugin) and, for optional clauses, the
// declared capability whose absence allows not_supported. A second kind of subject shares the
// catalogue: NEP 49 clauses (target "nep49", ids NEP49-<n>) certify NumPy data-memory handlers.
//
//   for (const emm::conformance::Clause& c : emm::conformance::catalogue().clauses())
//     std::cout << c.id << ' ' << to_string(c.level) << '\n';
//   const Clause* life2 = emm::conformance::catalogue().find("LIFE-2");
//
// Thread-safety: catalogue() is built once (thread-safe static) and is immutable afterwards.
// Ownership: the catalogue owns every Clause; a `const Clause*` from it is valid for the
// process's life, so results and reports hold pointers, never copies.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/plugin_declaration.hpp"

namespace emm::conformance {

enum class Level { must, should, info };
// "MUST", "SHOULD", "INFO".
std::string_view to_string(Level level) noexcept;
std::optional<Level> parse_level(std::string_view text) noexcept;

struct Clause {
  std::string id;  // "LIFE-2"
  Level level = Level::must;
  bool host = false;    // checked by the kit's own suites on the reference system
  bool plugin = false;  // certified on any plugin (emm-certify, the typed suites)
  // Certified on a NumPy data-memory handler (NEP 49; emm-certify --nep49): the catalogue's
  // second kind of subject, never a plugin clause.
  bool nep49 = false;
  // The declared capability (kCapabilityFields) whose absence allows not_supported.
  const CapabilityField* optional = nullptr;
  std::optional<Level> declared_level;  // level when `optional` is declared (ALLOC-10: MUST)
  // The traits column: what the runner must know of the clause's check (catalogue.tsv).
  bool runs_threads = false;       // several threads at once (ALLOC-10, LIFE-8)
  bool destroys_contexts = false;  // destroys the process's CUDA contexts (LIFE-8)
  bool imports_elsewhere = false;  // opens IPC handles in another process (IPC-1, IPC-2, DEV-4)
  int devices = 1;                 // devices it needs (DEV-*: 2)
  bool has_property = false;       // checked as a property over generated sequences (spec §8)
  std::string test_name;           // "InitializeIdempotence"
  std::string title;
  std::string source;  // NBEP 7 / Numba EMM docs section

  // "host", "plugin", "host+plugin" or "nep49".
  [[nodiscard]] std::string_view target() const noexcept;
  // "[LIFE-2] text": how every failure, not_supported reason and result message names its
  // clause (the one place the prefix is made).
  [[nodiscard]] std::string tag(std::string_view text) const;
  // "LIFE" for "LIFE-2" (JUnit classname).
  [[nodiscard]] std::string_view group() const noexcept;
  // "LIFE_2": the id as a C++ identifier (the PluginClause enumerator).
  [[nodiscard]] std::string key() const;
  // "LIFE_2_InitializeIdempotence": the test name every flavour uses.
  [[nodiscard]] std::string full_test_name() const;
  // The level this clause has for a plugin with these capabilities.
  [[nodiscard]] Level effective_level(const Capabilities& capabilities) const noexcept;
  // True unless the clause is optional and its capability is declared absent.
  [[nodiscard]] bool applies_to(const Capabilities& capabilities) const noexcept;
};

class Catalogue {
 public:
  // Parses the TSV text; throws emm::Error naming the line for malformed input.
  static Catalogue parse(std::string_view tsv);

  const std::vector<Clause>& clauses() const noexcept { return clauses_; }
  [[nodiscard]] const Clause* find(std::string_view id) const noexcept;
  // The clauses a plugin is certified against, in catalogue order.
  [[nodiscard]] std::vector<const Clause*> plugin_clauses() const;
  // The clauses a NEP 49 handler is certified against, in catalogue order.
  [[nodiscard]] std::vector<const Clause*> nep49_clauses() const;
  // From the "# catalogue_version: X" line.
  const std::string& version() const noexcept { return version_; }

 private:
  std::vector<Clause> clauses_;
  std::string version_;
};

// The catalogue embedded at build time.
[[nodiscard]] const Catalogue& catalogue();
// The embedded TSV text, as committed.
std::string_view catalogue_text() noexcept;

}  // namespace emm::conformance
