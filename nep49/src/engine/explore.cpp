#include "nep49/src/engine/explore.hpp"

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <chrono>
#include <functional>

#include "emm/conformance/sanitizer_build.hpp"
#include "engine/explore.hpp"
#include "nep49/src/engine/commands.hpp"
#include "nep49/src/engine/render.hpp"
#include "nep49/src/engine/sequence_process.hpp"

namespace emm::conformance::nep49_engine {
namespace {

// Shrinking stops after this many tries or this long, keeping the shortest failure found so far.
// Lower than the plugin engine's: every try is a process of its own, and a contention try makes
// thousands of calls.
constexpr int kMaxShrinkRuns = 600;
constexpr std::chrono::seconds kMaxShrinkTime{6};
// A sequence hangs when it makes no progress (no call begun, no contention round) this long; a
// slow handler under contention is slow, not stuck. Four times that in a ThreadSanitizer build
// of the kit, where every synchronisation is many times slower: there, 15 threads contending on
// a busy 2-core machine once went 5 s without a tick (a CI run of stop 33;
// kThreadSanitizerBuild, sanitizer_build.hpp).
constexpr std::chrono::milliseconds kSequenceLimit{kThreadSanitizerBuild ? 20000 : 5000};

// Counts accepted shrinks; prints nothing (the certificate reports).
class QuietListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (accepted) ++shrinks;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  int shrinks = 0;
};

// What one clause explores: its plan, its command mix, its RapidCheck parameters.
struct Exploring {
  Nep49Run& run;
  const Property& property;
  Plan plan;
  std::vector<Weighted> mix;
  rc::detail::TestParams params;
  int budget = 0;

  std::vector<CommandPtr> generate() const {
    const Model initial;
    return *rc::state::gen::commands(
        initial, [this](const Model& model) { return make_command_generator(model, mix, plan); });
  }

  // RapidCheck over `sequence` with the clause's seed and budget; `listener` counts shrinks.
  rc::detail::TestResult check(const std::function<void()>& sequence,
                               QuietListener& listener) const {
    rc::detail::TestMetadata metadata;
    metadata.id = run.id();
    metadata.description = run.id();
    // With an explicit (empty) reproduction map RapidCheck does not read its global
    // configuration, which would print "Using configuration" and pick a random seed.
    return rc::detail::checkProperty(rc::detail::toProperty(sequence), metadata, params, listener,
                                     {});
  }
};

// Discovery: the clause's sequences one after another in one child forked from the clause's
// process (which their calls therefore never change), up to the first that fails; on the gpu
// backend in the clause's process itself (runs_in_children()).
struct Discovery {
  SequenceOutcome outcome;  // passed, or the first failing sequence (after the earlier ones)
  int sequences = 0;        // run, the failing one included
};

Discovery discover(const Exploring& exploring, SequenceRecord& record) {
  record.clear();
  std::string output;
  const ChildEnd end = run_recorded(
      exploring.run,
      [&] {
        bool stop = false;
        int index = 0;
        auto sequence = [&] {
          if (stop) return;  // a shrink RapidCheck tries after the failure: not here
          const std::vector<CommandPtr> commands = exploring.generate();
          record.begin_sequence(++index);
          Trace trace;
          trace.on_call = [&](const Call& call) { record.add(call); };
          trace.on_then_done = [&](std::size_t call) { record.then_done(call); };
          trace.on_progress = [&] { record.tick(); };
          Tally tally;
          std::string failure;
          try {
            Session session(exploring.run, exploring.property, trace, tally);
            const Model initial;
            rc::state::runAll(commands, initial, session);
            session.finish();
          } catch (const ClauseFailure& error) {
            failure = at_call(error.what(), trace);
          } catch (const rc::detail::CaseResult&) {
            throw;
          } catch (const rc::GenerationFailure&) {
            throw;
          } catch (...) {
            record.finish(SequenceRecord::Status::engine_error, describe_current_exception(),
                          trace);
            stop = true;
            return;
          }
          record.add_tally(tally);
          if (failure.empty()) return;
          record.finish(SequenceRecord::Status::failed, failure, trace);
          stop = true;
          RC_FAIL(failure);
        };
        QuietListener listener;
        exploring.check(sequence, listener);
        if (!stop) record.finish(SequenceRecord::Status::passed, "", Trace{});
        return 0;
      },
      record, kSequenceLimit, output);
  Discovery discovery;
  discovery.outcome = outcome_of(exploring.run, end, record, output, kSequenceLimit);
  discovery.sequences = record.sequence();
  return discovery;
}

// Shrinking: the clause's sequences again, each in a process of its own, from the first; the
// first failing one is shrunk. Every try starts from the clause's handler state, so the shortest
// sequence fails alone, as its reproducer will.
struct Shrunk {
  bool failed = false;
  SequenceOutcome outcome;  // the shortest failing sequence found
  int sequences = 0;        // run until the first failing one, that one included
  int shrinks = 0;
  Tally tally;
  std::string engine_error;
};

Shrunk shrink(const Exploring& exploring, SequenceRecord& record) {
  Shrunk shrunk;
  int runs_after_failure = 0;
  std::chrono::steady_clock::time_point first_failure;
  bool stop = false;
  auto sequence = [&] {
    if (stop) return;
    if (shrunk.failed && (++runs_after_failure > kMaxShrinkRuns ||
                          std::chrono::steady_clock::now() - first_failure > kMaxShrinkTime)) {
      stop = true;
      return;
    }
    const std::vector<CommandPtr> commands = exploring.generate();
    SequenceOutcome outcome;
    try {
      outcome = run_sequence(exploring.run, exploring.property, commands, record, kSequenceLimit);
    } catch (...) {
      shrunk.engine_error = describe_current_exception();
      stop = true;
      return;
    }
    shrunk.tally.contention_rounds += outcome.tally.contention_rounds;
    shrunk.tally.contention_calls += outcome.tally.contention_calls;
    if (outcome.kind == SequenceOutcome::Kind::passed) return;
    if (outcome.kind == SequenceOutcome::Kind::engine_error) {
      shrunk.engine_error = outcome.message;
      stop = true;
      return;
    }
    if (!shrunk.failed) first_failure = std::chrono::steady_clock::now();
    shrunk.failed = true;
    shrunk.outcome = std::move(outcome);
    RC_FAIL(shrunk.outcome.message);
  };
  QuietListener listener;
  const rc::detail::TestResult result = exploring.check(sequence, listener);
  rc::detail::FailureResult failure;
  if (result.match(failure)) shrunk.sequences = failure.numSuccess + 1;
  shrunk.shrinks = listener.shrinks;
  return shrunk;
}

[[noreturn]] void fail_with(Nep49Run& run, const SequenceOutcome& outcome, Reproducer reproducer,
                            bool module) {
  for (const Call& call : outcome.trace.calls) reproducer.calls.push_back(call.c);
  reproducer.gtest = render_gtest(run, outcome.trace, outcome.message, reproducer);
  reproducer.python = render_python(run, outcome.trace, outcome.message, reproducer);
  reproducer.for_python = module;
  run.set_reproducer(std::move(reproducer));
  if (outcome.kind == SequenceOutcome::Kind::crashed) {
    throw SequenceEnded(outcome.message, Outcome::crash);
  }
  if (outcome.kind == SequenceOutcome::Kind::hung) {
    throw SequenceEnded(outcome.message, Outcome::timeout);
  }
  throw ClauseFailure(outcome.message);
}

}  // namespace

