// LIFE-4 — the constructor throws whenever it is given a context, while the null-context version
// probe still succeeds: registration works, yet no context can ever be served. (The registration
// tests load it too: the host must report the constructor's exception as a PluginLoadError.)
#include <stdexcept>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context) : BaselinePool(context) {
    if (context != nullptr) {
      throw std::runtime_error("the known-bad LIFE-4 plugin refuses to be built for a context");
    }
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad LIFE-4 constructor throws for a context"))
