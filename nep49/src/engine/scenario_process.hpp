// nep49/engine/scenario_process.hpp — a behavioural clause's fixed scenario run in a process of
// its own.
//
// A handler keeps its state in its process: a scenario that fills a cache, or a defect that
// corrupts it, would change what the clauses after it see, so that a clause certified alone
// (`--only`, a replayed reproducer) and the same clause in a whole certification would explore
// different handlers. Every behavioural clause (the ones with a property) therefore runs both its
// sequences (sequence_process.hpp) and its fixed scenario in children forked from the clause's
// process, which the handler's calls never touch.
//
//   run_scenario(run, body);   // throws what the body threw, in the parent
//
// Not thread-safe; call from a single-threaded process (fork()).
#pragma once

#include "emm/conformance/nep49_run.hpp"

namespace emm::conformance::nep49_engine {

using ScenarioBody = void (*)(Nep49Run& run);

// Runs `body` in a child (on the gpu backend in this process: runs_in_children()); the notes and
// properties it recorded join `run`'s; its verdict is thrown here: ClauseFailure,
// ClauseNotSupported, or SequenceEnded when the handler crashed the child. A hang is left to the
// clause's own timeout.
void run_scenario(Nep49Run& run, ScenarioBody body);

}  // namespace emm::conformance::nep49_engine
