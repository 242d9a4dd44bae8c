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

}  // namespace emm::conformance
