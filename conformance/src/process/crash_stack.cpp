// A native stack on stderr when the worker crashes (crash_stack.hpp).
#include "crash_stack.hpp"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace emm::conformance {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMaxFrames = 64;

void write_text(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  static_cast<void>(ignored);
}

extern "C" void print_stack_and_reraise(int signal) {
  write_text("\nemm-certify worker: ");
  write_text(sigabbrev_np(signal) != nullptr ? sigabbrev_np(signal) : "signal");
  write_text(" in the worker; native stack (EMMKIT_CRASH_STACK):\n");
  void* frames[kMaxFrames];
  const int count = ::backtrace(frames, kMaxFrames);
  ::backtrace_symbols_fd(frames, count, STDERR_FILENO);
  std::raise(signal);  // the default disposition is back (SA_RESETHAND)
}

}  // namespace

void install_crash_stack_from_environment() {
  const char* wanted = std::getenv("EMMKIT_CRASH_STACK");
  if (wanted == nullptr || *wanted == '\0') return;
  void* warm_up[1];
  static_cast<void>(::backtrace(warm_up, 1));  // loads the unwinder now, not in the handler
  struct sigaction action {};
  action.sa_handler = print_stack_and_reraise;
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  for (const int signal : kSignals) ::sigaction(signal, &action, nullptr);
}

}  // namespace emm::conformance
