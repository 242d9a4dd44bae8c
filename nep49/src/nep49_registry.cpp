#include "emm/conformance/nep49_registry.hpp"

#include <array>
#include <chrono>

#include "emm/conformance/clause_run.hpp"
#include "nep49/src/engine/explore.hpp"
#include "nep49/src/engine/scenario_process.hpp"

namespace emm::conformance {
namespace {

struct Entry {
  std::string_view id;
  Nep49Clause key;
  Nep49CheckFunction body;
};

#define EMM_NEP49_REGISTRY_ENTRY_(Key, Id, TestName) \
  Entry{Id, Nep49Clause::Key, &nep49_checks::check<Nep49Clause::Key>},
constexpr std::array<Entry, kNep49ClauseCount> kEntries{
    {EMM_NEP49_CLAUSES(EMM_NEP49_REGISTRY_ENTRY_)}};
#undef EMM_NEP49_REGISTRY_ENTRY_

// Hands the backend's driver to a handler that allocates through EMM, for one clause.
class DriverBinding {
 public:
  DriverBinding(nep49::BindDriverHook hook, const std::shared_ptr<Driver>& driver) : hook_(hook) {
    if (hook_ != nullptr) hook_(&driver);
  }
  ~DriverBinding() {
    if (hook_ != nullptr) hook_(nullptr);
  }
  DriverBinding(const DriverBinding&) = delete;
  DriverBinding& operator=(const DriverBinding&) = delete;

 private:
  nep49::BindDriverHook hook_;
};

}  // namespace

Nep49CheckFunction nep49_check_for(const Clause& clause) noexcept {
  for (const Entry& entry : kEntries) {
    if (entry.id == clause.id) return entry.body;
  }
  return nullptr;
}

ClauseResult evaluate_nep49(Nep49Subject& subject, const Clause& clause, Backend& backend,
                            const Exploration& exploration) {
  ClauseResult result;
  result.clause = &clause;
  result.backend = backend.kind();
  result.level = clause.level;
  const auto started = std::chrono::steady_clock::now();
  const Nep49CheckFunction body = nep49_check_for(clause);
  if (body == nullptr) {
    result.message = clause.tag("is not a NEP 49 handler clause");
    return result;
  }
  Nep49Run run(clause, subject, backend, exploration);
  try {
    DriverBinding binding(subject.bind_driver(), backend.driver());
    // The clause's property over generated sequences first (a failure comes with its shortest
    // sequence), then its fixed scenario as a regression sequence; both in processes of their
    // own, so that no clause leaves the handler's state changed for the next.
    const nep49_engine::Property* property = nullptr;
    for (const Entry& entry : kEntries) {
      if (entry.id == clause.id) property = nep49_engine::property_for(entry.key);
    }
    if (property != nullptr) {
      nep49_engine::explore(run, *property);
      nep49_engine::run_scenario(run, body);
    } else {
      body(run);
    }
    result.outcome = Outcome::pass;
  } catch (const nep49_engine::SequenceEnded& ended) {
    // The handler crashed or hung the process of one of the clause's sequences.
    result.outcome = ended.outcome();
    result.message = ended.what();
  } catch (const ClauseFailure& failure) {
    result.outcome = Outcome::fail;
    result.message = failure.what();
  } catch (const ClauseNotSupported& unsupported) {
    result.outcome = Outcome::not_supported;
    result.message = unsupported.what();
  } catch (...) {
    result.outcome = Outcome::fail;
    result.message = clause.tag("unexpected exception from the handler or the kit: " +
                                describe_current_exception());
  }
  result.notes = run.notes();
  result.properties = run.properties();
  result.reproducer = run.reproducer();
  result.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace emm::conformance
