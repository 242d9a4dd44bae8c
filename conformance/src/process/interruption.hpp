// Interruption of a certification by SIGINT, SIGTERM or SIGHUP (spec §8, "The run itself"): a CI
// runner cancelling a job, a build's time limit, Ctrl-C. While an InterruptionHandlers object
// lives, those signals are caught instead of ending the process: the signal is recorded, every
// wait on a child (child_process.hpp) returns at once, the scheduler kills what it started and
// marks what did not finish `not_run` ("interrupted by SIGTERM"), and emm-certify writes its
// reports and exits 128 + the signal. A second signal of the same kind ends the process at once
// (the default disposition is back by then), for a user who does not want to wait.
//
// The run's --deadline is the same path: SIGALRM, from alarm(), when the deadline passes; its
// exit status is 124 (as timeout(1)'s), its text "stopped at its --deadline".
//
// Children forked by ChildProcess get the default dispositions back before their body runs.
//
// Thread-safety: interrupting_signal() from any thread (an atomic read); construct and destroy
// InterruptionHandlers on one thread, one at a time (emm-certify's main).
#pragma once

#include <csignal>
#include <string>

namespace emm::conformance {

class InterruptionHandlers {
 public:
  // `deadline_s` > 0: SIGALRM after that many seconds ends the run the same way.
  explicit InterruptionHandlers(unsigned deadline_s = 0);
  ~InterruptionHandlers();  // the previous dispositions, no alarm; the recorded signal is kept
  InterruptionHandlers(const InterruptionHandlers&) = delete;
  InterruptionHandlers& operator=(const InterruptionHandlers&) = delete;

 private:
  struct sigaction previous_[4];
};

// The signal that interrupted this certification (SIGALRM: its --deadline), or 0.
int interrupting_signal() noexcept;
// "interrupted by SIGTERM (Terminated)", or for SIGALRM "stopped at its --deadline": what a
// clause that did not finish says, and the verdict line.
std::string interruption_text(int signal);
// The exit status of a run that `signal` interrupted: 128 + signal, or 124 for the deadline.
int interruption_exit_status(int signal) noexcept;
// In a child right after fork(): the default dispositions of the three signals, no signal
// recorded. Async-signal-safe.
void reset_interruption_in_child() noexcept;
// For tests: forget a recorded signal.
void clear_interruption() noexcept;

}  // namespace emm::conformance