void explore(Nep49Run& run, const Property& property) {
  const nep49::Allocator& allocator = run.handler().allocator;
  // Without malloc or free no sequence can run; NEP49-3 and the fixed scenario say so.
  if (allocator.malloc == nullptr || allocator.free == nullptr) return;
  const Exploration& exploration = run.exploration();
  Exploring exploring{run, property, {}, {}, {}, 0};
  exploring.plan.has_calloc = allocator.calloc != nullptr;
  exploring.plan.has_realloc = allocator.realloc != nullptr;
  exploring.plan.module = run.subject().spec().kind == Nep49SubjectSpec::Kind::module;
  exploring.plan.large_blocks = property.large_blocks();
  exploring.mix = property.commands(exploring.plan);
  exploring.budget =
      exploration.budget > 0 ? exploration.budget : default_budget(run.backend().kind());
  exploring.params.seed = engine::clause_seed(exploration.seed, run.id());
  exploring.params.maxSuccess = property.sequences(exploring.budget);
  exploring.params.maxSize = property.longest();

  SequenceRecord record;
  const Discovery discovery = discover(exploring, record);
  Tally tally = discovery.outcome.tally;
  auto record_tally = [&] {
    if (tally.contention_rounds == 0) return;
    run.record("contention_rounds", std::to_string(tally.contention_rounds));
    run.record("contention_calls", std::to_string(tally.contention_calls));
  };
  run.record("sequence_seed", std::to_string(exploration.seed));
  if (discovery.outcome.kind == SequenceOutcome::Kind::passed) {
    run.record("sequences", std::to_string(discovery.sequences));
    record_tally();
    return;
  }
  if (discovery.outcome.kind == SequenceOutcome::Kind::engine_error) {
    run.note("the sequence engine stopped: " + discovery.outcome.message);
    record_tally();
    return;
  }

  const Shrunk shrunk = shrink(exploring, record);
  tally.contention_rounds += shrunk.tally.contention_rounds;
  tally.contention_calls += shrunk.tally.contention_calls;
  record_tally();
  if (!shrunk.engine_error.empty()) run.note("the sequence engine stopped: " + shrunk.engine_error);
  Reproducer reproducer;
  reproducer.seed = exploration.seed;
  reproducer.budget = exploring.budget;
  if (shrunk.failed) {
    reproducer.sequences = shrunk.sequences;
    reproducer.shrinks = shrunk.shrinks;
    fail_with(run, shrunk.outcome, std::move(reproducer), exploring.plan.module);
  }
  // No sequence fails alone: the one discovery found fails only after the clause's earlier
  // sequences (or the failure comes and goes, as a race does). Report it as found, unshrunk.
  run.note(str("sequence ", discovery.sequences,
               " failed after the clause's earlier sequences ran in the same process; none "
               "failed alone, in a process of its own, so it was not shrunk (the handler's state "
               "from the earlier sequences, or a race, decides it)"));
  reproducer.sequences = discovery.sequences;
  fail_with(run, discovery.outcome, std::move(reproducer), exploring.plan.module);
}

}  // namespace emm::conformance::nep49_engine
