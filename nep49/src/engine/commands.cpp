#include "nep49/src/engine/commands.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "engine/commands.hpp"
#include "nep49/src/engine/contention.hpp"

namespace emm::conformance::nep49_engine {
namespace {

constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kPage = 4096;

// A command's precondition: a sequence where it does not hold is regenerated (RapidCheck's
// RC_PRE, without its printing of the expression, which fails on a null pointer).
void require(bool holds) {
  if (!holds) RC_DISCARD("precondition");
}

// An integer in [min, max) drawn uniformly whatever the generation size (RapidCheck's inRange
// narrows at small sizes). Shrinks towards min.
template <class T>
rc::Gen<T> uniform(T min, T max) {
  return rc::gen::resize(100, rc::gen::inRange<T>(min, max));
}

// Sizes NumPy itself asks for on the paths where it frees with a size of 1 (an empty text
// fromfile, resize(0): 8 bytes; an empty fromiter with a length hint: 80).
const std::vector<std::size_t> kNumpySizes{8, 80};

// A size for a new block: often one asked for lately (a cache's or a size class's next
// customer, or the size a wrong free named), else a fresh one from a byte to several MiB.
std::size_t next_size(const Model& model, const Plan& plan) {
  enum class From { fresh, again, near, numpy, large };
  const bool recent = !model.recent_sizes.empty();
  const From from =
      *rc::gen::weightedOneOf<From>({{6, rc::gen::just(From::fresh)},
                                     {recent ? 3 : 0, rc::gen::just(From::again)},
                                     {recent ? 1 : 0, rc::gen::just(From::near)},
                                     {1, rc::gen::just(From::numpy)},
                                     {plan.large_blocks, rc::gen::just(From::large)}});
  switch (from) {
    case From::large:
      return *rc::gen::weightedOneOf<std::size_t>(
          {{1, rc::gen::map(uniform(18, 24), [](int k) { return std::size_t{1} << k; })},
           {1,
            rc::gen::map(uniform<std::size_t>(64, 2049), [](std::size_t k) { return k * kPage; })},
           {1, uniform<std::size_t>(std::size_t{256} << 10, kLargestRequest + 1)}});
    case From::again:
      // The newest half the time: what was just freed is what a cache hands out next.
      return std::min(*rc::gen::arbitrary<bool>() ? model.recent_sizes.back()
                                                  : *rc::gen::elementOf(model.recent_sizes),
                      kLargestRequest);
    case From::near: {
      const std::size_t size = *rc::gen::elementOf(model.recent_sizes);
      const std::size_t eighths = *rc::gen::elementOf(std::vector<std::size_t>{4, 6, 7, 9, 10, 16});
      return std::clamp<std::size_t>(size * eighths / 8, 1, kLargestRequest);
    }
    case From::numpy:
      return *rc::gen::elementOf(kNumpySizes);
    case From::fresh:
      break;
  }
  return *engine::allocation_sizes(kLargestRequest);
}

// Which handler a new block comes from: the subject's, or one the factory gave again.
std::size_t pick_handler(const Model& model) {
  return *uniform<std::size_t>(0, model.handlers.size());
}

std::string size_text(std::size_t n) {
  if (n == kSizeMax) return "SIZE_MAX";
  if (std::has_single_bit(n) && n >= (std::size_t{1} << 32)) {
    return str("2^", std::bit_width(n) - 1);
  }
  return std::to_string(n);
}
std::string cpp_size(std::size_t n) {
  if (n == kSizeMax) return "SIZE_MAX";
  if (std::has_single_bit(n) && n >= (std::size_t{1} << 32)) {
    return str("std::size_t{1} << ", std::bit_width(n) - 1);
  }
  return std::to_string(n);
}
std::string py_size(std::size_t n) {
  if (n == kSizeMax) return "2**64 - 1";
  if (std::has_single_bit(n) && n >= (std::size_t{1} << 32)) {
    return str("2**", std::bit_width(n) - 1);
  }
  return std::to_string(n);
}

// Every command: the property's step hook after it.
class Nep49Command : public Command {
 public:
  void run(const Model& s0, Session& session) const final {
    execute(s0, session);
    session.property().step(session, kind());
  }
  virtual CommandKind kind() const = 0;

