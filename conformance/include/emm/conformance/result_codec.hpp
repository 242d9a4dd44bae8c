// emm/conformance/result_codec.hpp — a ClauseResult across a process boundary.
//
// The child that ran a clause encodes its result; the parent decodes it. The text is a magic
// line followed by length-prefixed fields ("<len>:<bytes>"), so any byte can travel in a message
// and a truncated, padded or foreign payload is refused rather than misread. The clause travels
// as its id and comes back as a pointer into catalogue(); an id the catalogue does not have, an
// unknown backend, level or outcome, or trailing bytes make decode_result return nullopt.
//
//   std::string payload = encode_result(result);            // in the child
//   std::optional<ClauseResult> back = decode_result(payload);  // in the parent
//
// Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

std::string encode_result(const ClauseResult& result);
std::optional<ClauseResult> decode_result(std::string_view payload);

}  // namespace emm::conformance
