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
#define EMM_PROPERTY_CASE(Key, function) \
  case PluginClause::Key:                \
    return &p::function();
    EMM_PLUGIN_PROPERTIES(EMM_PROPERTY_CASE)
#undef EMM_PROPERTY_CASE
    default:
      // DEFER-6 and INFO-3 are declarations, which no sequence changes; PERF-* are measurements.
      return nullptr;
  }
}

}  // namespace emm::conformance::engine
