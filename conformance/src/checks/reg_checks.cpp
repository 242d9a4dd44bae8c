// REG — registration and versioning (spec §4): the plugin's side of the version probe.
#include "checks/checks.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm::conformance::checks {
namespace {

// The default REG-2 driver: a fake whose call counters must all stay 0.
ProbeDriver counting_fake_driver() {
  auto fake = std::make_shared<FakeDriver>();
  return ProbeDriver{fake, [fake] {
                       std::string calls;
                       for (std::size_t i = 0; i < kDriverCallCount; ++i) {
                         const auto call = static_cast<DriverCall>(i);
                         if (const std::size_t n = fake->call_count(call); n > 0) {
                           if (!calls.empty()) calls += ", ";
                           calls += str(driver_call_name(call), " x", n);
                         }
                       }
                       return calls;
                     }};
}

std::unique_ptr<BaseCUDAMemoryManager> construct_probe(ClauseRun& run) {
  std::unique_ptr<BaseCUDAMemoryManager> probe;
  try {
    probe = run.subject().factory(nullptr);
  } catch (...) {
    run.fail(
        "constructing the plugin with a null context (the version probe set_memory_manager "
        "builds) threw " +
        describe_current_exception());
  }
  if (!probe) run.fail("the plugin factory returned null for a null context");
  return probe;
}

int read_version(ClauseRun& run, const BaseCUDAMemoryManager& manager, std::string_view which) {
  try {
    return manager.interface_version();
  } catch (...) {
    run.fail(str("interface_version() of ", which, " threw ", describe_current_exception()));
  }
}

}  // namespace

// REG-1: the plugin reports exactly 1, on the probe instance and on a context's instance, and
// the host's registration accepts it.
EMM_CHECK(REG_1) {
  {
    auto probe = construct_probe(run);
    run.expect_eq(read_version(run, *probe, "the version-probe instance (null context)"),
                  kSupportedInterfaceVersion,
                  "interface_version() of the version-probe instance (null context)");
  }
  try {
    Runtime host(run.backend().driver(), run.host().runtime_options());
    host.set_memory_manager(run.subject().factory);
  } catch (const InterfaceVersionError& error) {
    run.fail(str("set_memory_manager rejected the plugin: ", error.what()));
  } catch (...) {
    run.fail("set_memory_manager(plugin) threw " + describe_current_exception());
  }
  Context& context = run.host().context();
  run.expect_eq(read_version(run, context.memory_manager(), "the context's instance"),
                kSupportedInterfaceVersion, "interface_version() of the context's instance");
}

// REG-2: null-context construction works, makes no driver call, and can be repeated.
EMM_CHECK(REG_2) {
  ProbeDriver probe =
      run.options().make_probe_driver ? run.options().make_probe_driver() : counting_fake_driver();
  try {
    // The host's path: set_memory_manager builds a throw-away instance with a null context.
    Runtime host(probe.driver, run.host().runtime_options());
    host.set_memory_manager(run.subject().factory);
  } catch (...) {
    run.fail(
        "set_memory_manager (which constructs the plugin with a null context and reads "
        "interface_version()) threw " +
        describe_current_exception());
  }
  constexpr int kRounds = 100;
  for (int round = 0; round < kRounds; ++round) {
    auto instance = construct_probe(run);
    if (instance->context() != nullptr) {
      run.fail("context() of an instance constructed with a null context is not null");
    }
    (void)read_version(run, *instance, "an instance constructed with a null context");
    instance.reset();  // destruction must release everything, without a driver call
  }
  if (const std::string calls = probe.calls_made(); !calls.empty()) {
    run.fail(
        str("constructing, probing and destroying the plugin with a null context made "
            "driver calls (",
            calls, "); expected none: CUDA work belongs in initialize()"));
  }
  run.record("null_context_constructions", static_cast<std::size_t>(kRounds + 1));
}

}  // namespace emm::conformance::checks
