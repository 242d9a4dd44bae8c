// emm/conformance/plugin_probe.hpp — loading a plugin library without trusting it.
//
// emm-certify never loads the plugin in its own process (unless asked to, --in-process): dlopen
// runs the library's static initialisers, and a plugin may call exit(0) there, abort, hang,
// signal its process group or close every descriptor. probe_plugin() does the loading — dlopen,
// the entry point, the descriptor, a null-context instance's interface_version() — in a child
// process with the clause deadline and the memory limit, and returns what it read:
//
//   ProbeResult probe = probe_plugin("./libmy_plugin.so", settings);
//   if (!probe.loaded) fail("could not load: " + probe.failure);
//
// Anything that goes wrong while loading — a PluginLoadError, an exit of any status, a signal,
// a hang, an answer that is not a well-formed load report — is `loaded == false` with the
// cause. A null-context instance that cannot be built or asked its interface_version() is not a
// load failure: REG-1/REG-2 report it; interface_version is then nullopt.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "emm/conformance/plugin_subject.hpp"
#include "emm/plugin_loader.hpp"

namespace emm::conformance {

struct ProbeSettings {
  std::chrono::milliseconds timeout{60000};
  std::size_t memory_limit_bytes = 0;  // 0: none
};

struct ProbeResult {
  bool loaded = false;
  std::string failure;            // !loaded: why, with what the child printed
  PluginDescription description;  // loaded: what the library declares
  std::optional<int> interface_version;
  std::string interface_problem;  // why interface_version is unknown
};

// How a probe brings the library into its process: emm::load_plugin(path) unless the subject
// does more (a Python class names its class first; subject.hpp).
using PluginLoad = std::function<LoadedPlugin()>;

[[nodiscard]] ProbeResult probe_plugin(const std::string& path, const ProbeSettings& settings,
                                       const PluginLoad& load = {});

// The same, in this process (for --in-process, after probe_plugin() loaded it in a child): a
// plugin that crashes here takes the caller down.
[[nodiscard]] ProbeResult probe_plugin_in_process(const std::string& path,
                                                  const PluginLoad& load = {});

}  // namespace emm::conformance