 protected:
  virtual void execute(const Model& s0, Session& session) const = 0;
};

// --- malloc and calloc -----------------------------------------------------------------------

// malloc(size) (calloc: calloc(nelem, elsize)) through handler `number` as block `id`, checked by
// the property and then written: what Allocate does, and what follows a free with a wrong size.
void allocate_block(Session& session, CommandKind kind, int id, int number, std::size_t size,
                    bool zeroed, std::size_t nelem, std::size_t elsize) {
  Block block;
  block.id = id;
  block.name = block_name(id);
  block.size = size;
  block.handler = number;
  block.origin = zeroed ? Origin::calloc : Origin::malloc;
  const std::string h = handler_name(number);
  const std::string ctx = ctx_name(number);
  const std::string args = zeroed ? str(ctx, ", ", nelem, ", ", elsize) : str(ctx, ", ", size);
  const char* function = zeroed ? "calloc" : "malloc";
  const std::string numpy = !zeroed       ? str("np.empty(", size, ", np.uint8)")
                            : elsize == 1 ? str("np.zeros(", size, ", np.uint8)")
                                          : str("np.zeros(", nelem, ", 'V", elsize, "')");
  session.begin_call({str(block.name, " = ", h, "->", function, "(", args, ")"),
                      str("void* ", block.name, " = ", h, "->", function, "(", args, ");"),
                      str(block.name, " = ", h, ".", function, "(", args, ")  # ", numpy),
                      str("fill(", block.name, ", 0, ", size, ", ", block.id, ");"),
                      str("fill(", block.name, ", 0, ", size, ", ", block.id, ")")});
  block.made_at = session.call_number();
  const nep49::Handler& through = session.handler(number);
  block.pointer =
      zeroed ? session.run().calloc(through, nelem, elsize) : session.run().malloc(through, size);
  Request request;
  request.kind = kind;
  request.function = zeroed ? Function::calloc : Function::malloc;
  request.size = size;
  request.nelem = nelem;
  request.elsize = elsize;
  request.handler = number;
  request.text = zeroed ? str("calloc(", nelem, ", ", elsize, ")") : str("malloc(", size, ")");
  request.result = block.name;
  session.property().returned(session, request, block.pointer,
                              block.pointer != nullptr ? &block : nullptr);
  session.blocks().push_back(block);
  session.write(session.blocks().back(), 0);
}

class Allocate final : public Nep49Command {
 public:
  // calloc: calloc(n, 1), NumPy's form; elements: calloc(nelem, elsize) with a product that fits.
  enum class Form { malloc, calloc, elements };

  Allocate(const Model& model, const Plan& plan, Form form)
      : form_(form), handler_(pick_handler(model)), size_(next_size(model, plan)) {
    if (form_ == Form::elements) {
      elsize_ = *rc::gen::elementOf(std::vector<std::size_t>{2, 4, 8, 16, 24});
      nelem_ = std::max<std::size_t>(1, size_ / elsize_);
      size_ = nelem_ * elsize_;
    } else if (form_ == Form::calloc) {
      nelem_ = size_;
      elsize_ = 1;
    }
  }

  void checkPreconditions(const Model& model) const override {
    require(handler_ < model.handlers.size());
  }
  void apply(Model& model) const override {
    model.add_block(size_, model.handlers[handler_],
                    form_ == Form::malloc ? Origin::malloc : Origin::calloc);
  }
  void show(std::ostream& os) const override { os << call_text(); }
  CommandKind kind() const override {
    switch (form_) {
      case Form::malloc:
        return CommandKind::malloc;
      case Form::calloc:
        return CommandKind::calloc;
      case Form::elements:
        return CommandKind::calloc_elements;
    }
    return CommandKind::malloc;
  }

 protected:
  void execute(const Model& s0, Session& session) const override {
    allocate_block(session, kind(), s0.next_block, s0.handlers[handler_], size_,
                   form_ != Form::malloc, nelem_, elsize_);
  }

 private:
  std::string call_text() const {
    return form_ == Form::malloc ? str("malloc(", size_, ")")
                                 : str("calloc(", nelem_, ", ", elsize_, ")");
  }

  Form form_;
  std::size_t handler_;
  std::size_t size_;
  std::size_t nelem_ = 0;
  std::size_t elsize_ = 0;
};

// calloc(nelem, elsize) whose product overflows size_t (and wraps to a few bytes, so that a
// handler that multiplies without checking gets a short block, not gigabytes to clear).
class CallocOverflow final : public Nep49Command {
 public:
  CallocOverflow(const Model& model, const Plan&)
      : handler_(pick_handler(model)),
        pair_(*rc::gen::elementOf(std::vector<std::pair<std::size_t, std::size_t>>{
            {kSizeMax / 2 + 1, 2},
            {kSizeMax, kSizeMax},
            {(std::size_t{1} << 61) + 100, 8},  // 800 after wrapping
            {kSizeMax / 24 + 1, 24},            // 8 after wrapping
            {(std::size_t{1} << 62) + 3, 4}})) {}

