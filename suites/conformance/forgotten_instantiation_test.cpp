// Includes the typed conformance suite and forgets EMM_INSTANTIATE_CONFORMANCE_SUITE: the binary
// must fail (GoogleTest's GoogleTestVerification test), so no plugin is silently uncertified.
// CTest expects the failure (conformance.forgotten_instantiation_fails).
#include <emm/conformance/gtest.hpp>
