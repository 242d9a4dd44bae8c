// nep49/engine/sequence_process.hpp — one generated sequence run in a process of its own.
//
// A NEP 49 handler keeps its state in its process (caches, pools, thread caches, what its
// factory set up), so a sequence run after another would start from what the other left, and a
// shrunk sequence would fail only after the ones before it. Each sequence therefore runs in a
// child forked from the clause's process: every sequence, and every shrink of one, starts from the
// same handler state, a reproducer replays alone, and a handler that crashes or hangs ends that
// sequence only, which is then shrunk like any failing one.
//
// The child records each call as it begins, and at the end how the sequence went, in memory
// shared with the parent (SequenceRecord), so what it did survives its crash. The same record
// serves a child that runs a clause's sequences one after another (explore.cpp's discovery).
//
//   SequenceRecord record;
//   SequenceOutcome outcome = run_sequence(run, property, commands, record, limit);
//
// Not thread-safe: one sequence at a time; call from a single-threaded process (fork()).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emm/conformance/child_process.hpp"
#include "nep49/src/engine/commands.hpp"

namespace emm::conformance::nep49_engine {

// Memory shared with the child a sequence runs in. Written by one child at a time, read by the
// parent after the child ended.
class SequenceRecord {
 public:
  SequenceRecord();
  ~SequenceRecord();
  SequenceRecord(const SequenceRecord&) = delete;
  SequenceRecord& operator=(const SequenceRecord&) = delete;

  enum class Status : std::uint32_t { running = 0, passed = 1, failed = 2, engine_error = 3 };

  void clear();
  // In the child. A child that runs several sequences begins each (its calls replace the last
  // one's; the tally adds up).
  void begin_sequence(int index);
  void add(const Call& call);
  void then_done(std::size_t index);
  void add_tally(const Tally& tally);
  // Thread-safe: one more step of progress (every call begun counts one).
  void tick();
  void finish(Status status, const std::string& message, const Trace& trace);
  // In the parent.
  Status status() const;
  int sequence() const;  // the index begin_sequence() was last given
  std::uint64_t progress() const;
  std::vector<Call> calls() const;
  std::string message() const;
  void read_trace_extras(Trace& trace) const;  // assertions, contention
  Tally tally() const;

 private:
  struct Header;
  Header& header() const;
  char* data() const;
  void append(const std::string& text);
  std::vector<std::string> strings(std::uint32_t from, std::uint32_t to) const;

  std::size_t size_;
  char* memory_ = nullptr;
};

struct SequenceOutcome {
  enum class Kind { passed, failed, crashed, hung, engine_error };
  Kind kind = Kind::passed;
  std::string message;  // "[ID] at call N (...): ..." for every kind but passed
  Trace trace;          // the calls made, up to the failure (or the crash)
  Tally tally;
};

// Whether the clause's sequences and fixed scenario run in children forked from its process:
// yes, except on the gpu backend, whose CUDA driver does not survive fork() (every CUDA call of a
// forked child fails, so a pinned handler would answer NULL to everything). There they run in
// the clause's own process, one after another, as an uninstrumented host would call them: a
// sequence starts from what the earlier ones left, and a crash or a hang ends the clause (the
// scheduler reports it) without a shrunk reproducer; the fake backend gives one.
bool runs_in_children(const Nep49Run& run);

// Runs `body` (which writes `record`, as a child would) in a child, or here when
// runs_in_children() is false (then without the hang limit: the clause's timeout is the limit).
ChildEnd run_recorded(const Nep49Run& run, const std::function<int()>& body,
                      const SequenceRecord& record, std::chrono::milliseconds limit,
                      std::string& output);

// `limit`: how long a sequence may go without progress before it counts as hanging (a slow
// handler under contention is slow, not stuck).
SequenceOutcome run_sequence(Nep49Run& run, const Property& property,
                             const std::vector<CommandPtr>& commands, SequenceRecord& record,
                             std::chrono::milliseconds limit);

// Waits for `child` (which ticks `record`) until it ends, or until it made no progress for
// `limit` (then it is killed, and the end says timed_out).
ChildEnd wait_while_progressing(ChildProcess& child, const SequenceRecord& record,
                                std::chrono::milliseconds limit);

// How a child that ended (`end`) left `record`: its outcome, with the calls of the sequence it
// was running, what it printed (`output`) when it crashed.
SequenceOutcome outcome_of(const Nep49Run& run, const ChildEnd& end, const SequenceRecord& record,
                           const std::string& output, std::chrono::milliseconds limit);

// "[ID] what" raised by Nep49Run's wrappers (no call named) as "[ID] at call N (<call>): what".
std::string at_call(const std::string& message, const Trace& trace);

}  // namespace emm::conformance::nep49_engine