  void checkPreconditions(const Model& model) const override {
    require(handler_ < model.handlers.size());
  }
  void apply(Model&) const override {}
  void show(std::ostream& os) const override {
    os << "calloc(" << pair_.first << ", " << pair_.second << ")";
  }
  CommandKind kind() const override { return CommandKind::calloc_overflow; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const int number = s0.handlers[handler_];
    const std::string h = handler_name(number);
    const std::string ctx = ctx_name(number);
    const auto [nelem, elsize] = pair_;
    const std::string args = str(ctx, ", ", nelem, ", ", elsize);
    session.begin_call(
        {str("q", session.call_number() + 1, " = ", h, "->calloc(", args,
             ")  // the product overflows size_t"),
         str("[[maybe_unused]] void* q", session.call_number() + 1, " = ", h, "->calloc(", args,
             "u);  // the product overflows size_t: expected NULL"),
         str("q", session.call_number() + 1, " = ", h, ".calloc(", args,
             ")  # the product overflows size_t: expected NULL")});
    void* result = session.run().calloc(session.handler(number), nelem, elsize);
    Request request;
    request.kind = kind();
    request.function = Function::calloc;
    request.nelem = nelem;
    request.elsize = elsize;
    request.expect_null = true;
    request.handler = number;
    request.text = str("calloc(", nelem, ", ", elsize, ")");
    request.result = str("q", session.call_number());
    session.property().returned(session, request, result, nullptr);
  }

 private:
  std::size_t handler_;
  std::pair<std::size_t, std::size_t> pair_;
};

// --- realloc -------------------------------------------------------------------------------------

enum class Target : std::uint8_t {
  plus_one,
  twice,
  plus_page,
  next_power,
  absolute,
  same,
  to_one,
  half,
  minus_one,
  to_eight
};

std::size_t resized(Target target, std::size_t old, std::size_t absolute) {
  std::size_t size = old;
  switch (target) {
    case Target::plus_one:
      size = old + 1;
      break;
    case Target::twice:
      size = old * 2;
      break;
    case Target::plus_page:
      size = old + kPage;
      break;
    case Target::next_power:
      size = std::bit_ceil(old + 1);
      break;
    case Target::absolute:
      size = absolute;
      break;
    case Target::same:
      break;
    case Target::to_one:
      size = 1;
      break;
    case Target::half:
      size = std::max<std::size_t>(1, old / 2);
      break;
    case Target::minus_one:
      size = std::max<std::size_t>(1, old - 1);
      break;
    case Target::to_eight:
      size = 8;  // NumPy's resize(0) keeps one element
      break;
  }
  return std::clamp<std::size_t>(size, 1, 2 * kLargestRequest);
}

class Realloc final : public Nep49Command {
 public:
  Realloc(const Model& model, const Plan& plan)
      : index_(*uniform<std::size_t>(0, model.blocks.size())),
        target_(*rc::gen::weightedOneOf<Target>({{2, rc::gen::just(Target::plus_one)},
                                                 {3, rc::gen::just(Target::twice)},
                                                 {2, rc::gen::just(Target::plus_page)},
                                                 {2, rc::gen::just(Target::next_power)},
                                                 {3, rc::gen::just(Target::absolute)},
                                                 {1, rc::gen::just(Target::same)},
                                                 {1, rc::gen::just(Target::to_one)},
                                                 {3, rc::gen::just(Target::half)},
                                                 {1, rc::gen::just(Target::minus_one)},
                                                 {2, rc::gen::just(Target::to_eight)}})),
        absolute_(next_size(model, plan)) {}

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.blocks.size());
  }
  void apply(Model& model) const override {
    ModelBlock& block = model.blocks[index_];
    const std::size_t size = resized(target_, block.size, absolute_);
    block.before_realloc = block.size;
    block.size = size;
    block.origin = Origin::realloc;
    model.asked_for(size);
  }
  void show(std::ostream& os) const override { os << "realloc of block " << index_; }
  CommandKind kind() const override { return CommandKind::realloc; }

 protected:
  void execute(const Model&, Session& session) const override {
    Block& block = session.blocks()[index_];
    const std::size_t size = resized(target_, block.size, absolute_);
    const std::string h = handler_name(block.handler);
    const std::string ctx = ctx_name(block.handler);
    const std::string fill = size > block.size ? str("fill(", block.name, ", ", block.size, ", ",
                                                     size, ", ", block.id, ")")
                                               : "";
    session.begin_call(
        {str(block.name, " = ", h, "->realloc(", ctx, ", ", block.name, ", ", size, ")  // ",
             block.size, " -> ", size, " bytes"),
         str(block.name, " = ", h, "->realloc(", ctx, ", ", block.name, ", ", size, ");"),
         str(block.name, " = ", h, ".realloc(", ctx, ", ", block.name, ", ", size, ")  # a.resize(",
             size, "), the text reader's growth"),
         fill.empty() ? "" : fill + ";", fill});
    if (block.pointer == nullptr) {
      // The handler returned NULL for it before and the clause let that pass: NumPy would have
      // raised MemoryError, so there is nothing to resize.
      block.size = size;
      return;
    }
    const Block before = block;
    void* result = session.run().realloc(session.handler(block.handler), block.pointer, size);
    Block after = before;
    after.pointer = result;
    after.size = size;
    after.before_realloc = before.size;
    after.origin = Origin::realloc;
    after.ranges = clipped(before.ranges, size);
    after.made_at = session.call_number();
    Request request;
    request.kind = kind();
    request.function = Function::realloc;
    request.size = size;
    request.block = &before;
    request.handler = block.handler;
    request.text = str("realloc(", block.name, ", ", size, ")");
    request.result = block.name;
    session.property().returned(session, request, result, result != nullptr ? &after : nullptr);
    Block& now = session.blocks()[index_];  // the hook may have made calls of its own
    if (result == nullptr) {
      // The old block stays valid (C's realloc) and the clause let the NULL pass: keep it, with
      // only the bytes both sizes cover.
      now.size = std::min(now.size, size);
      now.ranges = clipped(now.ranges, now.size);
      return;
    }
    now = after;
    if (size > before.size) session.write(now, before.size);
  }

