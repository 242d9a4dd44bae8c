#include "nep49/src/engine/sequence_process.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "emm/conformance/backend_descriptor.hpp"

namespace emm::conformance::nep49_engine {
namespace {
constexpr std::size_t kRecordSize = std::size_t{1} << 20;
constexpr std::size_t kMaxMarkedCalls = 4096;
}  // namespace

std::string at_call(const std::string& message, const Trace& trace) {
  if (trace.calls.empty() || message.find("] at call ") != std::string::npos) return message;
  const std::size_t end = message.find("] ");
  if (end == std::string::npos) return message;
  return str(message.substr(0, end + 2), "at call ", trace.calls.size(), " (", trace.calls.back().c,
             "): ", message.substr(end + 2));
}

// Calls are appended as three NUL-terminated strings each (c, cpp, python); at the end the
// message and the two assertions.
struct SequenceRecord::Header {
  std::uint32_t used = 0;
  std::uint32_t status = 0;
  std::uint32_t calls_end = 0;  // where the calls end and the message starts, once finished
  std::uint32_t contention = 0;
  std::int32_t sequence = 0;
  std::uint64_t contention_rounds = 0;
  std::uint64_t contention_calls = 0;
  std::uint64_t progress = 0;  // only through std::atomic_ref: the child's threads tick it
  std::uint8_t then_done[kMaxMarkedCalls / 8] = {};  // bit i: Call::then_done of call i
};

SequenceRecord::SequenceRecord() : size_(kRecordSize) {
  void* memory = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  memory_ = static_cast<char*>(memory);
}

SequenceRecord::~SequenceRecord() { ::munmap(memory_, size_); }

SequenceRecord::Header& SequenceRecord::header() const {
  return *reinterpret_cast<Header*>(memory_);
}
char* SequenceRecord::data() const { return memory_ + sizeof(Header); }

void SequenceRecord::clear() { header() = Header{}; }

void SequenceRecord::append(const std::string& text) {
  const std::size_t room = size_ - sizeof(Header) - header().used;
  if (room == 0) return;
  const std::size_t length = std::min(text.size(), room - 1);
  std::memcpy(data() + header().used, text.data(), length);
  data()[header().used + length] = '\0';
  header().used += static_cast<std::uint32_t>(length + 1);
}

void SequenceRecord::tick() {
  std::atomic_ref<std::uint64_t>(header().progress).fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t SequenceRecord::progress() const {
  return std::atomic_ref<std::uint64_t>(header().progress).load(std::memory_order_relaxed);
}

void SequenceRecord::add(const Call& call) {
  tick();
  append(call.c);
  append(call.cpp);
  append(call.python);
  append(call.cpp_then);
  append(call.python_then);
}

void SequenceRecord::then_done(std::size_t index) {
  if (index < kMaxMarkedCalls) header().then_done[index / 8] |= std::uint8_t(1u << (index % 8));
}

void SequenceRecord::begin_sequence(int index) {
  std::fill(std::begin(header().then_done), std::end(header().then_done), std::uint8_t{0});
  header().used = 0;
  header().calls_end = 0;
  header().contention = 0;
  header().status = static_cast<std::uint32_t>(Status::running);
  header().sequence = index;
}

void SequenceRecord::add_tally(const Tally& tally) {
  header().contention_rounds += tally.contention_rounds;
  header().contention_calls += tally.contention_calls;
}

void SequenceRecord::finish(Status status, const std::string& message, const Trace& trace) {
  header().calls_end = header().used;
  append(message);
  append(trace.assertion_cpp);
  append(trace.assertion_python);
  header().contention = trace.contention ? 1 : 0;
  header().status = static_cast<std::uint32_t>(status);
}

int SequenceRecord::sequence() const { return header().sequence; }

SequenceRecord::Status SequenceRecord::status() const {
  return static_cast<Status>(header().status);
}

std::vector<std::string> SequenceRecord::strings(std::uint32_t from, std::uint32_t to) const {
  std::vector<std::string> out;
  const char* at = data() + from;
  const char* end = data() + to;
  while (at < end) {
    out.emplace_back(at);
    at += out.back().size() + 1;
  }
  return out;
}

std::vector<Call> SequenceRecord::calls() const {
  const std::uint32_t end = status() == Status::running ? header().used : header().calls_end;
  const std::vector<std::string> texts = strings(0, end);
  std::vector<Call> calls;
  for (std::size_t i = 0; i + 4 < texts.size(); i += 5) {
    const std::size_t index = calls.size();
    const bool done =
        index < kMaxMarkedCalls && (header().then_done[index / 8] & (1u << (index % 8))) != 0;
    calls.emplace_back(texts[i], texts[i + 1], texts[i + 2], texts[i + 3], texts[i + 4]);
    calls.back().then_done = done;
  }
  return calls;
}

std::string SequenceRecord::message() const {
  const std::vector<std::string> tail = strings(header().calls_end, header().used);
  return tail.empty() ? std::string() : tail[0];
}

void SequenceRecord::read_trace_extras(Trace& trace) const {
  const std::vector<std::string> tail = strings(header().calls_end, header().used);
  if (tail.size() >= 3) {
    trace.assertion_cpp = tail[1];
    trace.assertion_python = tail[2];
  }
  trace.contention = header().contention != 0;
}

Tally SequenceRecord::tally() const {
  Tally tally;
  tally.contention_rounds = header().contention_rounds;
  tally.contention_calls = header().contention_calls;
  return tally;
}

bool runs_in_children(const Nep49Run& run) {
  return backend_descriptor(run.backend().kind()).fork_safe;
}

ChildEnd run_recorded(const Nep49Run& run, const std::function<int()>& body,
                      const SequenceRecord& record, std::chrono::milliseconds limit,
                      std::string& output) {
  if (!runs_in_children(run)) {
    ChildEnd end;
    end.kind = ChildEnd::Kind::exited;
    end.exit_status = body();
    return end;
  }
  ChildOptions options;
  options.output_keep_bytes = 4096;
  ChildProcess child = ChildProcess::fork(body, options);
  const ChildEnd end = wait_while_progressing(child, record, limit);
  output = child.output().tail(600);
  return end;
}

SequenceOutcome run_sequence(Nep49Run& run, const Property& property,
                             const std::vector<CommandPtr>& commands, SequenceRecord& record,
                             std::chrono::milliseconds limit) {
  record.clear();
  std::string output;
  const ChildEnd end = run_recorded(
      run,
      [&] {
        Trace trace;
        trace.on_call = [&](const Call& call) { record.add(call); };
        trace.on_then_done = [&](std::size_t call) { record.then_done(call); };
        trace.on_progress = [&] { record.tick(); };
        Tally tally;
        // Everything the handler holds leaks with the child, which ends right after (in the
        // clause's own process, with the clause's).
        Session session(run, property, trace, tally);
        try {
          const Model initial;
          rc::state::runAll(commands, initial, session);
          session.finish();
          record.add_tally(tally);
          record.finish(SequenceRecord::Status::passed, "", trace);
        } catch (const ClauseFailure& failure) {
          record.add_tally(tally);
          record.finish(SequenceRecord::Status::failed, at_call(failure.what(), trace), trace);
        } catch (...) {
          record.finish(SequenceRecord::Status::engine_error, describe_current_exception(), trace);
        }
        return 0;
      },
      record, limit, output);
  return outcome_of(run, end, record, output, limit);
}

ChildEnd wait_while_progressing(ChildProcess& child, const SequenceRecord& record,
                                std::chrono::milliseconds limit) {
  using Clock = ChildProcess::Clock;
  constexpr std::chrono::milliseconds kLook{100};
  std::uint64_t seen = record.progress();
  Clock::time_point last_progress = Clock::now();
  ChildProcess* const children[] = {&child};
  while (!wait_any(children, Clock::now() + kLook)) {
    const std::uint64_t now_seen = record.progress();
    if (now_seen != seen) {
      seen = now_seen;
      last_progress = Clock::now();
    } else if (Clock::now() - last_progress > limit) {
      child.kill();
      ChildEnd hung;
      hung.kind = ChildEnd::Kind::timed_out;
      return hung;
    }
  }
  return child.wait(Clock::now());
}

SequenceOutcome outcome_of(const Nep49Run& run, const ChildEnd& end, const SequenceRecord& record,
                           const std::string& output, std::chrono::milliseconds limit) {
  SequenceOutcome outcome;
  outcome.trace.calls = record.calls();
  outcome.tally = record.tally();
  const SequenceRecord::Status status = record.status();
  if (end.kind == ChildEnd::Kind::exited && status != SequenceRecord::Status::running) {
    record.read_trace_extras(outcome.trace);
    switch (status) {
      case SequenceRecord::Status::passed:
        return outcome;
      case SequenceRecord::Status::failed:
        outcome.kind = SequenceOutcome::Kind::failed;
        outcome.message = record.message();
        return outcome;
      default:
        outcome.kind = SequenceOutcome::Kind::engine_error;
        outcome.message = record.message();
        return outcome;
    }
  }
  const std::string where =
      outcome.trace.calls.empty()
          ? std::string("before the first call")
          : str("at call ", outcome.trace.calls.size(), " (", outcome.trace.calls.back().c, ")");
  std::string printed = output;
  while (!printed.empty() && (printed.back() == '\n' || printed.back() == ' ')) printed.pop_back();
  if (!printed.empty()) printed = "; it printed: " + printed;
  if (end.kind == ChildEnd::Kind::timed_out) {
    outcome.kind = SequenceOutcome::Kind::hung;
    outcome.message = str("[", run.id(), "] ", where, ": no progress for ", limit.count(),
                          " ms: the handler hangs", printed);
  } else if (end.kind == ChildEnd::Kind::signaled) {
    outcome.kind = SequenceOutcome::Kind::crashed;
    outcome.message =
        str("[", run.id(), "] ", where,
            ": the handler crashed the process: ", describe_signal(end.signal), printed);
  } else {
    outcome.kind = SequenceOutcome::Kind::crashed;
    outcome.message = str("[", run.id(), "] ", where, ": the process running the sequence ",
                          end.describe(), printed);
  }
  return outcome;
}

}  // namespace emm::conformance::nep49_engine
