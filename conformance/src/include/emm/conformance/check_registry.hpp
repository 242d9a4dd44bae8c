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
// Whether the clause's body destroys the process's CUDA contexts (LIFE-8 releases pointers
// after the context is gone: Backend::destroy_released_contexts()), so that on the gpu its
// process cannot run another clause. The scheduler runs such clauses last on their backend,
// so that one worker serves all the others.
bool destroys_contexts(const Clause& clause) noexcept;
// Whether the clause's body imports IPC handles in another process (Backend::import_elsewhere:
// IPC-1, IPC-2, DEV-4), so that a worker about to run it starts that process ahead of time.
// Only a matter of time: a clause missing here starts the process when it first imports.
bool imports_in_another_process(const Clause& clause) noexcept;
// Whether the clause runs several threads in the plugin at once (ALLOC-10: its fixed scenario
// and the engine's threads command; LIFE-8 and ALLOC-10: reset() while other threads release),
// so that evaluate() makes them interleave inside it (Backend::interleave_threads). They are
// the clauses a ThreadSanitizer build of a plugin is certified on (emm_add_certification_test).
bool runs_threads(const Clause& clause) noexcept;

}  // namespace emm::conformance
