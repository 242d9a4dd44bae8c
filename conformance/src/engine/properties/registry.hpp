// engine/properties/registry.hpp — one function per clause property, defined in the family's
// file (lifecycle.cpp, allocation.cpp, ...) and listed once in property.cpp.
#pragma once

#include "engine/property.hpp"

namespace emm::conformance::engine::properties {

// The one property of type P, made on first use (each function below returns one).
template <class P>
const Property& the() {
  static const P property;
  return property;
}

const Property& reg_1();
const Property& reg_2();
const Property& life_2();
const Property& life_4();
const Property& life_5();
const Property& life_6();
const Property& life_7();
const Property& life_8();
const Property& life_10();
const Property& alloc_1();
const Property& alloc_2();
const Property& alloc_3();
const Property& alloc_5();
const Property& alloc_6();
const Property& alloc_7();
const Property& alloc_10();
const Property& alloc_11();
const Property& fin_1();
const Property& fin_5();
const Property& defer_2();
const Property& defer_3();
const Property& defer_4();
const Property& info_1();
const Property& info_2();
const Property& ipc_1();
const Property& ipc_2();
const Property& ipc_7();
const Property& managed_1();
const Property& managed_2();
const Property& managed_3();
const Property& dev_1();
const Property& dev_2();
const Property& dev_3();
const Property& dev_4();

}  // namespace emm::conformance::engine::properties
