// Backend's non-virtual base records what a backend cannot observe: a query whose hook answers
// std::nullopt puts its one name in Backend::unobserved(), once, and the ClauseRun over that
// backend carries it onto the result, so a check needs no note of its own and no backend can
// leave a gap unsaid.
#include <gtest/gtest.h>

#include <algorithm>
#include <emm/conformance/backend.hpp>
#include <emm/conformance/catalogue.hpp>
#include <emm/conformance/clause_run.hpp>
#include <emm/conformance/evaluate.hpp>
#include <emm/errors.hpp>
#include <emm/fake/fake_driver.hpp>
#include <emm/numba_memory_manager.hpp>
#include <emm/plugin_declaration.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace emm::conformance {
namespace {

// A fake machine that observes device memory as the fake backend does, but cannot count host
// blocks, double frees, invalid accesses, frees or calls, nor tell a managed block's flag: what
// a gpu backend without its CUPTI ledger cannot see.
class HalfBlindBackend final : public Backend {
  BackendKind do_kind() const noexcept override { return BackendKind::fake; }
  const std::shared_ptr<Driver>& do_driver() const noexcept override { return driver_; }
  std::string do_device_name(int device) override { return fake_->device_get_name(device); }
  int do_device_count() override { return fake_->system()->device_count(); }
  std::size_t do_device_bytes_in_use() override { return fake_->device_bytes_in_use(); }
  std::size_t do_device_capacity(int device) override { return fake_->system()->capacity(device); }
  std::size_t do_device_bytes_in_use_on(int device) override {
    return fake_->system()->bytes_in_use(device);
  }
  std::size_t do_memory_slack() const noexcept override { return 0; }
  std::size_t do_memory_info_slack() const noexcept override { return 0; }
  std::optional<AddressRange> do_driver_block(CUdeviceptr pointer) override {
    return fake_->live_allocation_containing(pointer);
  }
  std::optional<int> do_block_device(CUdeviceptr pointer) override {
    return fake_->allocation_device(pointer);
  }
  std::optional<unsigned> do_managed_attach_flags(CUdeviceptr) override { return std::nullopt; }
  std::optional<std::size_t> do_host_allocation_count() override { return std::nullopt; }
  std::optional<std::size_t> do_host_registration_count() override { return std::nullopt; }
  std::optional<HostMemoryState> do_host_memory(const void* address) override {
    return host_memory_from_driver(*fake_, address);
  }
  std::optional<std::size_t> do_invalid_frees() override { return std::nullopt; }
  std::optional<std::size_t> do_invalid_accesses() override { return std::nullopt; }
  std::optional<std::size_t> do_driver_frees() override { return std::nullopt; }
  std::optional<std::size_t> do_driver_calls() override { return std::nullopt; }
  ImportResponse do_import_elsewhere(const ImportRequest&) override {
    throw Error("this test backend has no other process");
  }
  std::optional<ImportResponse> do_import_through_plugin(const ImportRequest&,
                                                         const ManagerFactory&) override {
    return std::nullopt;
  }

  std::shared_ptr<FakeDriver> fake_ = std::make_shared<FakeDriver>();
  std::shared_ptr<Driver> driver_ = fake_;
};

PluginSubject reference_subject() {
  const PluginDeclaration declaration{
      .name = "reference", .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true}};
  return PluginSubject{
      PluginDescription::from(complete_declaration<NumbaCUDAMemoryManager>(declaration)),
      [](Context* c) -> std::unique_ptr<BaseCUDAMemoryManager> {
        return std::make_unique<NumbaCUDAMemoryManager>(c);
      }};
}

const Clause& clause(const char* id) {
  const Clause* found = catalogue().find(id);
  if (found == nullptr) throw std::runtime_error(std::string(id) + " is not in the catalogue");
  return *found;
}

TEST(BackendUnobserved, EachObservationThatAnswersNothingIsNamedOnceInTheOrderAsked) {
  HalfBlindBackend backend;
  EXPECT_EQ(backend.invalid_frees(), std::nullopt);
  EXPECT_EQ(backend.host_allocation_count(), std::nullopt);
  EXPECT_EQ(backend.invalid_frees(), std::nullopt);
  EXPECT_EQ(backend.managed_attach_flags(0x1000), std::nullopt);
  // Answers are not gaps: no allocation holds 0x1000, and that is known.
  EXPECT_EQ(backend.driver_block(0x1000), std::nullopt);
  EXPECT_EQ(backend.block_device(0x1000), std::nullopt);
  EXPECT_EQ(backend.unobserved(),
            (std::vector<std::string>{"double frees in the driver", "live cuMemHostAlloc blocks",
                                      "the attach flag given to cuMemAllocManaged"}));
  backend.clear_unobserved();
  EXPECT_TRUE(backend.unobserved().empty());
}

TEST(BackendUnobserved, AnObservationAnsweredIsNotNoted) {
  const std::unique_ptr<Backend> fake = make_backend(BackendKind::fake);
  EXPECT_EQ(fake->invalid_frees(), std::optional<std::size_t>(0));
  EXPECT_EQ(fake->host_allocation_count(), std::optional<std::size_t>(0));
  EXPECT_EQ(fake->driver_calls().has_value(), true);
  EXPECT_TRUE(fake->unobserved().empty());
}

TEST(BackendUnobserved, ThreadsAskingAtOnceLeaveOneName) {
  HalfBlindBackend backend;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&backend] {
      for (int i = 0; i < 100; ++i) (void)backend.invalid_accesses();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(backend.unobserved(), std::vector<std::string>{"accesses outside allocations"});
}

TEST(BackendUnobserved, AClauseRunAddsTheBackendsGapsToItsOwnAndStartsWithoutAnEarlierRunsGaps) {
  HalfBlindBackend backend;
  const PluginSubject subject = reference_subject();
  (void)backend.driver_frees();  // before the run: not the run's gap
  ClauseRun run(clause("FIN-1"), subject, backend);
  run.unobservable("whether the portable flag reached cuMemHostAlloc");
  (void)backend.invalid_frees();
  run.unobservable("whether the portable flag reached cuMemHostAlloc");
  EXPECT_EQ(run.unobserved(),
            (std::vector<std::string>{"whether the portable flag reached cuMemHostAlloc",
                                      "double frees in the driver"}));
}

// End to end: FIN-1 asks for double frees and host blocks; where the backend cannot count them
// the clause still passes on what it could see, and its result says what it could not.
TEST(BackendUnobserved, AClausePassedOnAHalfBlindBackendSaysWhatWentUnchecked) {
  HalfBlindBackend backend;
  const ClauseResult result = evaluate(reference_subject(), clause("FIN-1"), backend);
  EXPECT_EQ(result.outcome, Outcome::pass) << result.message;
  EXPECT_NE(
      std::find(result.unobserved.begin(), result.unobserved.end(), "double frees in the driver"),
      result.unobserved.end())
      << testing::PrintToString(result.unobserved);
}

}  // namespace
}  // namespace emm::conformance
