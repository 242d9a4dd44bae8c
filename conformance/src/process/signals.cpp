// Signals and exit statuses of children (child_process.hpp).
#include <signal.h>
#include <string.h>

#include <cmath>
#include <string>

#include "emm/conformance/child_process.hpp"

namespace emm::conformance {

std::string describe_signal(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  const char* description = ::sigdescr_np(signal);
  std::string text = abbreviation != nullptr ? std::string("SIG") + abbreviation
                                             : "signal " + std::to_string(signal);
  if (description != nullptr) text += std::string(" (") + description + ")";
  return text;
}

std::string ChildEnd::describe() const {
  switch (kind) {
    case Kind::exited:
      return "exited with status " + std::to_string(exit_status);
    case Kind::signaled:
      return "was killed by " + describe_signal(signal);
    case Kind::timed_out:
      return "was still running after " + std::to_string(std::lround(duration_ms)) +
             " ms and was killed";
    case Kind::killed:
      return "was killed by the caller";
    case Kind::lost:
      break;
  }
  return "ended, but its exit status was taken by another waiter (a SIGCHLD handler that "
         "calls waitpid?)";
}

void ensure_default_sigchld() {
  struct sigaction current {};
  if (::sigaction(SIGCHLD, nullptr, &current) != 0) return;
  const bool auto_reaps = current.sa_handler == SIG_IGN || (current.sa_flags & SA_NOCLDWAIT) != 0;
  if (!auto_reaps) return;
  struct sigaction reset {};
  reset.sa_handler = SIG_DFL;
  sigemptyset(&reset.sa_mask);
  ::sigaction(SIGCHLD, &reset, nullptr);
}

}  // namespace emm::conformance
