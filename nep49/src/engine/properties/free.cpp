// NEP49-10 and 11 as properties of sequences: free(NULL, n) and free with the sizes NumPy gets
// wrong (1 for a block of 8 or 80, the size before a realloc that grew the block, other smaller
// ones, for small and large blocks), each followed by the reuse it could spoil: later blocks
// must not overlap live ones, live blocks must keep their bytes, calloc must still clear, and
// nothing may be refused that memory allows. Sizes larger than the block are not asked: NumPy
// passes none, and its own default handler would hand out a short block after one.
#include "nep49/src/engine/properties/expectations.hpp"
#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine::properties {
namespace {

// The call of the sequence a property's judgement starts from ("" until it came).
struct Since {
  std::string call;
};

// After `since`: what a request that memory allows must give.
void expect_block_after(Session& session, const Request& request, void* result, const Block* made,
                        const std::string& since) {
  if (since.empty() || request.expect_null || request.function == Function::free) return;
  if (result == nullptr) {
    session.fail(str("after ", since, ", ", request.text,
                     " returned NULL with memory to spare; expected the handler to keep working "
                     "(the free size is NumPy's best guess and must not decide what is accounted "
                     "or released)"),
                 str("ASSERT_NE(", request.result, ", nullptr);"), str("assert ", request.result));
  }
  if (made == nullptr) return;
  if (const Block* other = session.overlapping(made->pointer, made->size)) {
    if (request.block == nullptr || other->id != request.block->id) {
      session.fail(str("after ", since, ", ", request.text, " = [", made->pointer, ", +",
                       made->size, ") overlaps the live ", describe(*other), " at ", other->pointer,
                       "; the size passed to free must not decide how much is released"),
                   str("EXPECT_FALSE(overlap(", made->name, ", ", made->size, ", ", other->name,
                       ", ", other->size, "));"),
                   str("assert not overlap(", made->name, ", ", made->size, ", ", other->name, ", ",
                       other->size, ")"));
    }
  }
  if (request.function == Function::calloc) {
    expect_zeroed(session, request, *made,
                  str("after ", since,
                      " (expected 0: calloc must clear the whole block, whatever size its "
                      "previous owner was freed with)"));
  }
}

// NEP49-10: free(ctx, NULL, n) is a no-op for any n: it returns, and the handler works on as
// before (argsort and argpartition free a buffer they never allocated).
class FreeNull final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::free_null, 4}, {CommandKind::malloc, 3}, {CommandKind::free, 2}};
  }
  void freed(Session& session, const Request& request) const override {
    if (request.kind == CommandKind::free_null && session.state<Since>().call.empty()) {
      session.state<Since>().call = request.text;
    }
  }
  void returned(Session& session, const Request& request, void* result,
                const Block* made) const override {
    expect_block_after(session, request, result, made, session.state<Since>().call);
  }
  void step(Session& session, CommandKind) const override {
    if (const std::string& since = session.state<Since>().call; !since.empty()) {
      expect_all_intact(session, str("after ", since));
    }
  }
};

// NEP49-11: free with a size other than the block's is tolerated: no crash, and no later
// allocation corrupted (overlapping a live block, not cleared by calloc, refused).
class FreeWrongSize final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::malloc, 4},
            {CommandKind::free_hint, 5},
            {CommandKind::realloc, 2},
            {CommandKind::calloc, 2},
            {CommandKind::free, 1}};
  }
  // Handlers keep large blocks apart (page mappings, madvise) and small ones in size classes;
  // a wrong size spoils each its own way.
  int large_blocks() const override { return 4; }
  void freed(Session& session, const Request& request) const override {
    if (request.kind == CommandKind::free_hint && session.state<Since>().call.empty()) {
      session.state<Since>().call =
          str(request.text, " of a block of ", request.block->size, " bytes");
    }
  }
  void returned(Session& session, const Request& request, void* result,
                const Block* made) const override {
    expect_block_after(session, request, result, made, session.state<Since>().call);
  }
  void step(Session& session, CommandKind) const override {
    if (const std::string& since = session.state<Since>().call; !since.empty()) {
      expect_all_intact(session, str("after ", since));
    }
  }
};

}  // namespace

const Property& nep49_10() { return the<FreeNull>(); }
const Property& nep49_11() { return the<FreeWrongSize>(); }

}  // namespace emm::conformance::nep49_engine::properties
