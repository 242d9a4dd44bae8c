// emm-certify — certifies an EMM plugin shared library (spec §5). See certify_cli.hpp.
#include <iostream>

#include "emm/conformance/certify.hpp"

int main(int argc, char** argv) {
  emm::conformance::restart_for_thread_sanitizer(argc, argv);  // a plugin built with TSan
  return emm::conformance::certify_main(argc, argv, std::cout, std::cerr);
}
