// emm/conformance/isolation.hpp — runs work in forked child processes, with a time bound.
//
// emm-certify runs every (clause, backend) in its own child (spec §3: a crashing or hanging
// plugin must not take the certification down). A child runs `work`, sends its returned payload
// as one frame on its result channel and exits; children are run and waited for by
// ChildProcess (child_process.hpp), so the bound holds whatever the child does with its
// descriptors. What the parent sees:
//   finished  the child sent exactly one complete frame and exited 0
//   crashed   it was killed by a signal (SIGSEGV, SIGABRT from abort()/std::terminate, ...) or
//             exited without a payload (e.g. the plugin called exit())
//   timed_out it was not reaped within the bound: its process group was SIGKILLed
// The child's stdout and stderr are captured; the tail goes into crash messages.
//
//   auto reports = run_in_children({[] { return std::string("hi"); }}, 1, std::chrono::seconds(5));
//
// Call only from a single-threaded process that has not initialised CUDA. At most `parallel`
// children run at once; `on_done` is called in the parent as each finishes.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/child_process.hpp"
#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

struct ChildReport {
  enum class Kind { finished, crashed, timed_out };
  Kind kind = Kind::crashed;
  std::string payload;
  int signal = 0;           // when killed by a signal
  int exit_status = 0;      // when it exited
  std::string output_tail;  // last bytes the child wrote to stdout/stderr
  double duration_ms = 0.0;
};

std::vector<ChildReport> run_in_children(
    const std::vector<std::function<std::string()>>& work, std::size_t parallel,
    std::chrono::milliseconds timeout,
    const std::function<void(std::size_t index, const ChildReport&)>& on_done = {});

// describe_signal(), "SIGSEGV (Segmentation fault)", comes with child_process.hpp.

// The ClauseResult a child report stands for: the decoded payload when it finished with a result
// for exactly `clause` on `backend`, else a crash/timeout result for them whose message starts
// "[<clause>] " and says what was seen.
ClauseResult result_from_child(const ChildReport& report, const Clause& clause, BackendKind backend,
                               Level level, int timeout_s);

}  // namespace emm::conformance
