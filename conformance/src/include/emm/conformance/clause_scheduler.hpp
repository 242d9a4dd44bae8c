// emm/conformance/clause_scheduler.hpp — runs a certification's (clause, backend) jobs so that
// no plugin can take emm-certify down, fool it or hang it.
//
//   std::vector<ClauseResult> results = run_clause_jobs(jobs, settings, print_progress);
//
// Isolation (certify_cli.hpp):
//   backend     worker processes load the plugin and run a backend's clauses one after another,
//               in a fixed order (a crash is reproducible): the order given, except that a
//               clause which destroys the process's CUDA contexts (LIFE-8: the catalogue's
//               trait destroys_contexts) runs last. One worker on a GPU; on the fake two side by
//               side, the clauses that run threads in one and the rest in the other (fixed, and
//               published in the order). After a crash, a timeout or an answer it cannot trust a
//               worker is killed and a new one takes its remaining clauses, so a crash costs
//               only the clause that crashed;
//   clause      one process per (clause, backend); fake clauses two at a time;
//   in_process  the clauses run in this process (gdb, sanitizers): nothing is protected.
// emm-certify decides which clause and backend a child runs and sends it a fresh random nonce;
// it accepts exactly one well-formed answer carrying that nonce, that clause and that backend,
// on the result channel (child_process.hpp: a fixed high descriptor the child verifies before
// writing). Anything else — no answer, garbage, an answer for another clause, a second answer,
// an exit of any status, a signal — is a crash-class result saying what was seen. A child that
// cannot load the plugin says so in an answer carrying the nonce (result_codec.hpp: a load
// failure is a crash-class result with the cause), never through its exit status, which the
// plugin's own exit() could fake. A job ends when its child answers or is reaped, or its
// deadline passes (the whole process group is then killed, and every stray descendant with it:
// call become_child_subreaper() first).
//
// Each result carries what the clause printed (ClauseResult::output).
//
// Threat model: robust against broken plugins, not a sandbox against malicious native code
// (docs/ci-guide.md, "What emm-certify protects against").
//
// Call from a single-threaded process that has not initialised CUDA (children are forked).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

struct ClauseJob {
  const Clause* clause = nullptr;
  BackendKind backend = BackendKind::fake;
  Level level = Level::must;  // the clause's level for this plugin
};

// Evaluates one clause on one backend, in the child that loaded the subject, with a backend
// made from the run's settings; sets `reusable` to false when the backend's device cannot be
// used by this process any more (the clause then fails for it and the worker is replaced).
using ClauseEvaluator =
    std::function<ClauseResult(const Clause&, BackendKind, const BackendSettings&, bool& reusable)>;

// A subject as a child loaded it: its evaluator, or (evaluate empty) why it could not be loaded.
struct LoadedSubject {
  ClauseEvaluator evaluate;
  std::string failure;
};

struct SchedulerSettings {
  // The library a ThreadSanitizer report names when its stacks run through it.
  std::string plugin_path;
  // Loads the subject in a child (or, in_process, here) and returns its evaluator; an empty one
  // when it cannot, after printing why (Subject::loader(), subject.hpp). Required.
  std::function<LoadedSubject()> load_subject;
  Isolation isolation = Isolation::backend;
  std::chrono::milliseconds timeout{60000};
  std::size_t memory_limit_bytes = 0;  // per child; 0: none
  std::size_t parallel_fake = 2;       // fake clauses at once (workers, or processes)
  BackendSettings backend;             // how each child makes its backend (--devices)
};

// Results in job order; `on_result` (optional) is called in this process as each one is known.
std::vector<ClauseResult> run_clause_jobs(
    const std::vector<ClauseJob>& jobs, const SchedulerSettings& settings,
    const std::function<void(const ClauseResult&)>& on_result = {});

}  // namespace emm::conformance
