#include "nep49/src/engine/property.hpp"

#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine {

const Property* property_for(Nep49Clause clause) noexcept {
  namespace p = properties;
  switch (clause) {
    case Nep49Clause::NEP49_5:
      return &p::nep49_5();
    case Nep49Clause::NEP49_6:
      return &p::nep49_6();
    case Nep49Clause::NEP49_7:
      return &p::nep49_7();
    case Nep49Clause::NEP49_8:
      return &p::nep49_8();
    case Nep49Clause::NEP49_9:
      return &p::nep49_9();
    case Nep49Clause::NEP49_10:
      return &p::nep49_10();
    case Nep49Clause::NEP49_11:
      return &p::nep49_11();
    case Nep49Clause::NEP49_12:
      return &p::nep49_12();
    case Nep49Clause::NEP49_13:
      return &p::nep49_13();
    case Nep49Clause::NEP49_14:
      return &p::nep49_14();
    default:
      // NEP49-1..3 declare the struct, which no sequence changes; NEP49-4 and 15..22 are NumPy's
      // own scenarios.
      return nullptr;
  }
}

const char* to_string(CommandKind kind) noexcept {
  switch (kind) {
    case CommandKind::malloc:
      return "malloc";
    case CommandKind::calloc:
      return "calloc";
    case CommandKind::calloc_elements:
      return "calloc of elements";
    case CommandKind::calloc_overflow:
      return "calloc overflowing size_t";
    case CommandKind::realloc:
      return "realloc";
    case CommandKind::realloc_fail:
      return "realloc beyond any machine";
    case CommandKind::free:
      return "free";
    case CommandKind::free_hint:
      return "free with a wrong size";
    case CommandKind::free_null:
      return "free(NULL)";
    case CommandKind::impossible:
      return "impossible request";
    case CommandKind::ask_again:
      return "factory asked again";
    case CommandKind::contention:
      return "contention";
  }
  return "?";
}

}  // namespace emm::conformance::nep49_engine
