#include "engine/explore.hpp"

#include <rapidcheck.h>
#include <rapidcheck/state.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "emm/conformance/child_process.hpp"
#include "engine/commands.hpp"
#include "engine/render.hpp"

namespace emm::conformance {

namespace engine {
namespace {

// The longest sequence RapidCheck generates (its "size"; sequences grow to it over the budget).
constexpr int kMaxLength = 60;
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
  plan.foreign_exports = property.foreign_exports();
  plan.page_locked_capacity = run.backend().page_locked_capacity().value_or(0);
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
// `left_out` dropped (none: the whole sequence again); nullopt when that replay itself fails.
std::optional<std::size_t> leak_without(ClauseRun& run, const Model& initial,
                                        const std::vector<CommandPtr>& commands,
                                        std::optional<CommandKind> left_out) {
  std::vector<CommandPtr> kept;
  for (const CommandPtr& command : commands) {
    if (!left_out || kind_of(*command) != *left_out) kept.push_back(command);
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

// A buffer shared with the child process a sequence runs in (Exploration::sequences_in_children):
// the child appends each call as it begins and, at the end, how the sequence went; what it
// wrote survives its crash. Written by one child at a time, read by the parent after the child
// ended.
class SharedRecord {
 public:
  enum Status : std::uint32_t { running = 0, passed = 1, failed = 2 };

  explicit SharedRecord(std::size_t size) : size_(size) {
    void* memory =
        ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    memory_ = static_cast<char*>(memory);
  }
  ~SharedRecord() { ::munmap(memory_, size_); }
  SharedRecord(const SharedRecord&) = delete;
  SharedRecord& operator=(const SharedRecord&) = delete;

  void clear() { header() = Header{}; }
  // In the child.
  void add(const Call& call) {
    append(call.cpp);
    append(call.python);
  }
  void finish(Status status, std::string_view message) {
    header().message_at = header().used;
    append(message);
    header().status = status;
  }
  // In the parent.
  Status status() const { return static_cast<Status>(header().status); }
  std::vector<Call> calls() const {
    std::vector<Call> calls;
    const char* at = data();
    const char* end = data() + (header().status == running ? header().used : header().message_at);
    while (at < end) {
      Call call;
      call.cpp = at;
      at += call.cpp.size() + 1;
      if (at >= end) break;
      call.python = at;
      at += call.python.size() + 1;
      calls.push_back(std::move(call));
    }
    return calls;
  }
  std::string message() const { return data() + header().message_at; }

 private:
  struct Header {
    std::uint32_t used = 0;
    std::uint32_t status = running;
    std::uint32_t message_at = 0;
  };
  Header& header() const { return *reinterpret_cast<Header*>(memory_); }
  char* data() const { return memory_ + sizeof(Header); }
  // Appends `text` and its terminating NUL; what does not fit is cut.
  void append(std::string_view text) {
    const std::size_t room = size_ - sizeof(Header) - header().used;
    if (room == 0) return;
    const std::size_t length = std::min(text.size(), room - 1);
    std::memcpy(data() + header().used, text.data(), length);
    data()[header().used + length] = '\0';
    header().used += static_cast<std::uint32_t>(length + 1);
  }

  std::size_t size_;
  char* memory_ = nullptr;
};

// Runs `commands` in a child process; "" when the sequence passed, else the failure, with the
// calls made (up to the crash) in `trace`. A crash or a hang is a failure of the clause at the
// call it happened in.
std::string run_in_child(ClauseRun& run, const Property& property, const Model& initial,
                         const std::vector<CommandPtr>& commands, SharedRecord& record,
                         std::chrono::milliseconds limit, Trace& trace) {
  record.clear();
  ChildProcess child = ChildProcess::fork([&] {
    Trace mine;
    mine.on_call = [&](const Call& call) { record.add(call); };
    try {
      Session session(run, property, initial, mine);
      rc::state::runAll(commands, initial, session);
      session.finish();
      record.finish(SharedRecord::passed, "");
    } catch (const ClauseFailure& failure) {
      record.finish(SharedRecord::failed, failure.what());
    } catch (...) {
      record.finish(SharedRecord::failed, run.clause().tag("the sequence engine failed: " +
                                                           describe_current_exception()));
    }
    return 0;
  });
  const ChildEnd end = child.wait(ChildProcess::Clock::now() + limit);
  trace.calls = record.calls();
  if (end.kind == ChildEnd::Kind::exited && record.status() == SharedRecord::passed) return "";
  if (end.kind == ChildEnd::Kind::exited && record.status() == SharedRecord::failed) {
    return record.message();
  }
  const std::string where =
      trace.calls.empty()
          ? std::string(
                "before the first call (while the host built the plugin's "
                "context)")
          : str("at call ", trace.calls.size(), " (",
                trace.calls.back().cpp.substr(0, trace.calls.back().cpp.find('\n')), ")");
  if (end.kind == ChildEnd::Kind::timed_out) {
    return str("[", run.id(), "] ", where, ": no answer within ", limit.count(),
               " ms: the plugin hangs");
  }
  if (end.kind == ChildEnd::Kind::signaled) {
    return str("[", run.id(), "] ", where,
               ": the plugin crashed the process: ", describe_signal(end.signal));
  }
  return str("[", run.id(), "] ", where, ": the process running the sequence ", end.describe());
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
  const bool in_children = exploration.sequences_in_children;
  std::optional<SharedRecord> record;
  if (in_children) record.emplace(std::size_t{1} << 20);
  // A sequence that hangs in a child is given this long (a crash shows at once).
  constexpr std::chrono::milliseconds kSequenceLimit{1500};
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
    if (in_children) {
      const auto commands = *rc::state::gen::commands(
          initial, [&](const Model& model) { return make_command_generator(model, mix, plan); });
      failure = run_in_child(run, property, initial, commands, *record, kSequenceLimit, trace);
      if (failure.empty()) return;
      if (!findings.failed) findings.first_failure = std::chrono::steady_clock::now();
      findings.failed = true;
      findings.message = failure;
      findings.trace = std::move(trace);
      RC_FAIL(failure);
    }
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
      session->set_replay([&run, &initial, commands](std::optional<CommandKind> left_out) {
        return leak_without(run, initial, commands, left_out);
      });
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
    reproducer.for_python = run.options().python_plugin;
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
