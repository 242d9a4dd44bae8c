#include "nep49/src/engine/session.hpp"

#include <algorithm>
#include <cstdint>

#include "nep49/src/engine/property.hpp"

namespace emm::conformance::nep49_engine {

std::string describe(const Block& block) {
  return str(block.name, " (", block.size, " bytes, made by call ", block.made_at, ")");
}

Session::Session(Nep49Run& run, const Property& property, Trace& trace, Tally& tally)
    : run_(run), property_(property), trace_(trace), tally_(tally) {}

// After a failure, or when the engine stopped the sequence, nothing more is asked of the
// handler: its blocks and the factory's answers are leaked rather than freed through a handler
// that may be broken (a double free would end the clause with a crash instead of its message).
Session::~Session() = default;

const nep49::Handler& Session::handler(int number) const {
  if (number == 1) return run_.handler();
  for (const Again& again : again_) {
    if (again.number == number) return *again.handler;
  }
  return run_.handler();  // unreachable: the model names only handlers it holds
}

void Session::ask_again(int number, bool keep) {
  Nep49Subject::AskedAgain answer;
  try {
    answer = run_.subject().ask_again();
  } catch (...) {
    fail(str("asking the handler's factory again (", run_.subject().factory_call(),
             ") failed: ", describe_current_exception(),
             "; a program may import a handler module, or call its factory, more than once"));
  }
  if (keep) {
    again_.push_back({number, answer.handler, answer.token});
  } else {
    try {
      run_.subject().release_again(answer.token);
    } catch (...) {
      fail(str("giving back what the factory answered failed: ", describe_current_exception()));
    }
  }
}

void Session::write(Block& block, std::size_t from) {
  if (block.pointer == nullptr || from >= block.size) return;
  const std::vector<Range> parts = windows(from, block.size - from);
  if (std::string problem = write_pattern(block.pointer, parts, static_cast<unsigned>(block.id));
      !problem.empty()) {
    fail(str(describe(block), " = ", block.pointer, ": ", problem,
             "; expected every byte of the block writable (NEP49-5)"));
  }
  block.ranges.insert(block.ranges.end(), parts.begin(), parts.end());
  if (block.made_at >= 1 && block.made_at <= trace_.calls.size()) {
    trace_.calls[block.made_at - 1].then_done = true;
    if (trace_.on_then_done) trace_.on_then_done(block.made_at - 1);
  }
}

std::string Session::damage(const Block& block) const {
  if (block.pointer == nullptr) return "";
  return pattern_damage(block.pointer, block.ranges, static_cast<unsigned>(block.id));
}

std::pair<const Block*, std::string> Session::first_damaged() const {
  for (const Block& block : blocks_) {
    if (std::string what = damage(block); !what.empty()) return {&block, what};
  }
  return {nullptr, ""};
}

const Block* Session::overlapping(const void* pointer, std::size_t size, const Block* self) const {
  const auto begin = reinterpret_cast<std::uintptr_t>(pointer);
  const std::uintptr_t end = begin + std::max<std::size_t>(size, 1);
  for (const Block& block : blocks_) {
    if (&block == self || block.pointer == nullptr) continue;
    const auto other = reinterpret_cast<std::uintptr_t>(block.pointer);
    if (other < end && begin < other + std::max<std::size_t>(block.size, 1)) return &block;
  }
  return nullptr;
}

void Session::finish() {
  while (!blocks_.empty()) {
    const Block block = blocks_.back();
    blocks_.pop_back();
    if (block.pointer == nullptr) continue;
    const std::string handler_text = handler_name(block.handler);
    const std::string ctx = ctx_name(block.handler);
    begin_call({str(handler_text, "->free(", ctx, ", ", block.name, ", ", block.size, ")"),
                str(handler_text, "->free(", ctx, ", ", block.name, ", ", block.size, ");"),
                str(handler_text, ".free(", ctx, ", ", block.name, ", ", block.size, ")")});
    run_.free(handler(block.handler), block.pointer, block.size);
    Request request;
    request.kind = CommandKind::free;
    request.function = Function::free;
    request.size = block.size;
    request.block = &block;
    request.handler = block.handler;
    request.text = str("free(", block.name, ", ", block.size, ")");
    property_.freed(*this, request);
  }
  while (!again_.empty()) {
    const Again again = again_.back();
    again_.pop_back();
    if (run_.subject().spec().kind == Nep49SubjectSpec::Kind::module) {
      const std::string name = handler_name(again.number);
      begin_call({str("release ", name, "'s capsule"),
                  str("Py_DECREF(", name, "_capsule);  // its destructor may run"),
                  str("del ", name, "_capsule  # its destructor may run")});
    }
    try {
      run_.subject().release_again(again.token);
    } catch (...) {
      fail(str("giving back what the factory answered failed: ", describe_current_exception()));
    }
  }
  finished_ = true;
}

void Session::begin_call(Call call) {
  if (trace_.on_call) trace_.on_call(call);
  trace_.calls.push_back(std::move(call));
}

void Session::fail(std::string_view what, std::string_view assertion_cpp,
                   std::string_view assertion_python) {
  failed_ = true;
  trace_.assertion_cpp = std::string(assertion_cpp);
  trace_.assertion_python = std::string(assertion_python);
  if (trace_.calls.empty()) run_.fail(what);
  run_.fail(str("at call ", trace_.calls.size(), " (", trace_.calls.back().c, "): ", what));
}

}  // namespace emm::conformance::nep49_engine