 private:
  std::size_t index_;
  Target target_;
  std::size_t absolute_;
};

// realloc(p, n) for more than any machine has: NULL, and p untouched (NEP49-9).
class ReallocFail final : public Nep49Command {
 public:
  ReallocFail(const Model& model, const Plan&)
      : index_(*uniform<std::size_t>(0, model.blocks.size())),
        size_(*rc::gen::elementOf(std::vector<std::size_t>{
            std::size_t{1} << 62, std::size_t{1} << 56, std::size_t{1} << 50})) {}

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.blocks.size());
  }
  void apply(Model&) const override {}
  void show(std::ostream& os) const override { os << "realloc of block " << index_ << " to fail"; }
  CommandKind kind() const override { return CommandKind::realloc_fail; }

 protected:
  void execute(const Model&, Session& session) const override {
    Block& block = session.blocks()[index_];
    const std::string h = handler_name(block.handler);
    const std::string ctx = ctx_name(block.handler);
    const std::string q = str("q", session.call_number() + 1);
    session.begin_call(
        {str(q, " = ", h, "->realloc(", ctx, ", ", block.name, ", (size_t)1 << ",
             std::bit_width(size_) - 1, ")  // expected NULL, ", block.name, " kept"),
         str("[[maybe_unused]] void* ", q, " = ", h, "->realloc(", ctx, ", ", block.name, ", ",
             cpp_size(size_), ");  // expected NULL, ", block.name, " kept"),
         str(q, " = ", h, ".realloc(", ctx, ", ", block.name, ", ", py_size(size_),
             ")  # expected None, ", block.name, " kept")});
    if (block.pointer == nullptr) return;
    const Block before = block;
    void* result = session.run().realloc(session.handler(block.handler), block.pointer, size_);
    Request request;
    request.kind = kind();
    request.function = Function::realloc;
    request.size = size_;
    request.block = &before;
    request.expect_null = true;
    request.handler = block.handler;
    request.text = str("realloc(", block.name, ", ", size_text(size_), ")");
    request.result = q;
    session.property().returned(session, request, result, nullptr);
    // A handler that "succeeded" moved the block; its first bytes are the block now.
    if (result != nullptr) session.blocks()[index_].pointer = result;
  }

 private:
  std::size_t index_;
  std::size_t size_;
};

// --- free ----------------------------------------------------------------------------------------

// The size passed to free: the block's own, or one of the smaller sizes NumPy passes on its
// known mismatch paths (1 for a block of 8 or 80; the size before a realloc that grew it) and
// other smaller ones. Never a larger one: NumPy passes none (research nep49 §2.4), and its own
// default handler (1.24) files a freed block under the size it is given, so a larger size would
// hand out a short block later: no handler can be held to more than NumPy's own.
enum class Hint : std::uint8_t { exact, one, before_realloc, half, minus_one };

std::size_t hint_size(Hint hint, std::size_t size, std::size_t before_realloc) {
  switch (hint) {
    case Hint::exact:
      return size;
    case Hint::one:
      return 1;
    case Hint::before_realloc:
      return before_realloc != 0 && before_realloc < size ? before_realloc : size;
    case Hint::half:
      return std::max<std::size_t>(1, size / 2);
    case Hint::minus_one:
      return std::max<std::size_t>(1, size - 1);
  }
  return size;
}

const char* hint_reason(Hint hint) {
  switch (hint) {
    case Hint::exact:
      return "";
    case Hint::one:
      return "NumPy's empty text fromfile, resize(0) and empty fromiter pass 1";
    case Hint::before_realloc:
      return "the size before the realloc that grew it";
    case Hint::half:
    case Hint::minus_one:
      return "smaller than the block";
  }
  return "";
}

// A free with a wrong size is followed, most of the time, by the reuse it could spoil: a request
// of the freed block's size again, through the same handler (what a cache hands the block to).
enum class Reuse : std::uint8_t { none, malloc, calloc };

