// nep49/engine/session.hpp — the system under test of one generated sequence: the handler (and
// the handlers its factory gave when asked again) and the blocks the model stands for.
//
// A Session is built for every sequence the engine runs (and every shrink it tries). It holds the
// live blocks in the model's order (a command that frees model block 3 frees session block 3),
// with the parts of each that hold the block's pattern, and the handlers by name number. Commands
// call the handler through it (Nep49Run's wrappers: NULL function pointers and escaping C++
// exceptions fail the clause), record each call in the trace, and report what happened to the
// running clause's Property, which judges.
//
//   Session session(run, property, trace, tally);
//   session.begin_call({"p1 = handler->malloc(ctx, 4097)", "void* p1 = ...;", "p1 = ..."});
//
// When the sequence ends without a failure, finish() frees every live block with its own size and
// gives back what the factory was asked for (those calls are part of the trace). After a failure
// nothing more is asked of the handler, whose state may be broken: its blocks are leaked.
//
// Not thread-safe: one sequence runs on one thread (the contention command joins its threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <utility>
#include <vector>

#include "emm/conformance/nep49_run.hpp"
#include "nep49/src/engine/block_bytes.hpp"
#include "nep49/src/engine/model.hpp"

namespace emm::conformance::nep49_engine {

class Property;
enum class CommandKind;

// One call of a sequence: as the reproducer lists it, and as GoogleTest and Python code; then
// what the harness did after it (writing the block's pattern), which a reproducer shows only
// where the harness got to do it: not after a call whose result already failed the clause.
struct Call {
  Call() = default;
  Call(std::string c_text, std::string cpp_text, std::string python_text,
       std::string cpp_then_text = {}, std::string python_then_text = {})
      : c(std::move(c_text)),
        cpp(std::move(cpp_text)),
        python(std::move(python_text)),
        cpp_then(std::move(cpp_then_text)),
        python_then(std::move(python_then_text)) {}

  std::string c;            // "p1 = handler->malloc(ctx, 4097)"
  std::string cpp;          // "void* p1 = handler->malloc(ctx, 4097);"
  std::string python;       // "p1 = handler.malloc(ctx, 4097)"
  std::string cpp_then;     // "fill(p1, 0, 4097, 1);"
  std::string python_then;  // "fill(p1, 0, 4097, 1)"
  bool then_done = false;
};

// The calls of one sequence so far, and what a failure said about them.
struct Trace {
  std::vector<Call> calls;
  // The failing check as a statement a reproducer ends with; empty when none shows it.
  std::string assertion_cpp;
  std::string assertion_python;
  bool contention = false;  // the reproducer needs the contention workload's code
  // Told of each call as it begins, and when the harness did what follows call `index` (0-based)
  // (a sequence run in a process of its own records them where the parent reads them).
  std::function<void(const Call&)> on_call;
  std::function<void(std::size_t index)> on_then_done;
  // Told now and then that the sequence makes progress (contention threads call it, at once);
  // a sequence that stops telling for a while hangs.
  std::function<void()> on_progress;
};

// A live block as the harness knows it.
struct Block {
  int id = 0;
  std::string name;         // "p3"
  void* pointer = nullptr;  // null: the handler returned NULL and the clause let it pass
  std::size_t size = 0;
  std::size_t before_realloc = 0;  // its size before its last realloc; 0: none
  int handler = 1;                 // the name number of the handler that made it
  Origin origin = Origin::malloc;
  std::vector<Range> ranges;  // the parts that hold pattern `id`
  std::size_t made_at = 0;    // the call that made it (1-based)
};

enum class Function { malloc, calloc, realloc, free };

// One call of the handler as a property sees it.
struct Request {
  CommandKind kind;
  Function function = Function::malloc;
  std::size_t size = 0;  // bytes asked (realloc: the new size; free: the size passed)
  std::size_t nelem = 0;
  std::size_t elsize = 0;
  const Block* block = nullptr;  // realloc, free: the block as it was before the call
  bool expect_null = false;      // no machine can satisfy it (impossible, overflow, to failure)
  int handler = 1;               // the name number of the handler called
  std::string text;              // "malloc(4097)", "free(p3, 1)"
  std::string result;            // the reproducer's variable for the result: "p3", "q5"
};

// What a contention command saw.
struct ContentionReport {
  int threads = 0;
  int realloc_threads = 0;  // of them, those calling realloc without the GIL
  int rounds = 0;           // operations each thread made at least
  std::size_t calls = 0;    // handler calls made in all
  std::string failure;      // the first thing that went wrong, or ""
};

// Counts across the sequences of one clause, for its certificate.
struct Tally {
  std::size_t contention_rounds = 0;  // contention commands run
  std::size_t contention_calls = 0;   // handler calls they made
};

class Session {
 public:
  Session(Nep49Run& run, const Property& property, Trace& trace, Tally& tally);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Nep49Run& run() noexcept { return run_; }
  const Property& property() const noexcept { return property_; }
  Tally& tally() noexcept { return tally_; }

