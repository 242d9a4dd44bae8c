// emm/conformance/nep49_run.hpp — Nep49Run: one check body's run of one NEP 49 handler clause.
//
// The NEP 49 counterpart of ClauseRun (clause_run.hpp), with the same verdict helpers: fail()
// throws ClauseFailure "[NEP49-n] ...". The handler's four functions are called through
// malloc()/calloc()/realloc()/free(), which fail the clause (naming NEP49-3 or NEP49-14) rather
// than call a NULL pointer or let a C++ exception through; handler() gives the raw struct to the
// clauses about the struct itself. numpy_scenario() runs the clause's scenario in real NumPy.
// The overloads that take a handler call another handler the subject's factory gave
// (Nep49Subject::ask_again). exploration() is the run's --seed and --budget, which the clause's
// property (nep49/engine/explore.hpp) explores with; its shortest failing sequence is kept as
// reproducer().
//
//   EMM_NEP49_CHECK(NEP49_6) {
//     void* p = run.calloc(4096, 1);
//     if (p == nullptr) run.fail("calloc(4096, 1) returned NULL");
//     ...
//     run.free(p, 4096);
//   }
//
// Not thread-safe: the verdict helpers belong to the body's thread; the call wrappers may be
// used from the threads a body starts (they throw; the body joins and reports).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/clause_result.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/exploration.hpp"
#include "emm/conformance/nep49_subject.hpp"

namespace emm::conformance {

class Nep49Run {
 public:
  Nep49Run(const Clause& clause, Nep49Subject& subject, Backend& backend,
           Exploration exploration = {});
  Nep49Run(const Nep49Run&) = delete;
  Nep49Run& operator=(const Nep49Run&) = delete;

  const Clause& clause() const noexcept { return clause_; }
  const std::string& id() const noexcept { return clause_.id; }
  const emm::nep49::Handler& handler() const noexcept { return subject_.handler(); }
  Nep49Subject& subject() const noexcept { return subject_; }
  Backend& backend() const noexcept { return backend_; }
  const Exploration& exploration() const noexcept { return exploration_; }

  // The handler's functions. Throw ClauseFailure when the pointer is NULL or a C++ exception
  // escapes; otherwise return what the handler returned.
  void* malloc(std::size_t size) const;
  void* calloc(std::size_t nelem, std::size_t elsize) const;
  void* realloc(void* ptr, std::size_t size) const;
  void free(void* ptr, std::size_t size) const;
  // The same through `through`, a handler the subject's factory gave again.
  void* malloc(const emm::nep49::Handler& through, std::size_t size) const;
  void* calloc(const emm::nep49::Handler& through, std::size_t nelem, std::size_t elsize) const;
  void* realloc(const emm::nep49::Handler& through, void* ptr, std::size_t size) const;
  void free(const emm::nep49::Handler& through, void* ptr, std::size_t size) const;

  // Runs this clause's scenario in real NumPy: fails with the scenario's message; not_supported
  // (naming why) when NumPy cannot be loaded in this process.
  void numpy_scenario();

  [[noreturn]] void fail(std::string_view what) const;
  void note(std::string_view text);
  void record(std::string key, std::string value);
  const std::vector<std::string>& notes() const noexcept { return notes_; }
  const std::vector<Property>& properties() const noexcept { return properties_; }
  // The shortest failing sequence the clause's property found.
  void set_reproducer(Reproducer reproducer) { reproducer_ = std::move(reproducer); }
  const std::optional<Reproducer>& reproducer() const noexcept { return reproducer_; }

 private:
  const Clause& clause_;
  Nep49Subject& subject_;
  Backend& backend_;
  Exploration exploration_;
  std::vector<std::string> notes_;
  std::vector<Property> properties_;
  std::optional<Reproducer> reproducer_;
};

}  // namespace emm::conformance
