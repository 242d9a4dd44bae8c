// The conformance suite over the logging decorator over the pool example — the same pair its
// plugin library exports (GoogleTest typed tests).
#include <cstdlib>
#include <emm/conformance/gtest.hpp>

#include "emm/examples/csv_event_log.hpp"
#include "emm/examples/logging_over_pool.hpp"

struct LoggingOverPoolTraits {
  using Plugin = emm::examples::LoggingOverPool;
  static constexpr const char* name = "logging(pool)";
  static constexpr emm::Capabilities capabilities =
      emm::complete_capabilities<Plugin>(emm::examples::kLoggingOverPoolCapabilities);
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(LoggingOverPool, LoggingOverPoolTraits);

namespace {
// The events of this run go to one file in the test's working directory rather than one
// /tmp file per process, unless the caller chose a destination.
const bool log_destination_set =
    ::setenv(emm::examples::CsvEventLog::kEnvVar, "logging_conformance_events.csv", 0) == 0;
}  // namespace
