#include "emm/conformance/plugin_host.hpp"

#include "emm/conformance/clause_run.hpp"

namespace emm::conformance {

PluginHost::PluginHost(const ClauseRun& run) : run_(run) {}

PluginHost::~PluginHost() {
  try {
    drop_runtime();
  } catch (...) {
    // A plugin's reset() failing at teardown is reported by the clause that provoked it.
  }
}

RuntimeOptions PluginHost::runtime_options() const {
  // Hermetic: the certificate must not depend on the caller's EMM_* variables.
  RuntimeOptions options = RuntimeOptions::hermetic();
  options.ipc_supported = true;
  return options;
}

std::unique_ptr<Runtime> PluginHost::make_runtime() const {
  auto runtime = std::make_unique<Runtime>(run_.backend().driver(), runtime_options());
  try {
    runtime->set_memory_manager(run_.subject().factory);
  } catch (...) {
    run_.fail(
        "registering the plugin (set_memory_manager, which builds a null-context instance and "
        "reads interface_version()) failed: " +
        describe_current_exception());
  }
  return runtime;
}

Runtime& PluginHost::runtime() {
  if (!runtime_) runtime_ = make_runtime();
  return *runtime_;
}

Context& PluginHost::context() {
  Runtime& host = runtime();
  if (Context* existing = host.find_context(0)) {
    existing->make_current();
    return *existing;
  }
  try {
    return host.get_context(0);
  } catch (...) {
    run_.fail(
        "creating the device-0 context (which constructs the plugin with no context current, "
        "then calls initialize()) failed: " +
        describe_current_exception());
  }
}

void PluginHost::drop_runtime() {
  if (!runtime_) return;
  std::unique_ptr<Runtime> closing = std::move(runtime_);
  closing->close();
}

}  // namespace emm::conformance
