// The reference NumbaCUDAMemoryManager certified through the typed suite, exactly as a plugin
// author certifies theirs: every plugin clause passes on the fake backend; the gpu instances
// skip on a machine without a GPU ("no GPU: ...").
#include <emm/conformance/gtest.hpp>

#include "reference_traits.hpp"

EMM_INSTANTIATE_CONFORMANCE_SUITE(NumbaReference, emm::testing_support::NumbaReferenceTraits);
