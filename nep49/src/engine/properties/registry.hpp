// nep49/engine/properties/registry.hpp — one function per NEP 49 clause property, defined in the
// family's file (blocks.cpp, realloc.cpp, free.cpp, threads.cpp, exceptions.cpp); the list is the
// catalogue's (trait `property`).
#pragma once

#include "emm/conformance/nep49_clauses.hpp"
#include "nep49/src/engine/property.hpp"

namespace emm::conformance::nep49_engine::properties {

// The one property of type P, made on first use (each function below returns one).
template <class P>
const Property& the() {
  static const P property;
  return property;
}

// One function per NEP 49 clause with the catalogue's trait `property`.
#define EMM_DECLARE_PROPERTY(Key, function) const Property& function();
EMM_NEP49_PROPERTIES(EMM_DECLARE_PROPERTY)
#undef EMM_DECLARE_PROPERTY

}  // namespace emm::conformance::nep49_engine::properties