class Free final : public Nep49Command {
 public:
  Free(const Model& model, const Plan& plan, bool wrong)
      : index_(wrong && *rc::gen::arbitrary<bool>()
                   // NumPy's wrong sizes come right after the block was made (an empty fromiter,
                   // resize(0)): the newest block half the time.
                   ? model.blocks.size() - 1
                   : *uniform<std::size_t>(0, model.blocks.size())),
        hint_(wrong ? *rc::gen::weightedOneOf<Hint>({{4, rc::gen::just(Hint::one)},
                                                     {2, rc::gen::just(Hint::before_realloc)},
                                                     {2, rc::gen::just(Hint::half)},
                                                     {1, rc::gen::just(Hint::minus_one)}})
                    : Hint::exact),
        reuse_(!wrong ? Reuse::none
                      : *rc::gen::weightedOneOf<Reuse>(
                            {{1, rc::gen::just(Reuse::none)},
                             {2, rc::gen::just(Reuse::malloc)},
                             {plan.has_calloc ? 3 : 0, rc::gen::just(Reuse::calloc)}})) {}

  void checkPreconditions(const Model& model) const override {
    require(index_ < model.blocks.size());
    // The size before a realloc only where one grew the block.
    if (hint_ == Hint::before_realloc) {
      const ModelBlock& block = model.blocks[index_];
      require(block.before_realloc != 0 && block.before_realloc < block.size);
    }
  }
  void apply(Model& model) const override {
    const ModelBlock block = model.blocks[index_];
    model.blocks.erase(model.blocks.begin() + static_cast<std::ptrdiff_t>(index_));
    // What comes next asks for these sizes again (the block's own newest): the reuse a wrong
    // size would spoil.
    const std::size_t hint = hint_size(hint_, block.size, block.before_realloc);
    if (hint != block.size) model.asked_for(std::min(hint, kLargestRequest));
    model.asked_for(block.size);
    if (reuse_ != Reuse::none) {
      model.add_block(std::min(block.size, kLargestRequest), block.handler,
                      reuse_ == Reuse::calloc ? Origin::calloc : Origin::malloc);
    }
  }
  void show(std::ostream& os) const override { os << "free of block " << index_; }
  CommandKind kind() const override {
    return hint_ == Hint::exact ? CommandKind::free : CommandKind::free_hint;
  }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const Block block = session.blocks()[index_];
    session.blocks().erase(session.blocks().begin() + static_cast<std::ptrdiff_t>(index_));
    const std::size_t hint = hint_size(hint_, block.size, block.before_realloc);
    const std::string h = handler_name(block.handler);
    const std::string ctx = ctx_name(block.handler);
    const std::string why = hint == block.size ? std::string()
                                               : str("  // ", block.name, " has ", block.size,
                                                     " bytes: ", hint_reason(hint_));
    session.begin_call({str(h, "->free(", ctx, ", ", block.name, ", ", hint, ")", why),
                        str(h, "->free(", ctx, ", ", block.name, ", ", hint, ");", why),
                        str(h, ".free(", ctx, ", ", block.name, ", ", hint, ")",
                            why.empty() ? "" : "  # " + why.substr(5))});
    if (block.pointer == nullptr) {  // NumPy never got it
      reuse(s0, session, block);
      return;
    }
    session.run().free(session.handler(block.handler), block.pointer, hint);
    Request request;
    request.kind = kind();
    request.function = Function::free;
    request.size = hint;
    request.block = &block;
    request.handler = block.handler;
    request.text = str("free(", block.name, ", ", hint, ")");
    session.property().freed(session, request);
    reuse(s0, session, block);
  }

 private:
  void reuse(const Model& s0, Session& session, const Block& freed) const {
    if (reuse_ == Reuse::none) return;
    const std::size_t size = std::min(freed.size, kLargestRequest);
    const bool zeroed = reuse_ == Reuse::calloc;
    allocate_block(session, zeroed ? CommandKind::calloc : CommandKind::malloc, s0.next_block,
                   freed.handler, size, zeroed, zeroed ? size : 0, zeroed ? 1 : 0);
  }

  std::size_t index_;
  Hint hint_;
  Reuse reuse_;
};

class FreeNull final : public Nep49Command {
 public:
  FreeNull(const Model& model, const Plan&)
      : handler_(pick_handler(model)),
        size_(*rc::gen::weightedOneOf<std::size_t>(
            {{2, rc::gen::just(std::size_t{0})},
             {2, rc::gen::just(std::size_t{1})},
             {2, rc::gen::just(std::size_t{800})},  // argsort's index buffer
             {3, engine::allocation_sizes(kLargestRequest)}})) {}

