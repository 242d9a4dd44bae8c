// The reference NumbaCUDAMemoryManager certified through the Boost.Test flavour: one Boost test
// case per (plugin clause, backend); gpu cases are skipped without a GPU.
#include <emm/conformance/boost.hpp>

#include "reference_traits.hpp"

EMM_BOOST_CONFORMANCE_SUITE(emm::testing_support::NumbaReferenceTraits)
