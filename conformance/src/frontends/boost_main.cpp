// main() for Boost.Test conformance binaries (emm_conformance_boost). Linked from a static
// library, so a test that defines its own BOOST_TEST_MODULE keeps its own main().
#ifndef BOOST_TEST_DYN_LINK
#define BOOST_TEST_DYN_LINK
#endif
#define BOOST_TEST_MODULE emm_conformance
#include <boost/test/unit_test.hpp>
