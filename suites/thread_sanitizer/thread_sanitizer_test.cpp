// The pieces of emm-certify's ThreadSanitizer path (runner/thread_sanitizer.hpp) on their own:
// a report in a clause's output becomes the clause's failure, trimmed to its two stacks; the
// dynamic section tells an instrumented library and the runtime it names.
#include "runner/thread_sanitizer.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "emm/conformance/catalogue.hpp"

namespace emm::conformance {
namespace {

// A report as libtsan.so.2 (GCC 12) prints it, with a frame line per stack beyond the eight kept.
std::string race_report(const std::string& pid = "123") {
  std::string text =
      "==================\n"
      "WARNING: ThreadSanitizer: data race (pid=" +
      pid +
      ")\n"
      "  Write of size 8 at 0x7b1400000908 by thread T2:\n";
  for (int i = 0; i < 10; ++i) {
    text += "    #" + std::to_string(i) + " frame" + std::to_string(i) +
            " src/counter.cpp:49 (libcounter_tsan.so+0x3c67)\n";
  }
  text +=
      "\n"
      "  Previous read of size 8 at 0x7b1400000908 by thread T1:\n"
      "    #0 count src/counter.cpp:49 (libcounter_tsan.so+0x3c78)\n"
      "    #1 emm::Context::memalloc(unsigned long) context.cpp:113 (libemm_reference.so.0+0x9)\n"
      "\n"
      "  Location is heap block of size 80 at 0x7b1400000870 allocated by main thread:\n"
      "    #0 operator new(unsigned long) tsan_new_delete.cpp:64 (libtsan.so.2+0x87323)\n"
      "\n"
      "  Thread T2 (tid=10036, running) created by main thread at:\n"
      "    #0 pthread_create tsan_interceptors_posix.cpp:1001 (libtsan.so.2+0x5e686)\n"
      "\n"
      "SUMMARY: ThreadSanitizer: data race src/counter.cpp:49 in count\n"
      "==================\n";
  return text;
}

ClauseResult alloc10(Outcome outcome, std::string message, std::string output) {
  ClauseResult result;
  result.clause = catalogue().find("ALLOC-10");
  result.outcome = outcome;
  result.message = std::move(message);
  result.output = std::move(output);
  return result;
}

TEST(ThreadSanitizerReports, ARaceFailsAClauseThatPassedWithBothStacksTrimmed) {
  ClauseResult result = alloc10(Outcome::pass, "", "clause text\n" + race_report());
  fail_on_thread_sanitizer_reports(result, "libcounter_tsan.so");
  EXPECT_EQ(result.outcome, Outcome::fail);
  const std::string& m = result.message;
  EXPECT_TRUE(
      m.starts_with("[ALLOC-10] ThreadSanitizer found a data race in the plugin "
                    "(libcounter_tsan.so) while the clause ran"))
      << m;
  EXPECT_NE(m.find("(its report, trimmed;"), std::string::npos) << m;
  EXPECT_NE(m.find("\n  Write of size 8 at 0x7b1400000908 by thread T2:\n    #0 frame0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("    #7 frame7"), std::string::npos) << m;
  EXPECT_EQ(m.find("#8 frame8"), std::string::npos) << "at most eight frames a stack:\n" << m;
  EXPECT_NE(m.find("    ...\n  Previous read of size 8"), std::string::npos) << m;
  EXPECT_NE(m.find("    #1 emm::Context::memalloc"), std::string::npos) << m;
  EXPECT_EQ(m.find("Location is"), std::string::npos) << "only the two accesses:\n" << m;
  EXPECT_EQ(m.find("pthread_create"), std::string::npos) << m;
  EXPECT_TRUE(m.ends_with("SUMMARY: ThreadSanitizer: data race src/counter.cpp:49 in count")) << m;
}

TEST(ThreadSanitizerReports, WhatTheClauseSawItselfFollowsWithoutTheOutputTail) {
  ClauseResult result =
      alloc10(Outcome::crash,
              "[ALLOC-10] the process ended (exit status 66) without reporting a result; last "
              "output: ...SUMMARY: ThreadSanitizer",
              race_report() + race_report("124"));
  fail_on_thread_sanitizer_reports(result, "libother.so");
  EXPECT_EQ(result.outcome, Outcome::fail);
  EXPECT_NE(result.message.find("in the plugin's process while the clause ran"), std::string::npos)
      << "no stack runs through libother.so:\n"
      << result.message;
  EXPECT_NE(result.message.find("(2 reports; this one trimmed"), std::string::npos)
      << result.message;
  EXPECT_TRUE(result.message.ends_with(
      "\nThe clause itself then saw (crash): [ALLOC-10] the process ended (exit status 66) "
      "without reporting a result"))
      << result.message;
}

TEST(ThreadSanitizerReports, ARaceIsShownBeforeAnotherKindAndOtherKindsFailToo) {
  const std::string leak =
      "WARNING: ThreadSanitizer: thread leak (pid=9)\n"
      "  Thread T3 (tid=7, finished) created by main thread at:\n"
      "    #0 pthread_create x.cpp:1 (libtsan.so.2+0x1)\n"
      "SUMMARY: ThreadSanitizer: thread leak x.cpp:1 in f\n";
  ClauseResult both = alloc10(Outcome::pass, "", leak + race_report());
  fail_on_thread_sanitizer_reports(both, "libcounter_tsan.so");
  EXPECT_NE(both.message.find("found a data race"), std::string::npos) << both.message;

  ClauseResult alone = alloc10(Outcome::pass, "", leak);
  fail_on_thread_sanitizer_reports(alone, "libcounter_tsan.so");
  EXPECT_EQ(alone.outcome, Outcome::fail);
  EXPECT_TRUE(
      alone.message.starts_with("[ALLOC-10] ThreadSanitizer found a thread leak in the "
                                "plugin's process"))
      << alone.message;
}

TEST(ThreadSanitizerReports, NoReportChangesNothing) {
  ClauseResult result = alloc10(Outcome::fail, "[ALLOC-10] overlap", "ThreadSanitizer: 0 races\n");
  fail_on_thread_sanitizer_reports(result, "libcounter_tsan.so");
  EXPECT_EQ(result.outcome, Outcome::fail);
  EXPECT_EQ(result.message, "[ALLOC-10] overlap");
}

TEST(ThreadSanitizerNeed, TellsAnInstrumentedLibraryAndTheRuntimeItNames) {
  // Built with -fno-sanitize=all (under the tsan preset it still names the runtime: the preset
  // links every library with -fsanitize=thread).
  const ThreadSanitizerNeed plain = thread_sanitizer_need(EMM_PLAIN_LIBRARY);
  EXPECT_TRUE(plain.problem.empty()) << plain.problem;
  EXPECT_FALSE(plain.instrumented);
#ifdef EMM_TSAN_LIBRARY
  const ThreadSanitizerNeed instrumented = thread_sanitizer_need(EMM_TSAN_LIBRARY);
  EXPECT_TRUE(instrumented.problem.empty()) << instrumented.problem;
  EXPECT_TRUE(instrumented.instrumented);
#if defined(__GNUC__) && !defined(__clang__)
  EXPECT_TRUE(instrumented.runtime.starts_with("libtsan.so")) << instrumented.runtime;
#endif
#endif
}

TEST(ThreadSanitizerNeed, SaysWhyAFileIsNoLibrary) {
  const std::string path = ::testing::TempDir() + "not_a_library.so";
  std::ofstream(path) << "not ELF";
  const ThreadSanitizerNeed need = thread_sanitizer_need(path);
  EXPECT_EQ(need.problem, "it is not an ELF file");
  EXPECT_FALSE(need.instrumented);
  EXPECT_NE(thread_sanitizer_need(path + ".missing").problem.find("it cannot be read"),
            std::string::npos);
}

}  // namespace
}  // namespace emm::conformance
