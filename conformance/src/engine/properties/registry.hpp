// engine/properties/registry.hpp — one function per clause property, defined in the family's
// file (lifecycle.cpp, allocation.cpp, ...); the list is the catalogue's (trait `property`).
#pragma once

#include "emm/conformance/plugin_clauses.hpp"
#include "engine/property.hpp"

namespace emm::conformance::engine::properties {

// The one property of type P, made on first use (each function below returns one).
template <class P>
const Property& the() {
  static const P property;
  return property;
}

// One function per clause with the catalogue's trait `property` (const Property& reg_1(); ...).
#define EMM_DECLARE_PROPERTY(Key, function) const Property& function();
EMM_PLUGIN_PROPERTIES(EMM_DECLARE_PROPERTY)
#undef EMM_DECLARE_PROPERTY

}  // namespace emm::conformance::engine::properties
