// emm/conformance/certify.hpp — emm-certify's entry point: one certification of a plugin
// library, from the command line to the reports and the exit status.
//
//   int status = certify_main(argc, argv, std::cout, std::cerr);
//
// It loads the plugin, decides once which backends can run, runs every (clause, backend) in
// its own child process (a crashing or hanging plugin costs only its clause), builds the
// Certificate and writes the console table and the requested reports. It never initialises
// CUDA itself: the GPU is probed and used in children only.
//
// Exit status (verdict.hpp): kExitCertified, kExitNotCertified (also when no backend could run),
// kExitPartial (an --only run whose clauses all passed), kExitUsage (a usage error, a report
// path that cannot be written, or a plugin that could not be loaded).
#pragma once

#include <ostream>

#include "emm/conformance/verdict.hpp"

namespace emm::conformance {

int certify_main(int argc, char** argv, std::ostream& out, std::ostream& err);

// For a plugin library built with -fsanitize=thread (argv's --plugin): when this process has no
// ThreadSanitizer runtime, replaces it with the same program and arguments, the runtime the
// library names preloaded (LD_PRELOAD; TSAN_OPTIONS gets defaults that let a race fail the
// clause that ran instead of ending it), so that every process of the certification has it.
// Returns when there is nothing to do, or (having said why on stderr) when that failed.
// emm-certify's main() calls it before certify_main(); see docs/troubleshooting.md.
void restart_for_thread_sanitizer(int argc, char** argv);

}  // namespace emm::conformance
