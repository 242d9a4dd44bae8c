// engine/explore.hpp — runs a clause's property over generated sequences (spec §8).
//
// explore() builds the plan (capabilities, backend, devices), the initial model and the command
// mix of the clause's property, and asks RapidCheck for run.options().exploration.budget
// sequences from the clause's seed (the run's seed mixed with the clause id, so clauses explore
// independently and `--only` replays the same sequences). Each sequence runs in a fresh Session
// and ends with a teardown (guards released, references dropped, flush point, reset()) whose
// hooks are the properties' last postconditions. A failing sequence is shrunk (RapidCheck drops
// commands and shrinks their arguments while the failure persists; bounded in runs and time),
// and the clause fails with the shortest one's message; the run keeps its Reproducer.
//
//   if (const Property* property = property_for(key)) explore(run, *property);
//
// Not thread-safe: RapidCheck's generation context is per thread, and the run is one clause's.
#pragma once

#include <cstdint>
#include <string_view>

#include "emm/conformance/clause_run.hpp"
#include "engine/property.hpp"

namespace emm::conformance::engine {

// Throws ClauseFailure (with run.reproducer() set) when a sequence fails; records the number of
// sequences and the seed on the run when none does.
void explore(ClauseRun& run, const Property& property);

// The seed clause `id` explores with for a run seed of `seed`.
std::uint64_t clause_seed(std::uint64_t seed, std::string_view id) noexcept;

}  // namespace emm::conformance::engine
