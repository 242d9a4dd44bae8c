#include "engine/explore.hpp"

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "emm/python/plugin_entry.hpp"
#include "engine/commands.hpp"
#include "engine/render.hpp"

namespace emm::conformance {

namespace engine {
namespace {

// The longest sequence RapidCheck generates (its "size"; sequences grow to it over the budget).
constexpr int kMaxLength = 30;
// Shrinking stops after this many tries or this long, keeping the shortest failure found so far
// (a clause's time bound is the caller's: emm-certify's --timeout-s, 60 s by default).
constexpr int kMaxShrinkRuns = 1500;
constexpr std::chrono::seconds kMaxShrinkTime{12};
constexpr std::size_t kBufferSize = 16 * 1024;  // each mempin buffer: four pages

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

Plan make_plan(ClauseRun& run, const Property& property) {
  Plan plan;
  plan.capabilities = run.capabilities();
  plan.backend = run.backend().kind();
  plan.devices = std::max(1, std::min(property.devices(run.backend().device_count()), 2));
  plan.pins_share_pages = property.pins_share_pages();
  try {
    plan.can_map_host_memory = run.driver().can_map_host_memory(0);
  } catch (...) {
    plan.can_map_host_memory = false;
  }
  return plan;
}

Model initial_model(ClauseRun& run, const Plan& plan) {
  Model model;
  model.devices = plan.devices;
  model.can_map_host_memory = plan.can_map_host_memory;
  model.buffers = 2;
  model.buffer_size = kBufferSize;
  model.device_capacity = run.backend().device_capacity(0);
  model.pins_share_pages = plan.pins_share_pages;
  return model;
}

// What the runs of one exploration leave behind: the last failure (RapidCheck's last failing
// run is the shortest sequence it found) and when to stop shrinking.
struct Findings {
  bool failed = false;
  std::string message;
  Trace trace;
  int runs_after_failure = 0;
  std::chrono::steady_clock::time_point first_failure;
  bool stop = false;  // over the shrinking bounds: every further run passes at once
  std::string engine_error;
  std::string cannot_start;  // why no session could be set up
};

// Checks nothing: the property of a replay that only measures.
class Unjudged final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override { return {}; }
};

// The device memory `commands` leave allocated after the final reset() with every command of
// `left_out` dropped; nullopt when that replay itself fails.
std::optional<std::size_t> leak_without(ClauseRun& run, const Model& initial,
                                        const std::vector<CommandPtr>& commands,
                                        CommandKind left_out) {
  std::vector<CommandPtr> kept;
  for (const CommandPtr& command : commands) {
    if (kind_of(*command) != left_out) kept.push_back(command);
  }
  static const Unjudged unjudged;
  Trace trace;
  try {
    Session session(run, unjudged, initial, trace);
    if (!rc::state::isValidSequence(kept, initial)) return std::nullopt;
    rc::state::runAll(kept, initial, session);
    session.finish();
    const Snapshot now = session.snapshot();
    const std::size_t baseline = session.baseline().device_bytes;
    return now.device_bytes > baseline ? now.device_bytes - baseline : 0;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::uint64_t clause_seed(std::uint64_t seed, std::string_view id) noexcept {
  std::uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a of the id, mixed with the seed
  for (const char c : id) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  std::uint64_t value = seed ^ hash;
  value = (value ^ (value >> 33)) * 0xFF51AFD7ED558CCDull;
  value = (value ^ (value >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return value ^ (value >> 33);
}

void explore(ClauseRun& run, const Property& property) {
  if (!property.prepare(run)) return;
  const Exploration& exploration = run.options().exploration;
  const Plan plan = make_plan(run, property);
  const Model initial = initial_model(run, plan);
  const std::vector<Weighted> mix = property.commands(plan);
  const int budget =
      exploration.budget > 0 ? exploration.budget : default_budget(run.backend().kind());

  Findings findings;
  auto sequence = [&] {
    if (findings.stop) return;
    if (findings.failed &&
        (++findings.runs_after_failure > kMaxShrinkRuns ||
         std::chrono::steady_clock::now() - findings.first_failure > kMaxShrinkTime)) {
      findings.stop = true;
      return;
    }
    Trace trace;
    std::string failure;
    std::unique_ptr<Session> session;
    try {
      session = std::make_unique<Session>(run, property, initial, trace);
    } catch (const ClauseFailure& error) {
      // The plugin cannot even be hosted (registration or context creation fails): no sequence
      // can run, and the clause's fixed scenario says why in its own terms.
      findings.cannot_start = error.what();
      findings.stop = true;
      return;
    }
    try {
      const auto commands = *rc::state::gen::commands(
          initial, [&](const Model& model) { return make_command_generator(model, mix, plan); });
      if (property.leaks_blamed_on()) {
        session->set_replay([&run, &initial, commands](CommandKind left_out) {
          return leak_without(run, initial, commands, left_out);
        });
      }
      rc::state::runAll(commands, initial, *session);
      session->finish();
      session.reset();
    } catch (const ClauseFailure& error) {
      failure = error.what();
    } catch (const rc::detail::CaseResult&) {
      throw;  // a discarded sequence (preconditions) is RapidCheck's to handle
    } catch (const rc::GenerationFailure&) {
      throw;
    } catch (...) {
      // The engine itself, not the plugin: stop exploring and say so on the certificate.
      findings.engine_error = describe_current_exception();
      findings.stop = true;
      return;
    }
    session.reset();  // releases what the sequence held before the next one starts
    if (failure.empty()) return;
    if (!findings.failed) findings.first_failure = std::chrono::steady_clock::now();
    findings.failed = true;
    findings.message = failure;
    findings.trace = std::move(trace);
    RC_FAIL(failure);
  };

  rc::detail::TestParams params;
  params.seed = clause_seed(exploration.seed, run.id());
  params.maxSuccess = budget;
  params.maxSize = kMaxLength;
  QuietListener listener;
  rc::detail::TestMetadata metadata;
  metadata.id = run.id();
  metadata.description = run.id();
  // With an explicit (empty) reproduction map RapidCheck does not read its global configuration,
  // which would print "Using configuration" and pick a random seed.
  const rc::detail::TestResult result =
      rc::detail::checkProperty(rc::detail::toProperty(sequence), metadata, params, listener, {});

  if (!findings.cannot_start.empty()) {
    run.note("no sequence could run (" + findings.cannot_start + ")");
    return;
  }

  if (!findings.engine_error.empty()) {
    run.note("the sequence engine stopped: " + findings.engine_error);
    run.unobservable("generated sequences (the engine failed; see the notes)");
  }
  rc::detail::FailureResult failure;
  if (result.match(failure) && findings.failed) {
    Reproducer reproducer;
    reproducer.seed = exploration.seed;
    reproducer.budget = budget;
    reproducer.sequences = failure.numSuccess + 1;
    reproducer.shrinks = listener.shrinks;
    for (const Call& call : findings.trace.calls) reproducer.calls.push_back(call.cpp);
    reproducer.gtest = render_gtest(run, findings.trace, findings.message, reproducer);
    reproducer.python = render_python(run, findings.trace, findings.message, reproducer);
    // libemm_python presents the class named by this variable (python/.../plugin_entry.hpp).
    reproducer.for_python = std::getenv(python::kPluginVariable) != nullptr;
    run.set_reproducer(std::move(reproducer));
    throw ClauseFailure(findings.message);
  }
  rc::detail::SuccessResult success;
  if (result.match(success)) {
    run.record("sequences", static_cast<std::size_t>(success.numSuccess));
  }
  rc::detail::GaveUpResult gave_up;
  if (result.match(gave_up)) {
    run.note("the sequence engine gave up: " + gave_up.description);
  }
  run.record("sequence_seed", static_cast<std::size_t>(exploration.seed));
}

}  // namespace engine
}  // namespace emm::conformance
