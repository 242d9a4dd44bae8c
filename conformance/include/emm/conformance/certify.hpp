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
// Exit status: kExitCertified, kExitNotCertified (also when no backend could run), kExitUsage
// (a usage error, or the plugin could not be loaded, or a report could not be written).
#pragma once

#include <ostream>

namespace emm::conformance {

inline constexpr int kExitCertified = 0;
inline constexpr int kExitNotCertified = 1;
inline constexpr int kExitUsage = 2;

int certify_main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace emm::conformance
