// emm/conformance/plugin_host.hpp — the reference EMM system hosting the plugin for one run.
//
// What a check drives the plugin through: a hermetic emm::Runtime over the backend's driver
// with the plugin registered, and its device-0 context. Created on first use, so a check that
// builds its own contexts (LIFE-4, LIFE-5) starts from nothing.
//
//   Context& context = run.host().context();   // plugin constructed, initialize() called
//   auto memory = context.memalloc(4096);
//
// A failure to register the plugin or to create the context fails the run's clause, naming
// the step. Not thread-safe: the checks' own threads use the context, not the PluginHost.
#pragma once

#include <memory>

#include "emm/runtime.hpp"

namespace emm::conformance {

class ClauseRun;

class PluginHost {
 public:
  explicit PluginHost(const ClauseRun& run);
  ~PluginHost();  // closes the runtime it made
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Hermetic options: no environment variables, IPC supported.
  [[nodiscard]] RuntimeOptions runtime_options() const;
  // The run's runtime with the plugin registered (created on first use).
  Runtime& runtime();
  // The runtime's device-0 context: created (plugin constructed, initialize() called) on first
  // use, made current on the calling thread every time. Later calls do not call initialize()
  // again, so checks control how often it runs (LIFE-2, PERF-2).
  Context& context();
  // Another runtime over the same driver with the plugin registered (LIFE-4, LIFE-8).
  [[nodiscard]] std::unique_ptr<Runtime> make_runtime() const;
  // Closes and destroys runtime(); the next runtime()/context() makes a new one.
  void drop_runtime();

 private:
  const ClauseRun& run_;
  std::unique_ptr<Runtime> runtime_;
};

}  // namespace emm::conformance
