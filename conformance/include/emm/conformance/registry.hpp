// emm/conformance/registry.hpp — clause id -> the one check body that certifies it.
//
// Each group's bodies live in conformance/src/checks/<group>_checks.cpp and are registered
// explicitly (no static-initialisation tricks, so a static library keeps them all). The
// golden-list test (suites/conformance) proves that every plugin clause of the catalogue has a
// body and that no body names an unknown clause.
//
//   const CheckFunction* body = check_registry().find("LIFE-2");
//
// Thread-safety: built once (thread-safe static), immutable afterwards.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/clause_run.hpp"

namespace emm::conformance {

using CheckFunction = void (*)(ClauseRun& run);

class CheckRegistry {
 public:
  // Throws emm::Error when `id` is registered twice.
  void add(std::string id, CheckFunction body);
  // Null when no body is registered for `id`.
  CheckFunction find(std::string_view id) const noexcept;
  std::vector<std::string> ids() const;

 private:
  std::map<std::string, CheckFunction, std::less<>> bodies_;
};

const CheckRegistry& check_registry();

}  // namespace emm::conformance
