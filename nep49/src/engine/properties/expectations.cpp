#include "nep49/src/engine/properties/expectations.hpp"

namespace emm::conformance::nep49_engine::properties {

void expect_not_null(Session& session, const Request& request, void* result) {
  if (result != nullptr || request.expect_null) return;
  session.fail(
      str(request.text, " returned NULL with memory to spare; expected a block of ", request.size,
          " bytes (NumPy would raise MemoryError for an array it could have had)"),
      str("ASSERT_NE(", request.result, ", nullptr);"), str("assert ", request.result));
}

void expect_no_overlap(Session& session, const Request& request, const Block& made) {
  const Block* self = nullptr;
  for (const Block& block : session.blocks()) {
    if (request.block != nullptr && block.id == request.block->id) self = &block;
  }
  if (const Block* other = session.overlapping(made.pointer, made.size, self)) {
    session.fail(str(request.text, " = [", made.pointer, ", +", made.size, ") overlaps the live ",
                     describe(*other), " at ", other->pointer,
                     "; expected a block that shares no byte with any block NumPy still holds"),
                 str("EXPECT_FALSE(overlap(", made.name, ", ", made.size, ", ", other->name, ", ",
                     other->size, "));"),
                 str("assert not overlap(", made.name, ", ", made.size, ", ", other->name, ", ",
                     other->size, ")"));
  }
}

void expect_all_intact(Session& session, std::string_view after) {
  const auto [block, damage] = session.first_damaged();
  if (block == nullptr) return;
  session.fail(str("expected every live block to keep its bytes", after.empty() ? "" : " ", after,
                   "; seen: ", describe(*block), " at ", block->pointer, ": ", damage),
               str("EXPECT_EQ(first_difference(", block->name, ", 0, ", block->size, ", ",
                   block->id, "), ", block->size, "u);"),
               str("assert first_difference(", block->name, ", 0, ", block->size, ", ", block->id,
                   ") == ", block->size));
}

void expect_null(Session& session, const Request& request, void* result, std::string_view why) {
  if (result == nullptr) return;
  session.fail(str(request.text, " returned ", result, ", expected NULL: ", why),
               str("EXPECT_EQ(", request.result, ", nullptr);"),
               str("assert ", request.result, " is None"));
}

void expect_zeroed(Session& session, const Request& request, const Block& made,
                   std::string_view why) {
  if (std::string damage = zero_damage(made.pointer, made.size); !damage.empty()) {
    session.fail(
        str(request.text, " = ", made.pointer, ": ", damage, " ", why),
        str("EXPECT_EQ(first_nonzero(", made.name, ", ", made.size, "), ", made.size, "u);"),
        str("assert ctypes.string_at(", made.name, ", ", made.size, ") == bytes(", made.size, ")"));
  }
}

}  // namespace emm::conformance::nep49_engine::properties
