// emm/conformance/clause_run.hpp — ClauseRun: one check body's run of one clause.
//
// Every plugin clause has exactly one check body (check_registry.hpp), which the GoogleTest
// suite, the Boost.Test suite and emm-certify all call with a ClauseRun. It holds:
//   * identity: the clause, the plugin under test (subject()), the backend it runs on;
//   * the host: the reference EMM system driving the plugin (host(): plugin_host.hpp);
//   * the verdict helpers: fail() throws ClauseFailure whose message always starts "[<ID>] ";
//     not_supported() is legal only for an optional clause whose capability is declared
//     absent — anywhere else it becomes a failure ("undeclared NotImplementedError is a
//     fail", spec §3); backend_cannot_run() is the backend's limit instead (a DEV clause on a
//     machine with one device): not_supported with a named note, whatever the level;
//   * records: figures for the certificate (record()), remarks (note()), and what the backend
//     could not observe ("DEFER-3: live cuMemHostAlloc blocks not observable on gpu"): the
//     backend's queries note their own gaps, unobservable() the rest.
// Observations of the machine (memory in use, driver blocks, invalid frees) come from
// backend() (backend.hpp).
//
//   EMM_CHECK(ALLOC_1) {
//     emm::Context& context = run.host().context();
//     auto p = context.memalloc(4096);
//     run.expect_eq(p->size(), std::size_t{4096}, "memalloc(4096)->size()");
//   }
//
// Not thread-safe: one ClauseRun belongs to one check body (which may start threads that use
// the driver and the context, but not the ClauseRun's verdict helpers).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/clause_result.hpp"
#include "emm/conformance/exploration.hpp"
#include "emm/conformance/plugin_host.hpp"
#include "emm/conformance/plugin_subject.hpp"
#include "emm/driver.hpp"

namespace emm::conformance {

// A check found a violation. what() starts "[<ID>] " and says what was expected and seen.
// ClauseFailure and ClauseNotSupported are verdicts, not errors: unlike every error of the kit
// they do not derive from emm::Error, so that plugin code catching emm::Error around a call
// (a retry after out of memory) cannot swallow a check's verdict thrown beneath it.
class ClauseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The clause does not apply: an optional capability declared absent (legal use only).
class ClauseNotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The driver REG-2 builds its version-probe instance over, and how to read what it was asked.
struct ProbeDriver {
  std::shared_ptr<Driver> driver;
  // The driver calls made so far, e.g. "cuMemAlloc x1"; "" when none.
  std::function<std::string()> calls_made;
};

struct RunOptions {
  // REG-2's driver. Default: a FakeDriver whose call counters must stay 0. The GoogleTest
  // flavour installs a testing::StrictMock<emm::MockDriver> with no expectations.
  std::function<ProbeDriver()> make_probe_driver;
  // The seed and number of the generated sequences a clause's property is checked over.
  Exploration exploration;
  // The plugin is a Python class (emm-certify --python): a failure's shortest sequence is shown
  // as Python (Reproducer::for_python).
  bool python_plugin = false;
};

// Concatenates its arguments with operator<< (messages without <format>).
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "0x7f00001000".
std::string hex(unsigned long long value);

class ClauseRun {
 public:
  ClauseRun(const Clause& clause, const PluginSubject& subject, Backend& backend,
            RunOptions options = {});
  ~ClauseRun();
  ClauseRun(const ClauseRun&) = delete;
  ClauseRun& operator=(const ClauseRun&) = delete;

  // --- identity ----------------------------------------------------------------------------
  const Clause& clause() const noexcept { return clause_; }
  const std::string& id() const noexcept { return clause_.id; }
  const PluginSubject& subject() const noexcept { return subject_; }
  const Capabilities& capabilities() const noexcept { return subject_.description.capabilities; }
  const RunOptions& options() const noexcept { return options_; }
  Backend& backend() const noexcept { return backend_; }
  Driver& driver() const noexcept { return *backend_.driver(); }
  PluginHost& host() noexcept { return *host_; }

  // --- verdict -------------------------------------------------------------------------------
  [[noreturn]] void fail(std::string_view what) const;
  template <class T, class U>
  void expect_eq(const T& seen, const U& expected, std::string_view what) const {
    if (!(seen == expected)) fail(str(what, ": expected ", expected, ", seen ", seen));
  }
  // Legal only for an optional clause whose capability is declared absent; otherwise fails.
  [[noreturn]] void not_supported(std::string_view reason) const;
  // For optional clauses: not_supported when the capability is declared absent.
  void require_capability() const;
  // The backend cannot run this clause at all (it needs two devices and has one): the outcome
  // is not_supported at any level, as for a backend that is not present (outcome.hpp); the
  // result carries the note "<ID>: <reason>" and the certificate's "not observable" list
  // "<ID>: <missing> not observable on <backend>", so that it is never read as a pass.
  [[noreturn]] void backend_cannot_run(std::string_view reason, std::string_view missing);

  // --- records -------------------------------------------------------------------------------
  void record(std::string key, std::string value);
  void record(std::string key, double value);
  void record(std::string key, std::size_t value);
  const std::vector<Property>& properties() const noexcept { return properties_; }
  // A remark for the certificate (e.g. "no block was shared: not a pool").
  void note(std::string_view text);
  // Records that this backend cannot observe `what`, so that part of the clause was not
  // checked here; the certificate shows "<ID>: <what> not observable on <backend>". Never a
  // silent skip. A backend query that answers std::nullopt records itself (Backend::unobserved):
  // this is for what no single query decides (a flag inside an answer, a device not there).
  void unobservable(std::string_view what);
  const std::vector<std::string>& notes() const noexcept { return notes_; }
  // What this run recorded, then what the backend's queries could not observe, once each.
  [[nodiscard]] std::vector<std::string> unobserved() const;
  // The shortest failing sequence the clause's exploration found (engine/explore.hpp).
  void set_reproducer(Reproducer reproducer) { reproducer_ = std::move(reproducer); }
  const std::optional<Reproducer>& reproducer() const noexcept { return reproducer_; }

 private:
  const Clause& clause_;
  PluginSubject subject_;
  Backend& backend_;
  RunOptions options_;
  std::unique_ptr<PluginHost> host_;
  std::vector<Property> properties_;
  std::vector<std::string> notes_;
  std::vector<std::string> unobserved_;
  std::optional<Reproducer> reproducer_;
};

// Describes the exception being handled: "emm::CudaDriverError: cuMemAlloc failed: ...".
// Call only inside a catch block.
std::string describe_current_exception();

}  // namespace emm::conformance
