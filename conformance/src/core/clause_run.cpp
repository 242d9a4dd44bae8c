#include "emm/conformance/clause_run.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = (status == 0 && readable != nullptr) ? readable : name;
  std::free(readable);
  return result;
}

}  // namespace

std::string hex(unsigned long long value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", value);
  return buffer;
}

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& error) {
    return demangle(typeid(error).name()) + ": " + error.what();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return "an exception of type " + (type != nullptr ? demangle(type->name()) : std::string("?")) +
           " (not derived from std::exception)";
  }
}

namespace {
// A backend starts each clause run with nothing recorded as not observable: what a run before
// this one (a test's shared backend) could not observe is not this clause's gap.
Backend& unobserved_cleared(Backend& backend) {
  backend.clear_unobserved();
  return backend;
}
}  // namespace

ClauseRun::ClauseRun(const Clause& clause, const PluginSubject& subject, Backend& backend,
                     RunOptions options)
    : clause_(clause),
      subject_(subject),
      backend_(unobserved_cleared(backend)),
      options_(std::move(options)),
      host_(std::make_unique<PluginHost>(*this)) {}

ClauseRun::~ClauseRun() = default;

void ClauseRun::fail(std::string_view what) const { throw ClauseFailure(clause_.tag(what)); }

void ClauseRun::not_supported(std::string_view reason) const {
  if (clause_.optional != nullptr && !declared(capabilities(), *clause_.optional)) {
    throw ClauseNotSupported(clause_.tag(reason));
  }
  if (clause_.optional != nullptr) {
    fail(str("not supported (", reason, ") although the plugin declares ", clause_.optional->name,
             "=true"));
  }
  fail(str("not supported (", reason, "), but ", clause_.id,
           " is not optional: an undeclared NotImplementedError is a failure"));
}

void ClauseRun::backend_cannot_run(std::string_view reason, std::string_view missing) {
  note(str(clause_.id, ": ", reason));
  unobservable(missing);
  throw ClauseNotSupported(str("[", clause_.id, "] ", reason, " (the ", backend_.name(),
                               " backend cannot run this clause)"));
}

void ClauseRun::require_capability() const {
  if (!clause_.applies_to(capabilities())) {
    not_supported(str("the plugin declares ", clause_.optional->name, "=false"));
  }
}

void ClauseRun::record(std::string key, std::string value) {
  properties_.emplace_back(std::move(key), std::move(value));
}

void ClauseRun::record(std::string key, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  record(std::move(key), std::string(buffer));
}

void ClauseRun::record(std::string key, std::size_t value) {
  record(std::move(key), std::to_string(value));
}

void ClauseRun::note(std::string_view text) { notes_.emplace_back(text); }

void ClauseRun::unobservable(std::string_view what) {
  if (std::find(unobserved_.begin(), unobserved_.end(), what) == unobserved_.end()) {
    unobserved_.emplace_back(what);
  }
}

std::vector<std::string> ClauseRun::unobserved() const {
  std::vector<std::string> all = unobserved_;
  for (std::string& what : backend_.unobserved()) {
    if (std::find(all.begin(), all.end(), what) == all.end()) all.push_back(std::move(what));
  }
  return all;
}

}  // namespace emm::conformance
