#include "emm/conformance/nep49_run.hpp"

namespace emm::conformance {
namespace {

// Calls one of the handler's functions; a NULL pointer or an escaping exception fails the
// clause under the clause that forbids it. `what` ("malloc(4097)") is made only then: the
// contention workload makes a hundred thousand calls a clause.
template <class Function, class Describe, class... Args>
auto call(const Nep49Run& run, void* ctx, Function function, const char* name, const Describe& what,
          Args... args) {
  if (function == nullptr) {
    run.fail(str("the handler's ", name, " is NULL, so ", what(),
                 " cannot be called (NEP49-3: NumPy would call it without checking)"));
  }
  try {
    return function(ctx, args...);
  } catch (...) {
    run.fail(str(what(), " let a C++ exception escape (", describe_current_exception(),
                 "); NEP49-14: a handler function reports failure by returning NULL, never by "
                 "throwing through NumPy's C frames"));
  }
}

}  // namespace

Nep49Run::Nep49Run(const Clause& clause, Nep49Subject& subject, Backend& backend,
                   Exploration exploration)
    : clause_(clause), subject_(subject), backend_(backend), exploration_(exploration) {}

void* Nep49Run::malloc(std::size_t size) const { return malloc(handler(), size); }
void* Nep49Run::calloc(std::size_t nelem, std::size_t elsize) const {
  return calloc(handler(), nelem, elsize);
}
void* Nep49Run::realloc(void* ptr, std::size_t size) const { return realloc(handler(), ptr, size); }
void Nep49Run::free(void* ptr, std::size_t size) const { free(handler(), ptr, size); }

// malloc, calloc and free are called as NumPy calls them: holding the GIL when CPython is here.
void* Nep49Run::malloc(const nep49::Handler& through, std::size_t size) const {
  void* result = nullptr;
  subject_.with_gil([&] {
    result = call(
        *this, through.allocator.ctx, through.allocator.malloc, "malloc",
        [&] { return str("malloc(", size, ")"); }, size);
  });
  return result;
}

void* Nep49Run::calloc(const nep49::Handler& through, std::size_t nelem, std::size_t elsize) const {
  void* result = nullptr;
  subject_.with_gil([&] {
    result = call(
        *this, through.allocator.ctx, through.allocator.calloc, "calloc",
        [&] { return str("calloc(", nelem, ", ", elsize, ")"); }, nelem, elsize);
  });
  return result;
}

// realloc is called without the GIL: NumPy's text reader does (NEP49-13, NEP49-22).
void* Nep49Run::realloc(const nep49::Handler& through, void* ptr, std::size_t size) const {
  return call(
      *this, through.allocator.ctx, through.allocator.realloc, "realloc",
      [&] { return str("realloc(", ptr, ", ", size, ")"); }, ptr, size);
}

void Nep49Run::free(const nep49::Handler& through, void* ptr, std::size_t size) const {
  subject_.with_gil([&] {
    call(
        *this, through.allocator.ctx, through.allocator.free, "free",
        [&] { return str("free(", ptr, ", ", size, ")"); }, ptr, size);
  });
}

void Nep49Run::numpy_scenario() {
  std::string why_not;
  NumpyBridge* numpy = subject_.numpy(why_not);
  if (numpy == nullptr) {
    throw ClauseNotSupported(
        clause_.tag("needs real NumPy, which cannot be loaded in this process: " + why_not));
  }
  record("numpy", numpy->versions());
  if (std::string failure = numpy->run(clause_, notes_); !failure.empty()) fail(failure);
}

void Nep49Run::fail(std::string_view what) const { throw ClauseFailure(clause_.tag(what)); }

void Nep49Run::note(std::string_view text) { notes_.emplace_back(text); }

void Nep49Run::record(std::string key, std::string value) {
  properties_.emplace_back(std::move(key), std::move(value));
}

}  // namespace emm::conformance
