#include "emm/conformance/exploration.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "emm/conformance/backend_descriptor.hpp"
#include "emm/conformance/backend_kind.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

template <class Number>
Number from_environment(const char* name, Number least, Number most, std::string_view what,
                        Number otherwise) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return otherwise;
  const std::string_view value(text);
  Number number{};
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size() || number < least ||
      number > most) {
    throw InvalidArgumentError(std::string(name) + " must be " + std::string(what) + " (got '" +
                               std::string(value) + "'); unset it for the default");
  }
  return number;
}

}  // namespace

int default_budget(BackendKind backend) noexcept {
  return backend_descriptor(backend).default_budget;  // what a sequence costs there
}

Exploration exploration_from_environment(Exploration base) {
  base.seed =
      from_environment<std::uint64_t>("EMMKIT_SEED", 0, UINT64_MAX, "a whole number", base.seed);
  base.budget =
      from_environment<int>("EMMKIT_BUDGET", 1, kMaxBudget,
                            "a number of sequences per clause from 1 to 1000000", base.budget);
  return base;
}

std::string describe(const Reproducer& reproducer) {
  std::string text = "shortest failing sequence (" + std::to_string(reproducer.calls.size()) +
                     " calls; seed " + std::to_string(reproducer.seed) + ", budget " +
                     std::to_string(reproducer.budget) + " replay it):\n";
  std::size_t number = 0;
  for (const std::string& call : reproducer.calls) {
    text += "  " + std::to_string(++number) + ". " + call + "\n";
  }
  text += reproducer.for_python ? reproducer.python : reproducer.gtest;
  return text;
}

}  // namespace emm::conformance