  void checkPreconditions(const Model& model) const override {
    require(handler_ < model.handlers.size());
  }
  void apply(Model&) const override {}
  void show(std::ostream& os) const override { os << "free(NULL, " << size_ << ")"; }
  CommandKind kind() const override { return CommandKind::free_null; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const int number = s0.handlers[handler_];
    const std::string h = handler_name(number);
    const std::string ctx = ctx_name(number);
    session.begin_call({str(h, "->free(", ctx, ", NULL, ", size_, ")"),
                        str(h, "->free(", ctx, ", nullptr, ", size_, ");"),
                        str(h, ".free(", ctx, ", None, ", size_, ")")});
    session.run().free(session.handler(number), nullptr, size_);
    Request request;
    request.kind = kind();
    request.function = Function::free;
    request.size = size_;
    request.handler = number;
    request.text = str("free(NULL, ", size_, ")");
    session.property().freed(session, request);
  }

 private:
  std::size_t handler_;
  std::size_t size_;
};

// --- requests no machine can satisfy -----------------------------------------------------------

class Impossible final : public Nep49Command {
 public:
  enum class What : std::uint8_t {
    malloc_max,
    malloc_half,
    malloc_2_62,
    calloc_max,
    calloc_2_62,
    realloc_max,
    realloc_2_62
  };

  Impossible(const Model& model, const Plan& plan)
      : handler_(pick_handler(model)),
        what_(*rc::gen::elementOf(
            plan.has_realloc && !model.blocks.empty()
                ? std::vector<What>{What::malloc_max, What::malloc_half, What::malloc_2_62,
                                    What::calloc_max, What::calloc_2_62, What::realloc_max,
                                    What::realloc_2_62}
                : std::vector<What>{What::malloc_max, What::malloc_half, What::malloc_2_62,
                                    What::calloc_max, What::calloc_2_62})),
        index_(*uniform<std::size_t>(0, std::max<std::size_t>(model.blocks.size(), 1))),
        has_calloc_(plan.has_calloc) {}

  void checkPreconditions(const Model& model) const override {
    require(handler_ < model.handlers.size());
    if (on_block()) require(index_ < model.blocks.size());
  }
  void apply(Model&) const override {}
  void show(std::ostream& os) const override { os << "impossible request"; }
  CommandKind kind() const override { return CommandKind::impossible; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    What what = what_;
    if (!has_calloc_ && (what == What::calloc_max || what == What::calloc_2_62)) {
      what = What::malloc_max;
    }
    const Block* block = on_block() ? &session.blocks()[index_] : nullptr;
    const int number = block != nullptr ? block->handler : s0.handlers[handler_];
    const std::string h = handler_name(number);
    const std::string ctx = ctx_name(number);
    const std::string q = str("q", session.call_number() + 1);
    Request request;
    request.kind = kind();
    request.expect_null = true;
    request.handler = number;
    request.block = block;
    std::string c_args;
    std::string cpp_args;
    std::string py_args;
    const char* function = "malloc";
    std::size_t size = 0;
    std::size_t nelem = 0;
    switch (what) {
      case What::malloc_max:
      case What::malloc_half:
      case What::malloc_2_62:
        size = what == What::malloc_max    ? kSizeMax
               : what == What::malloc_half ? kSizeMax / 2
                                           : std::size_t{1} << 62;
        request.function = Function::malloc;
        c_args = size == kSizeMax / 2 ? "SIZE_MAX / 2" : size_text(size);
        cpp_args = size == kSizeMax / 2 ? "SIZE_MAX / 2" : cpp_size(size);
        py_args = size == kSizeMax / 2 ? "2**63 - 1" : py_size(size);
        break;
      case What::calloc_max:
      case What::calloc_2_62:
        function = "calloc";
        request.function = Function::calloc;
        nelem = what == What::calloc_max ? kSizeMax : std::size_t{1} << 62;
        size = what == What::calloc_max ? 2 : 1;
        c_args = str(size_text(nelem), ", ", size);
        cpp_args = str(cpp_size(nelem), ", ", size);
        py_args = str(py_size(nelem), ", ", size);
        break;
      case What::realloc_max:
      case What::realloc_2_62:
        function = "realloc";
        request.function = Function::realloc;
        size = what == What::realloc_max ? kSizeMax : std::size_t{1} << 62;
        c_args = str(block->name, ", ", size_text(size));
        cpp_args = str(block->name, ", ", cpp_size(size));
        py_args = str(block->name, ", ", py_size(size));
        break;
    }
    request.size = size;
    request.nelem = nelem;
    request.elsize = nelem != 0 ? size : 0;
    request.text = str(function, "(", c_args, ")");
    request.result = q;
    session.begin_call(
        {str(q, " = ", h, "->", function, "(", ctx, ", ", c_args, ")  // expected NULL"),
         str("[[maybe_unused]] void* ", q, " = ", h, "->", function, "(", ctx, ", ", cpp_args,
             ");  // expected NULL"),
         str(q, " = ", h, ".", function, "(", ctx, ", ", py_args, ")  # expected None")});
    const nep49::Handler& through = session.handler(number);
    void* result = nullptr;
    if (request.function == Function::malloc) {
      result = session.run().malloc(through, size);
    } else if (request.function == Function::calloc) {
      result = session.run().calloc(through, nelem, size);
    } else if (block->pointer != nullptr) {
      const Block before = *block;
      request.block = &before;
      result = session.run().realloc(through, block->pointer, size);
      session.property().returned(session, request, result, nullptr);
      if (result != nullptr) session.blocks()[index_].pointer = result;
      return;
    }
    session.property().returned(session, request, result, nullptr);
  }

