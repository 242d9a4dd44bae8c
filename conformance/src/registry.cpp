#include "emm/conformance/registry.hpp"

#include "checks/checks.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {

void CheckRegistry::add(std::string id, CheckFunction body) {
  if (!bodies_.emplace(id, body).second) {
    throw Error("conformance check for " + id + " is registered twice");
  }
}

CheckFunction CheckRegistry::find(std::string_view id) const noexcept {
  auto found = bodies_.find(id);
  return found == bodies_.end() ? nullptr : found->second;
}

std::vector<std::string> CheckRegistry::ids() const {
  std::vector<std::string> result;
  for (const auto& [id, body] : bodies_) result.push_back(id);
  return result;
}

const CheckRegistry& check_registry() {
  static const CheckRegistry registry = [] {
    CheckRegistry r;
    checks::register_reg_checks(r);
    checks::register_life_checks(r);
    checks::register_alloc_checks(r);
    checks::register_fin_checks(r);
    checks::register_defer_checks(r);
    checks::register_info_checks(r);
    checks::register_ipc_checks(r);
    checks::register_perf_checks(r);
    return r;
  }();
  return registry;
}

}  // namespace emm::conformance
