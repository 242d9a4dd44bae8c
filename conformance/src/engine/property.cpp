#include "engine/property.hpp"

#include "engine/properties/registry.hpp"

namespace emm::conformance::engine {

bool Property::prepare(ClauseRun& run) const {
  // An optional capability declared absent: the clause's fixed scenario says not_supported.
  return run.clause().applies_to(run.capabilities());
}

const Property* property_for(PluginClause clause) noexcept {
  namespace p = properties;
  switch (clause) {
    case PluginClause::REG_1:
      return &p::reg_1();
    case PluginClause::REG_2:
      return &p::reg_2();
    case PluginClause::LIFE_2:
      return &p::life_2();
    case PluginClause::LIFE_4:
      return &p::life_4();
    case PluginClause::LIFE_5:
      return &p::life_5();
    case PluginClause::LIFE_6:
      return &p::life_6();
    case PluginClause::LIFE_7:
      return &p::life_7();
    case PluginClause::LIFE_8:
      return &p::life_8();
    case PluginClause::LIFE_10:
      return &p::life_10();
    case PluginClause::ALLOC_1:
      return &p::alloc_1();
    case PluginClause::ALLOC_2:
      return &p::alloc_2();
    case PluginClause::ALLOC_3:
      return &p::alloc_3();
    case PluginClause::ALLOC_5:
      return &p::alloc_5();
    case PluginClause::ALLOC_6:
      return &p::alloc_6();
    case PluginClause::ALLOC_7:
      return &p::alloc_7();
    case PluginClause::ALLOC_10:
      return &p::alloc_10();
    case PluginClause::ALLOC_11:
      return &p::alloc_11();
    case PluginClause::FIN_1:
      return &p::fin_1();
    case PluginClause::FIN_5:
      return &p::fin_5();
    case PluginClause::DEFER_2:
      return &p::defer_2();
    case PluginClause::DEFER_3:
      return &p::defer_3();
    case PluginClause::DEFER_4:
      return &p::defer_4();
    case PluginClause::INFO_1:
      return &p::info_1();
    case PluginClause::INFO_2:
      return &p::info_2();
    case PluginClause::IPC_1:
      return &p::ipc_1();
    case PluginClause::IPC_2:
      return &p::ipc_2();
    case PluginClause::IPC_7:
      return &p::ipc_7();
    case PluginClause::MANAGED_1:
      return &p::managed_1();
    case PluginClause::MANAGED_2:
      return &p::managed_2();
    case PluginClause::MANAGED_3:
      return &p::managed_3();
    case PluginClause::DEV_1:
      return &p::dev_1();
    case PluginClause::DEV_2:
      return &p::dev_2();
    case PluginClause::DEV_3:
      return &p::dev_3();
    case PluginClause::DEV_4:
      return &p::dev_4();
    default:
      // DEFER-6 and INFO-3 are declarations, which no sequence changes; PERF-* are measurements.
      return nullptr;
  }
}

}  // namespace emm::conformance::engine