 private:
  bool on_block() const { return what_ == What::realloc_max || what_ == What::realloc_2_62; }

  std::size_t handler_;
  What what_;
  std::size_t index_;
  bool has_calloc_;
};

// --- the handler's factory, asked again ----------------------------------------------------------

class AskAgain final : public Nep49Command {
 public:
  AskAgain(const Model&, const Plan& plan)
      : keep_(*rc::gen::weightedOneOf<bool>({{3, rc::gen::just(true)}, {1, rc::gen::just(false)}})),
        module_(plan.module) {}

  void apply(Model& model) const override {
    model.asked += 1;
    if (keep_) model.handlers.push_back(model.asked);
  }
  void show(std::ostream& os) const override { os << "ask again" << (keep_ ? "" : " and drop"); }
  CommandKind kind() const override { return CommandKind::ask_again; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const int number = s0.asked + 1;
    const std::string h = handler_name(number);
    const std::string ctx = ctx_name(number);
    const std::string factory = session.run().subject().factory_call();
    Call call;
    if (!module_) {
      call.c = keep_ ? str(h, " = ", factory, "  // the factory asked again")
                     : str(factory, "  // the factory asked again; the answer is not used");
      call.cpp = keep_ ? str("auto* ", h, " = &", factory,
                             "->allocator;  // asked again\n[[maybe_unused]] void* ", ctx, " = ", h,
                             "->ctx;")
                       : str(factory, ";  // asked again; the answer is not used");
      call.python =
          keep_ ? str(h, " = handler_of(lib.", factory, ")  # asked again\n", ctx, " = ", h, ".ctx")
                : str("handler_of(lib.", factory, ")  # asked again, then dropped");
    } else {
      call.c = keep_ ? str(h, " = ", factory, "  // a second capsule")
                     : str(factory, "  // a second capsule, dropped at once");
      call.cpp = keep_ ? str("PyObject* ", h, "_capsule = ", factory_cpp(session), ";\nauto* ", h,
                             " = allocator_of(", h, "_capsule);\n[[maybe_unused]] void* ", ctx,
                             " = ", h, "->ctx;")
                       : str("Py_DECREF(", factory_cpp(session), ");  // asked again, dropped");
      call.python = keep_ ? str(h, "_capsule = ", factory, "\n", h, " = handler_of(", h,
                                "_capsule)\n", ctx, " = ", h, ".ctx")
                          : str(factory, "  # asked again, dropped at once");
    }
    session.begin_call(std::move(call));
    session.ask_again(number, keep_);
    session.property().asked_again(session, number, keep_);
  }

 private:
  static std::string factory_cpp(Session& session) {
    const Nep49SubjectSpec& spec = session.run().subject().spec();
    const std::string read = str("PyObject_GetAttrString(PyImport_ImportModule(\"", spec.location,
                                 "\"), \"", spec.symbol, "\")");
    return session.run().subject().factory_call().ends_with("()")
               ? str("PyObject_CallNoArgs(", read, ")")
               : read;
  }

  bool keep_;
  bool module_;
};

// --- many threads at once ------------------------------------------------------------------------

class Contention final : public Nep49Command {
 public:
  Contention(const Model& model, const Plan&)
      : handler_(pick_handler(model)),
        threads_(*uniform(4, 17)),
        rounds_(*uniform(150, 401)),
        seed_(*uniform<std::uint32_t>(1, 1u << 30)),
        sizes_(*rc::gen::element(ContentionSizes::classes, ContentionSizes::small,
                                 ContentionSizes::mixed)),
        handoff_(*rc::gen::arbitrary<bool>()) {}

  void checkPreconditions(const Model& model) const override {
    require(handler_ < model.handlers.size());
  }
  void apply(Model&) const override {}
  void show(std::ostream& os) const override { os << threads_ << " threads at once"; }
  CommandKind kind() const override { return CommandKind::contention; }

