// emm/conformance/check_registry.hpp — plugin clause -> the one check body that certifies it.
//
// The table is built from EMM_PLUGIN_CLAUSES (plugin_clauses.hpp, generated from
// conformance/catalogue.tsv): every plugin clause has an entry, and its body is the explicit
// specialisation checks::check<PluginClause::KEY>, defined once with EMM_CHECK(KEY) in
// conformance/src/checks/. A clause without a body fails to link; a body for a clause that is
// not in the catalogue fails to compile.
//
//   CheckFunction body = check_for(*catalogue().find("LIFE-2"));
//
// Thread-safety: immutable data.
#pragma once

#include <optional>
#include <string_view>

#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/plugin_clauses.hpp"

namespace emm::conformance {

using CheckFunction = void (*)(ClauseRun& run);

// The body of a plugin clause; null for a host clause (checked by the kit's own suites).
CheckFunction check_for(const Clause& clause) noexcept;
// The enumerator of a plugin clause; nullopt for a host clause.
std::optional<PluginClause> plugin_clause(std::string_view id) noexcept;
// What the runner must know of a clause's check (whether it runs threads, destroys the
// process's contexts, imports in another process, how many devices it needs) is the
// catalogue's traits column: Clause::runs_threads, destroys_contexts, imports_elsewhere and
// devices (catalogue.hpp), tested against what the bodies do in suites/conformance.

}  // namespace emm::conformance
