// Crash isolation (spec §3): a crashing, aborting, terminating, exiting or hanging child is
// reported as such, never taking the parent down; results travel intact.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <emm/conformance/isolation.hpp>
#include <emm/conformance/result_codec.hpp>
#include <exception>
#include <thread>

namespace emm::conformance {
namespace {

using namespace std::chrono_literals;

const Clause& clause(const char* id) { return *catalogue().find(id); }

ChildReport run_one(std::function<std::string()> work, std::chrono::milliseconds timeout = 20s) {
  return run_in_children({std::move(work)}, 1, timeout)[0];
}

TEST(Isolation, FinishedChildReturnsItsPayload) {
  const ChildReport report = run_one([] { return std::string("payload\nwith\0bytes", 18); });
  EXPECT_EQ(report.kind, ChildReport::Kind::finished);
  EXPECT_EQ(report.payload, std::string("payload\nwith\0bytes", 18));
}

TEST(Isolation, SegfaultIsACrashNamingTheSignal) {
  const ChildReport report = run_one([]() -> std::string {
    std::raise(SIGSEGV);
    return "unreachable";
  });
  EXPECT_EQ(report.kind, ChildReport::Kind::crashed);
  EXPECT_EQ(report.signal, SIGSEGV);
  const ClauseResult r =
      result_from_child(report, clause("LIFE-5"), BackendKind::fake, Level::must, 60);
  EXPECT_EQ(r.outcome, Outcome::crash);
  EXPECT_EQ(r.message, "[LIFE-5] the plugin crashed the process: SIGSEGV (Segmentation fault)");
}

TEST(Isolation, StdTerminateIsACrashWithItsOutput) {
  const ChildReport report = run_one([]() -> std::string { std::terminate(); });
  EXPECT_EQ(report.kind, ChildReport::Kind::crashed);
  EXPECT_EQ(report.signal, SIGABRT);
  EXPECT_NE(report.output_tail.find("terminate called"), std::string::npos) << report.output_tail;
  const ClauseResult r =
      result_from_child(report, clause("FIN-1"), BackendKind::fake, Level::must, 60);
  EXPECT_EQ(r.message.rfind("[FIN-1] the plugin crashed the process: SIGABRT (Aborted); last "
                            "output: terminate called",
                            0),
            0u)
      << r.message;
}

TEST(Isolation, ExitWithoutAResultIsACrash) {
  const ChildReport report = run_one([]() -> std::string { std::exit(7); });
  EXPECT_EQ(report.kind, ChildReport::Kind::crashed);
  EXPECT_EQ(report.exit_status, 7);
  EXPECT_EQ(result_from_child(report, clause("REG-2"), BackendKind::gpu, Level::must, 60).message,
            "[REG-2] the process ended (exit status 7) without reporting a result");
}

TEST(Isolation, HangIsATimeoutAndTheChildIsKilled) {
  const ChildReport report = run_one(
      []() -> std::string {
        for (;;) std::this_thread::sleep_for(1s);
      },
      300ms);
  EXPECT_EQ(report.kind, ChildReport::Kind::timed_out);
  const ClauseResult r =
      result_from_child(report, clause("ALLOC-2"), BackendKind::fake, Level::must, 2);
  EXPECT_EQ(r.outcome, Outcome::timeout);
  EXPECT_EQ(r.message, "[ALLOC-2] no answer within 2 s: the plugin hangs (the run was killed)");
}

TEST(Isolation, RunsTwoAtATimeAndReportsEachInItsSlot) {
  std::vector<std::function<std::string()>> work;
  for (int i = 0; i < 5; ++i) work.push_back([i] { return std::to_string(i * i); });
  work.push_back([]() -> std::string { std::abort(); });
  std::size_t callbacks = 0;
  const auto reports =
      run_in_children(work, 2, 20s, [&](std::size_t, const ChildReport&) { ++callbacks; });
  ASSERT_EQ(reports.size(), 6u);
  EXPECT_EQ(callbacks, 6u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(reports[static_cast<std::size_t>(i)].kind, ChildReport::Kind::finished);
    EXPECT_EQ(reports[static_cast<std::size_t>(i)].payload, std::to_string(i * i));
  }
  EXPECT_EQ(reports[5].signal, SIGABRT);
}

TEST(Isolation, AFinishedChildsEncodedResultIsDecoded) {
  ClauseResult sent;
  sent.clause = &clause("INFO-2");
  sent.backend = BackendKind::fake;
  sent.outcome = Outcome::fail;
  sent.message = "[INFO-2] expected NotImplementedError";
  const ChildReport report = run_one([sent] { return encode_result(sent); });
  const ClauseResult r =
      result_from_child(report, clause("INFO-2"), BackendKind::fake, Level::must, 60);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message, sent.message);
}

TEST(Isolation, AResultForAnotherClauseIsNotAccepted) {
  ClauseResult forged;
  forged.clause = &clause("ALLOC-1");
  forged.backend = BackendKind::fake;
  forged.outcome = Outcome::pass;
  const ChildReport report = run_one([forged] { return encode_result(forged); });
  const ClauseResult r =
      result_from_child(report, clause("INFO-2"), BackendKind::fake, Level::must, 60);
  EXPECT_EQ(r.outcome, Outcome::crash);
  EXPECT_EQ(r.message,
            "[INFO-2] the run reported a result for ALLOC-1 on fake, not for this clause and "
            "backend");
}

}  // namespace
}  // namespace emm::conformance
