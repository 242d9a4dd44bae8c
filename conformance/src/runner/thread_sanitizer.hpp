// runner/thread_sanitizer.hpp — certifying a plugin library built with -fsanitize=thread.
//
// Such a library needs ThreadSanitizer's runtime in the process before anything else: dlopen()
// cannot load it later ("libtsan.so.2: cannot allocate memory in static TLS block"). emm-certify
// takes the library directly:
//
//   * emm-certify's main() calls restart_for_thread_sanitizer() (certify.hpp) first. When the
//     --plugin library calls into ThreadSanitizer (its dynamic symbols need __tsan_init: GCC's
//     and clang's instrumentation both do) and no runtime is in this process, the process
//     replaces itself (execv of /proc/self/exe, same arguments) with the runtime preloaded: the
//     one the library names (DT_NEEDED libtsan.so.N, found through its RUNPATH like the dynamic
//     loader does), else $EMM_TSAN_RUNTIME, else GCC's libtsan as the compiler that built the
//     kit finds it (a clang build names none: clang links its runtime into executables only,
//     and its shared runtime cannot be preloaded, while GCC's serves clang's instrumentation).
//     TSAN_OPTIONS gets kThreadSanitizerDefaultOptions first (the caller's own options come after
//     them and win). Every process the certification starts — the probe, the workers — is forked
//     from it and has the runtime; LD_PRELOAD is set back to what it was, so that programs it
//     executes (emm-ipc-importer) are not preloaded.
//   * The plugin's instrumented code writes each race to stderr, which the scheduler captures
//     per clause; fail_on_thread_sanitizer_reports() makes a clause whose output holds a report
//     fail with it: "ThreadSanitizer found a data race in the plugin ..." and both stacks,
//     whether the clause passed, failed on its own, or its process ended at the report
//     (halt_on_error=1).
//
// The kit's own code is not instrumented by the preload (only the plugin and ThreadSanitizer's
// interceptors: malloc, pthread, memcpy), so a report names the plugin's accesses; the `tsan`
// preset builds the kit itself with ThreadSanitizer, so that its own races are found too. A
// plugin linked without -Bsymbolic-functions may call emm-certify's uninstrumented copies of
// inline library code (shared_ptr's reference counts), whose synchronisation ThreadSanitizer
// cannot see; emm_add_certification_test links its TSan build with it.
//
// Thread-safety: plain functions, safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

// What a shared library needs from ThreadSanitizer.
struct ThreadSanitizerNeed {
  // Its code calls ThreadSanitizer (an undefined dynamic symbol __tsan_init).
  bool instrumented = false;
  // The runtime it names among its DT_NEEDED libraries: a path when its RUNPATH (or RPATH)
  // holds it, else the name for the dynamic loader to search. Empty when it names none (a clang
  // build: clang links the runtime into executables only).
  std::string runtime;
  // Why the file could not be read as a shared library (the probe then says why it cannot be
  // loaded); empty when it could.
  std::string problem;
};
ThreadSanitizerNeed thread_sanitizer_need(const std::string& library);

// A ThreadSanitizer runtime is in this process (a TSan build of emm-certify, or preloaded).
bool thread_sanitizer_loaded() noexcept;

// What the restart puts in TSAN_OPTIONS before the caller's own: every report, the run going on
// after one (the clause answers, and the report becomes its failure through its output), the
// process's exit status left alone (a status of 66 after a report would read as a crash of a
// clause that answered), no reports about the kit's signal handlers, the second stack of a
// lock-order inversion.
inline constexpr std::string_view kThreadSanitizerDefaultOptions =
    "halt_on_error=0:exitcode=0:report_signal_unsafe=0:second_deadlock_stack=1";

// One line for the console when `library` is instrumented: whether the runtime is loaded (then
// races fail the clause that ran) or why not; nullopt for a library that is not instrumented.
std::optional<std::string> thread_sanitizer_status(const std::string& library);

// When `result.output` holds ThreadSanitizer reports, the clause fails with the first (a data
// race before other kinds), trimmed to its two stacks, and the number of reports; what the
// clause concluded itself follows. `plugin_file` (the library's file name) is named when one
// of the stacks runs through it. Nothing changes without a report.
void fail_on_thread_sanitizer_reports(ClauseResult& result, std::string_view plugin_file);

}  // namespace emm::conformance
