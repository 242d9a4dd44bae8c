#include "nep49/src/engine/property.hpp"

#include <array>
#include <cstddef>

#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine {

const Property* property_for(Nep49Clause clause) noexcept {
  namespace p = properties;
  switch (clause) {
#define EMM_PROPERTY_CASE(Key, function) \
  case Nep49Clause::Key:                 \
    return &p::function();
    EMM_NEP49_PROPERTIES(EMM_PROPERTY_CASE)
#undef EMM_PROPERTY_CASE
    default:
      // NEP49-1..3 declare the struct, which no sequence changes; NEP49-4 and 15..22 are NumPy's
      // own scenarios.
      return nullptr;
  }
}

namespace {

// How a sequence names each command, in CommandKind's order.
constexpr std::array<const char*, 12> kCommandNames{"malloc",
                                                    "calloc",
                                                    "calloc of elements",
                                                    "calloc overflowing size_t",
                                                    "realloc",
                                                    "realloc beyond any machine",
                                                    "free",
                                                    "free with a wrong size",
                                                    "free(NULL)",
                                                    "impossible request",
                                                    "factory asked again",
                                                    "contention"};
static_assert(kCommandNames.size() == static_cast<std::size_t>(CommandKind::contention) + 1,
              "one name per CommandKind");

}  // namespace

const char* to_string(CommandKind kind) noexcept {
  const auto index = static_cast<std::size_t>(kind);
  return index < kCommandNames.size() ? kCommandNames[index] : "?";
}

}  // namespace emm::conformance::nep49_engine
