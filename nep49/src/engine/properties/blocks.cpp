// NEP49-5, 6, 7 and 12 as properties of sequences: distinct blocks that keep their bytes, also
// after the factory was asked again; zeroed calloc, also for reused blocks; calloc's overflow;
// alignment with many small blocks live.
#include <cstdint>

#include "nep49/src/engine/properties/expectations.hpp"
#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine::properties {
namespace {

// NEP49-5: malloc(n), from a byte to several MiB, returns a block that shares no byte with a
// live one, writable and readable over its whole size, that keeps its bytes while it lives
// whatever was allocated and freed meanwhile, and whatever the handler's factory was asked:
// a program may import a handler's module or call its factory more than once, and the handler
// it got first must keep working (NEP 49 "Related Work": handlers are in practice immortal).
class Malloc final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::malloc, 6}, {CommandKind::free, 3}, {CommandKind::ask_again, 1}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block* made) const override {
    if (request.function != Function::malloc) return;
    expect_not_null(session, request, result);
    if (made != nullptr) expect_no_overlap(session, request, *made);
  }
  void step(Session& session, CommandKind kind) const override {
    expect_all_intact(session,
                      kind == CommandKind::ask_again ? "after the factory was asked again" : "");
  }
};

// NEP49-6: calloc(n, 1) (and calloc(nelem, elsize)) returns zeroed memory, also when it reuses
// a block that was written and freed.
class CallocZeroed final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::calloc, 5},
            {CommandKind::malloc, 3},
            {CommandKind::free, 3},
            {CommandKind::calloc_elements, 2}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block* made) const override {
    if (request.function != Function::calloc || request.expect_null) return;
    expect_not_null(session, request, result);
    if (made != nullptr) {
      expect_zeroed(session, request, *made,
                    "(expected 0: NumPy relies on calloc's zeros for np.zeros and object arrays, "
                    "also when the block reuses memory that was written and freed)");
    }
  }
};

// NEP49-7 (SHOULD): calloc(nelem, elsize) whose product overflows size_t returns NULL.
class CallocOverflow final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::calloc_overflow, 4},
            {CommandKind::calloc, 2},
            {CommandKind::malloc, 1},
            {CommandKind::free, 2}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block*) const override {
    if (request.kind != CommandKind::calloc_overflow) return;
    expect_null(session, request, result,
                "the product overflows size_t, so the block is shorter than asked (check nelem > "
                "SIZE_MAX / elsize first)");
  }
};

// NEP49-12: every block from malloc, calloc and realloc is aligned to alignof(max_align_t),
// also with many small blocks live.
class Alignment final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::malloc, 5},
            {CommandKind::realloc, 3},
            {CommandKind::calloc, 2},
            {CommandKind::free, 2}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block* made) const override {
    if (made == nullptr || result == nullptr) return;
    constexpr std::size_t kAlign = alignof(std::max_align_t);
    if (reinterpret_cast<std::uintptr_t>(result) % kAlign != 0) {
      session.fail(str(request.text, " = ", result, ": expected alignment to ", kAlign,
                       " bytes (alignof(max_align_t)); NumPy's aligned dtypes assume it"),
                   str("EXPECT_EQ(reinterpret_cast<std::uintptr_t>(", made->name,
                       ") % alignof(std::max_align_t), 0u);"),
                   str("assert ", made->name, " % ", kAlign, " == 0"));
    }
  }
};

}  // namespace

const Property& nep49_5() { return the<Malloc>(); }
const Property& nep49_6() { return the<CallocZeroed>(); }
const Property& nep49_7() { return the<CallocOverflow>(); }
const Property& nep49_12() { return the<Alignment>(); }

}  // namespace emm::conformance::nep49_engine::properties