 protected:
  void execute(const Model& s0, Session& session) const override {
    const int number = s0.handlers[handler_];
    const std::string h = handler_name(number);
    session.trace().contention = true;
    session.begin_call(
        {str("contend(", h, ", ", threads_, " threads, ", rounds_, " operations each, seed ", seed_,
             ", sizes ", to_int(sizes_), handoff_ ? ", handoff" : "", ")  // ",
             realloc_threads(threads_), " realloc without the GIL, ",
             threads_ - realloc_threads(threads_),
             " resize under it, malloc/calloc/free one at a time under it, all at once; sizes ",
             to_string(sizes_), handoff_ ? "; every new block passed to another thread" : ""),
         str("// A race: the workload runs again until it fails, at most 100 times.\n",
             "std::string failure;\nfor (int i = 0; i < 100 && failure.empty(); ++i) {\n",
             "  failure = contend(", h, ", ", threads_, ", ", rounds_, ", ", seed_, "u, ",
             to_int(sizes_), ", ", handoff_ ? "true" : "false", ");\n}\nEXPECT_EQ(failure, \"\");"),
         str("# A race: the workload runs again until it fails, at most 100 times.\n",
             "failure = ''\nfor _ in range(100):\n", "    failure = contend(", h, ", ", threads_,
             ", ", rounds_, ", ", seed_, ", ", to_int(sizes_), ", ", handoff_ ? "True" : "False",
             ")\n    if failure:\n        break\nassert failure == ''")});
    const ContentionReport report =
        contend(session, {threads_, rounds_, seed_, number, sizes_, handoff_});
    session.tally().contention_rounds += 1;
    session.tally().contention_calls += report.calls;
    session.property().contended(session, report);
  }

 private:
  std::size_t handler_;
  int threads_;
  int rounds_;
  std::uint32_t seed_;
  ContentionSizes sizes_;
  bool handoff_;
};

// --- the generator -------------------------------------------------------------------------------

template <class C, class... Extra>
rc::Gen<CommandPtr> make(const Model& model, const Plan& plan, Extra... extra) {
  return rc::gen::exec([model, plan, extra...]() -> CommandPtr {
    return std::make_shared<const C>(model, plan, extra...);
  });
}

// Whether a command of `kind` can be made for `model` at all.
bool feasible(CommandKind kind, const Model& model, const Plan& plan) {
  switch (kind) {
    case CommandKind::calloc:
    case CommandKind::calloc_elements:
    case CommandKind::calloc_overflow:
      return plan.has_calloc;
    case CommandKind::realloc:
    case CommandKind::realloc_fail:
      return plan.has_realloc && !model.blocks.empty();
    case CommandKind::free:
    case CommandKind::free_hint:
      return !model.blocks.empty();
    case CommandKind::contention:
      return plan.has_realloc && plan.has_calloc;
    default:
      return true;
  }
}

rc::Gen<CommandPtr> generator_for(CommandKind kind, const Model& model, const Plan& plan) {
  switch (kind) {
    case CommandKind::malloc:
      return make<Allocate>(model, plan, Allocate::Form::malloc);
    case CommandKind::calloc:
      return make<Allocate>(model, plan, Allocate::Form::calloc);
    case CommandKind::calloc_elements:
      return make<Allocate>(model, plan, Allocate::Form::elements);
    case CommandKind::calloc_overflow:
      return make<CallocOverflow>(model, plan);
    case CommandKind::realloc:
      return make<Realloc>(model, plan);
    case CommandKind::realloc_fail:
      return make<ReallocFail>(model, plan);
    case CommandKind::free:
      return make<Free>(model, plan, false);
    case CommandKind::free_hint:
      return make<Free>(model, plan, true);
    case CommandKind::free_null:
      return make<FreeNull>(model, plan);
    case CommandKind::impossible:
      return make<Impossible>(model, plan);
    case CommandKind::ask_again:
      return make<AskAgain>(model, plan);
    case CommandKind::contention:
      return make<Contention>(model, plan);
  }
  return make<Allocate>(model, plan, Allocate::Form::malloc);
}

}  // namespace

rc::Gen<CommandPtr> make_command_generator(const Model& model, const std::vector<Weighted>& mix,
                                           const Plan& plan) {
  std::vector<std::pair<CommandKind, int>> possible;
  int total = 0;
  for (const Weighted& entry : mix) {
    if (entry.weight <= 0 || !feasible(entry.kind, model, plan)) continue;
    possible.emplace_back(entry.kind, entry.weight);
    total += entry.weight;
  }
  if (possible.empty()) return make<Allocate>(model, plan, Allocate::Form::malloc);
  // The choice shrinks towards the first command of the mix (properties list the simplest
  // first), then the command's own arguments shrink.
  return rc::gen::mapcat(uniform(0, total), [possible, model, plan](int pick) {
    for (const auto& [kind, weight] : possible) {
      if (pick < weight) return generator_for(kind, model, plan);
      pick -= weight;
    }
    return generator_for(possible.front().first, model, plan);
  });
}

}  // namespace emm::conformance::nep49_engine
