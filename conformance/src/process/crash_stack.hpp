// A native stack on stderr when the subject crashes a process that runs clauses (a worker, a
// clause's own process, or emm-certify itself with --in-process) by SIGSEGV, SIGBUS, SIGFPE,
// SIGILL or SIGABRT, for the plugin author who must find where: the scheduler keeps a child's
// output with the clause's result, so the stack reaches the certificate's detail. On only when
// EMMKIT_CRASH_STACK is set to a non-empty value (docs/troubleshooting.md): the frames are
// addresses and the nearest exported symbols, and printing them from a signal handler is best
// effort (backtrace() is not async-signal-safe; it is loaded beforehand so that it does not
// allocate on the first use).
//
// Each handler runs once (SA_RESETHAND) and raises the signal again, so the worker still ends
// by the signal and the parent still classifies it as a crash. A handler installed later
// (Python's faulthandler) runs first and chains to this one.
//
// Thread-safety: call from the process's main thread before the subject is loaded.
#pragma once

namespace emm::conformance {

// Installs the handlers when EMMKIT_CRASH_STACK is set; does nothing otherwise.
void install_crash_stack_from_environment();

}  // namespace emm::conformance
