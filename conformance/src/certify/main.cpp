// emm-certify — certifies an EMM plugin shared library (spec §5). See certify_cli.hpp.
#include <iostream>

#include "emm/conformance/certify.hpp"

int main(int argc, char** argv) {
  return emm::conformance::certify_main(argc, argv, std::cout, std::cerr);
}