  // --- the handlers -----------------------------------------------------------------------------
  // The handler named `number` (1: the subject's; k: the factory's (k-1)-th answer).
  const nep49::Handler& handler(int number) const;
  // Asks the factory again; the answer is name number `number`. Kept: used until finish();
  // else given back at once.
  void ask_again(int number, bool keep);

  // --- the blocks the model lists --------------------------------------------------------------
  std::vector<Block>& blocks() noexcept { return blocks_; }
  const std::vector<Block>& blocks() const noexcept { return blocks_; }
  // Writes the block's pattern over [from, size) (windows of it) and records it; fails the
  // clause when the memory cannot be written.
  void write(Block& block, std::size_t from);
  // "" when the parts of `block` that hold its pattern still do; else what differs.
  std::string damage(const Block& block) const;
  // The first live block whose pattern is damaged and what differs; {nullptr, ""} when none.
  std::pair<const Block*, std::string> first_damaged() const;
  // Another live block sharing bytes with [pointer, pointer + size); null when none. `self`
  // (when given) is left out.
  const Block* overlapping(const void* pointer, std::size_t size,
                           const Block* self = nullptr) const;

  // Ends the sequence: every live block freed with its own size (newest first), every kept
  // answer of the factory given back. Each is a call of the trace.
  void finish();

  // Per-sequence state a property keeps between its hooks, made on first use.
  template <class T>
  T& state() {
    std::shared_ptr<void>& slot = states_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_shared<T>();
    return *static_cast<T*>(slot.get());
  }

  // --- the trace --------------------------------------------------------------------------------
  // Appends `call` before it is made; failures name the last call begun.
  void begin_call(Call call);
  std::size_t call_number() const noexcept { return trace_.calls.size(); }
  Trace& trace() noexcept { return trace_; }

  // --- verdict ----------------------------------------------------------------------------------
  // Fails the clause at the current call: "[ID] at call N (<call>): <what>", with statements a
  // reproducer ends with to show it (optional).
  [[noreturn]] void fail(std::string_view what, std::string_view assertion_cpp = "",
                         std::string_view assertion_python = "");
  bool failed() const noexcept { return failed_; }

 private:
  struct Again {
    int number = 0;
    const nep49::Handler* handler = nullptr;
    int token = 0;
  };

  Nep49Run& run_;
  const Property& property_;
  Trace& trace_;
  Tally& tally_;
  std::vector<Block> blocks_;
  std::vector<Again> again_;  // kept answers of the factory
  std::map<std::type_index, std::shared_ptr<void>> states_;
  bool failed_ = false;
  bool finished_ = false;
};

// "p3 (4097 bytes, made by call 2)".
std::string describe(const Block& block);

}  // namespace emm::conformance::nep49_engine
