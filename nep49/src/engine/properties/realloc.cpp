// NEP49-8 and 9 as properties of sequences: realloc keeps the bytes both sizes cover, growing,
// shrinking and to the same size, through any handler the factory gave; a realloc that cannot
// be satisfied returns NULL and leaves the block as it was, readable, not handed out again.
#include <algorithm>
#include <cstdint>

#include "nep49/src/engine/properties/expectations.hpp"
#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine::properties {
namespace {

// NEP49-8: realloc(p, n) keeps the first min(old, n) bytes, returns a block that shares no byte
// with another live one, and leaves the other live blocks as they were.
class ReallocPreserves final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::malloc, 3},
            {CommandKind::realloc, 6},
            {CommandKind::free, 2},
            {CommandKind::ask_again, 1}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block* made) const override {
    if (request.kind != CommandKind::realloc) return;
    expect_not_null(session, request, result);
    if (made == nullptr) return;
    if (std::string damage =
            pattern_damage(made->pointer, made->ranges, static_cast<unsigned>(made->id));
        !damage.empty()) {
      const std::size_t kept = std::min(request.block->size, made->size);
      session.fail(str("realloc of ", describe(*request.block), " from ", request.block->size,
                       " to ", made->size, " bytes = ", made->pointer, ": ", damage,
                       "; expected the first ", kept, " bytes kept"),
                   str("EXPECT_EQ(first_difference(", made->name, ", 0, ", kept, ", ", made->id,
                       "), ", kept, "u);"),
                   str("assert first_difference(", made->name, ", 0, ", kept, ", ", made->id,
                       ") == ", kept));
    }
    expect_no_overlap(session, request, *made);
  }
  void step(Session& session, CommandKind kind) const override {
    if (kind == CommandKind::realloc || kind == CommandKind::ask_again) {
      expect_all_intact(session, kind == CommandKind::realloc
                                     ? "after a realloc of another block"
                                     : "after the factory was asked again");
    }
  }
};

// What a probe allocation showed about a block a failed realloc should have kept.
struct Probe {
  int calls = 0;
};

// NEP49-9: realloc(p, n) for more than any machine has returns NULL and leaves p as it was: its
// bytes intact, its memory not handed out again, and freeable later (the sequence frees it).
class ReallocFailureKeepsBlock final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::malloc, 3},
            {CommandKind::realloc_fail, 4},
            {CommandKind::free, 2},
            {CommandKind::realloc, 1}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block*) const override {
    if (request.kind != CommandKind::realloc_fail || request.block == nullptr ||
        request.block->pointer == nullptr) {
      return;
    }
    expect_null(session, request, result,
                "no machine has that many bytes (is the size truncated?), and NumPy keeps using "
                "the old block after a NULL");
    const Block& block = *request.block;
    if (std::string damage = session.damage(block); !damage.empty()) {
      session.fail(str("after realloc(", block.name, ", ...) returned NULL, ", describe(block),
                       " at ", block.pointer, " changed: ", damage,
                       "; NULL from realloc means the old block is still valid and untouched "
                       "(NumPy keeps using it), so it must not be freed or moved"),
                   str("EXPECT_EQ(first_difference(", block.name, ", 0, ", block.size, ", ",
                       block.id, "), ", block.size, "u);"),
                   str("assert first_difference(", block.name, ", 0, ", block.size, ", ", block.id,
                       ") == ", block.size));
    }
    // Released behind NumPy's back, the block's memory comes back to the next request of its
    // size (every allocator reuses a block it was just given back).
    const nep49::Handler& handler = session.handler(block.handler);
    const std::string h = handler_name(block.handler);
    const std::string ctx = ctx_name(block.handler);
    const std::string name = str("probe", ++session.state<Probe>().calls);
    session.begin_call({str(name, " = ", h, "->malloc(", ctx, ", ", block.size, ")"),
                        str("void* ", name, " = ", h, "->malloc(", ctx, ", ", block.size, ");"),
                        str(name, " = ", h, ".malloc(", ctx, ", ", block.size, ")")});
    void* probe = session.run().malloc(handler, block.size);
    if (probe == nullptr) return;  // NULL here is NEP49-5's to judge
    const auto begin = reinterpret_cast<std::uintptr_t>(probe);
    const auto kept = reinterpret_cast<std::uintptr_t>(block.pointer);
    if (begin < kept + block.size && kept < begin + block.size) {
      session.fail(str("after realloc(", block.name, ", ...) returned NULL, malloc(", block.size,
                       ") returned ", probe, ", memory of the live ", describe(block),
                       ": the failed realloc released the block NumPy still uses"),
                   str("EXPECT_FALSE(overlap(", name, ", ", block.size, ", ", block.name, ", ",
                       block.size, "));"),
                   str("assert not overlap(", name, ", ", block.size, ", ", block.name, ", ",
                       block.size, ")"));
    }
    session.begin_call({str(h, "->free(", ctx, ", ", name, ", ", block.size, ")"),
                        str(h, "->free(", ctx, ", ", name, ", ", block.size, ");"),
                        str(h, ".free(", ctx, ", ", name, ", ", block.size, ")")});
    session.run().free(handler, probe, block.size);
  }
};

}  // namespace

const Property& nep49_8() { return the<ReallocPreserves>(); }
const Property& nep49_9() { return the<ReallocFailureKeepsBlock>(); }

}  // namespace emm::conformance::nep49_engine::properties
