// emm/conformance/catalogue.hpp — the clause catalogue (spec §4) as data.
//
// conformance/catalogue.tsv is the single source: it is embedded into the library at build time
// and parsed once. Each Clause says what is checked (id, title), how much it matters (level),
// who is checked (target: the host's own suites or any plugin) and, for optional clauses, the
// declared capability whose absence allows not_supported.
//
//   for (const emm::conformance::Clause& c : emm::conformance::catalogue().clauses())
//     std::cout << c.id << ' ' << to_string(c.level) << '\n';
//   const Clause* life2 = emm::conformance::catalogue().find("LIFE-2");
//
// Thread-safety: catalogue() is built once (thread-safe static) and is immutable afterwards.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/plugin_abi.hpp"

namespace emm::conformance {

enum class Level { must, should, info };
// "MUST", "SHOULD", "INFO".
std::string_view to_string(Level level) noexcept;
std::optional<Level> parse_level(std::string_view text) noexcept;

// A declared capability (plugin_abi.hpp) that makes a clause optional.
enum class Capability { memory_info, ipc, thread_safe, host_only_derived };
// "memory_info", "ipc", "thread_safe", "host_only_derived".
std::string_view to_string(Capability capability) noexcept;
std::optional<Capability> parse_capability(std::string_view text) noexcept;
bool declared(const Capabilities& capabilities, Capability capability) noexcept;

struct Clause {
  std::string id;  // "LIFE-2"
  Level level = Level::must;
  bool host = false;                    // checked by the kit's own suites on the reference system
  bool plugin = false;                  // certified on any plugin (emm-certify, the typed suite)
  std::optional<Capability> optional;   // declared absence allows not_supported
  std::optional<Level> declared_level;  // level when `optional` is declared (ALLOC-10: MUST)
  std::string test_name;                // "InitializeIdempotence"
  std::string title;
  std::string source;  // NBEP 7 / Numba EMM docs section

  // "host", "plugin" or "host+plugin".
  std::string target() const;
  // "LIFE" for "LIFE-2" (JUnit classname).
  std::string group() const;
  // "LIFE_2_InitializeIdempotence": the test name every flavour uses.
  std::string full_test_name() const;
  // The level this clause has for a plugin with these capabilities.
  Level effective_level(const Capabilities& capabilities) const noexcept;
};

class Catalogue {
 public:
  // Parses the TSV text; throws emm::Error naming the line for malformed input.
  static Catalogue parse(std::string_view tsv);

  const std::vector<Clause>& clauses() const noexcept { return clauses_; }
  const Clause* find(std::string_view id) const noexcept;
  // The clauses a plugin is certified against, in catalogue order.
  std::vector<const Clause*> plugin_clauses() const;
  // From the "# catalogue_version: X" line.
  const std::string& version() const noexcept { return version_; }

 private:
  std::vector<Clause> clauses_;
  std::string version_;
};

// The embedded catalogue.
const Catalogue& catalogue();
// The embedded TSV text, as committed.
std::string_view catalogue_text() noexcept;

}  // namespace emm::conformance
