// DEFER-6 (SHOULD) — the plugin declares no defer_cleanup behaviour text; the certificate has
// nothing to print. A warning only: the verdict stays CERTIFIED.
#include "baseline_pool.hpp"

namespace {

constexpr emm::PluginDeclaration declaration() {
  emm::PluginDeclaration declared =
      emm::zoo::baseline_declaration("known-bad DEFER-6 no defer_cleanup text");
  declared.defer_cleanup_behaviour = "";
  return declared;
}

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(emm::zoo::BaselinePool, declaration())
