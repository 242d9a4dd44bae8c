// nep49/engine/explore.hpp — runs a NEP 49 clause's property over generated sequences (spec §8).
//
// explore() builds the plan (which of the handler's functions are set, whether it is a Python
// module) and the command mix of the clause's property, and asks RapidCheck for the property's
// share of run.exploration().budget sequences (the backend's default_budget() when 0) from the
// clause's seed (engine::clause_seed: the run's seed mixed with the clause id, so clauses explore
// independently and `--only` replays the same sequences). Each sequence runs in a fresh Session
// and ends by freeing what it holds. A failing sequence is shrunk (bounded in runs and time) and
// the clause fails with the shortest one's message; the run keeps its Reproducer: the numbered
// calls, a GoogleTest body over the handler struct, and a Python snippet (ctypes over the
// capsule, what a module's author runs), with for_python set for a module.
//
//   if (const Property* property = property_for(key)) explore(run, *property);
//
// Records on the run: "sequences" and "sequence_seed"; for contention, "contention_rounds" (the
// contention commands run) and "contention_calls" (the handler calls they made).
//
// Not thread-safe: RapidCheck's generation context is per thread, and the run is one clause's.
#pragma once

#include "emm/conformance/nep49_run.hpp"
#include "emm/conformance/outcome.hpp"
#include "nep49/src/engine/property.hpp"

namespace emm::conformance::nep49_engine {

// The shortest failing sequence crashed (Outcome::crash) or hung (Outcome::timeout) the process
// it ran in; what() says where.
class SequenceEnded : public ClauseFailure {
 public:
  SequenceEnded(const std::string& what, Outcome outcome)
      : ClauseFailure(what), outcome_(outcome) {}
  Outcome outcome() const noexcept { return outcome_; }

 private:
  Outcome outcome_;
};

// Throws ClauseFailure (SequenceEnded for a crash or a hang), with run.reproducer() set, when a
// sequence fails.
void explore(Nep49Run& run, const Property& property);

}  // namespace emm::conformance::nep49_engine
