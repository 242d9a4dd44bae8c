#include "emm/conformance/outcome.hpp"

namespace emm::conformance {

std::string_view to_string(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::pass:
      return "pass";
    case Outcome::fail:
      return "fail";
    case Outcome::not_supported:
      return "not_supported";
    case Outcome::crash:
      return "crash";
    case Outcome::timeout:
      return "timeout";
  }
  return "fail";
}

std::optional<Outcome> parse_outcome(std::string_view text) noexcept {
  for (Outcome o :
       {Outcome::pass, Outcome::fail, Outcome::not_supported, Outcome::crash, Outcome::timeout}) {
    if (text == to_string(o)) return o;
  }
  return std::nullopt;
}

}  // namespace emm::conformance
