// The conformance suite over the logging decorator over the pool example — the same pair its
// plugin library exports (GoogleTest typed tests).
#include <emm/conformance/gtest.hpp>
#include <memory>

#include "emm/examples/logging_over_pool.hpp"

struct LoggingOverPoolTraits {
  using Plugin = emm::examples::LoggingOverPool;
  static constexpr emm::PluginDeclaration declaration = emm::examples::kLoggingOverPoolDeclaration;
  // The events of this run go to one file in the test's working directory rather than one
  // /tmp file per process: the traits build each instance with an explicit destination.
  static std::unique_ptr<emm::BaseCUDAMemoryManager> make(emm::Context* context) {
    return std::make_unique<Plugin>(emm::examples::LogTo{"logging_conformance_events.csv"},
                                    context);
  }
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(LoggingOverPool, LoggingOverPoolTraits);
