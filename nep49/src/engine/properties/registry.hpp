// nep49/engine/properties/registry.hpp — one function per NEP 49 clause property, defined in the
// family's file (blocks.cpp, realloc.cpp, free.cpp, threads.cpp, exceptions.cpp) and listed once
// in property.cpp.
#pragma once

#include "nep49/src/engine/property.hpp"

namespace emm::conformance::nep49_engine::properties {

// The one property of type P, made on first use (each function below returns one).
template <class P>
const Property& the() {
  static const P property;
  return property;
}

const Property& nep49_5();
const Property& nep49_6();
const Property& nep49_7();
const Property& nep49_8();
const Property& nep49_9();
const Property& nep49_10();
const Property& nep49_11();
const Property& nep49_12();
const Property& nep49_13();
const Property& nep49_14();

}  // namespace emm::conformance::nep49_engine::properties
