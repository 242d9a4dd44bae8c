// process_test_support.hpp — helpers for the process suite.
//
// in_harness(body): runs `body` in a forked child of its own and returns the string it returned.
// Tests that change process-wide state (become a subreaper, close 0–2, ignore SIGCHLD) do it
// there, so the test binary stays as it was. A harness that does not finish cleanly returns
// "harness <how it ended>: <its output>", which no test expects.
//
// Test-only code; not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "emm/conformance/child_process.hpp"

namespace emm::conformance::test {

inline std::string in_harness(const std::function<std::string()>& body) {
  ChildOptions options;
  options.result_channel = true;
  ChildProcess harness = ChildProcess::fork(
      [&body] {
        send_result_frame(body());
        return 0;
      },
      options);
  const ChildEnd end = harness.wait(std::chrono::seconds(20));
  std::string problem;
  if (end.kind == ChildEnd::Kind::exited && end.exit_status == 0) {
    if (auto report = decode_frame(harness.result_bytes(), problem)) return *report;
  }
  return "harness " + end.describe() + " (" + problem + "): " + harness.output().text();
}

inline double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace emm::conformance::test
