// nep49/engine/properties/expectations.hpp — the checks several NEP 49 properties make, each
// failing the running clause with what was expected and what was seen, and a statement a
// reproducer ends with to show it.
#pragma once

#include <string_view>

#include "nep49/src/engine/property.hpp"

namespace emm::conformance::nep49_engine::properties {

// A request a machine can satisfy (up to several MiB) got a block: not NULL. `why` says why
// NumPy needs it ("NumPy raises MemoryError for a request it could have had").
void expect_not_null(Session& session, const Request& request, void* result);
// The block `made` shares no byte with another live block.
void expect_no_overlap(Session& session, const Request& request, const Block& made);
// Every live block still holds its pattern; `after` says what happened before ("after frees with
// wrong sizes").
void expect_all_intact(Session& session, std::string_view after);
// A request no machine can satisfy (or an overflowing calloc) returned NULL.
void expect_null(Session& session, const Request& request, void* result, std::string_view why);
// The block `made` (from calloc) reads as zero.
void expect_zeroed(Session& session, const Request& request, const Block& made,
                   std::string_view why);

}  // namespace emm::conformance::nep49_engine::properties
