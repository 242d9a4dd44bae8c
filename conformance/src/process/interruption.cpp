// Interruption of a certification by SIGINT, SIGTERM or SIGHUP (interruption.hpp).
#include "interruption.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "emm/conformance/child_process.hpp"  // describe_signal

namespace emm::conformance {
namespace {

constexpr int kSignals[4] = {SIGINT, SIGTERM, SIGHUP, SIGALRM};

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

// Records the first signal and restores the default disposition of its kind, so that a second
// one ends the process. Async-signal-safe: a lock-free atomic and sigaction().
void on_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
}

}  // namespace

InterruptionHandlers::InterruptionHandlers(unsigned deadline_s) {
  struct sigaction catching {};
  catching.sa_handler = &on_signal;
  sigemptyset(&catching.sa_mask);
  catching.sa_flags = 0;  // no SA_RESTART: a poll() waiting on a child returns EINTR at once
  for (int i = 0; i < 4; ++i) ::sigaction(kSignals[i], &catching, &previous_[i]);
  if (deadline_s > 0) ::alarm(deadline_s);
}

InterruptionHandlers::~InterruptionHandlers() {
  ::alarm(0);
  for (int i = 0; i < 4; ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
}

int interrupting_signal() noexcept { return g_signal.load(); }

std::string interruption_text(int signal) {
  if (signal == SIGALRM) return "stopped at its --deadline";
  return "interrupted by " + describe_signal(signal);
}

int interruption_exit_status(int signal) noexcept { return signal == SIGALRM ? 124 : 128 + signal; }

void reset_interruption_in_child() noexcept {
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  for (const int signal : kSignals) ::sigaction(signal, &fallback, nullptr);
  g_signal.store(0);
}

void clear_interruption() noexcept { g_signal.store(0); }

}  // namespace emm::conformance
