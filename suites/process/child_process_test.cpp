// ChildProcess (child_process.hpp) with real children: how they end, the deadline, the wiring,
// the channels and the caps.
#include "emm/conformance/child_process.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <emm/conformance/testing/expect_throw.hpp>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "process_test_support.hpp"

namespace emm::conformance {
namespace {

using namespace std::chrono_literals;
using test::milliseconds_since;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StrEq;

ChildOptions with_result_channel() {
  ChildOptions options;
  options.result_channel = true;
  return options;
}

[[noreturn]] void block_forever() {
  for (;;) ::pause();
}

// --- how a child ends ----------------------------------------------------------------------------

TEST(ChildProcess, ExitStatusIsReported) {
  ChildProcess child = ChildProcess::fork([] { return 7; });
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.kind, ChildEnd::Kind::exited);
  EXPECT_EQ(end.exit_status, 7);
  EXPECT_EQ(end.describe(), "exited with status 7");
  EXPECT_FALSE(child.running());
  ASSERT_TRUE(child.end().has_value());
  EXPECT_EQ(child.end()->exit_status, 7);
}

TEST(ChildProcess, DeathBySignalIsReportedByName) {
  ChildProcess child = ChildProcess::fork([] {
    ::raise(SIGSEGV);
    return 0;
  });
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.kind, ChildEnd::Kind::signaled);
  EXPECT_EQ(end.signal, SIGSEGV);
  EXPECT_EQ(end.describe(), "was killed by SIGSEGV (Segmentation fault)");
}

TEST(ChildProcess, DescribeSignalNamesTheSignalAndItsMeaning) {
  EXPECT_EQ(describe_signal(SIGSEGV), "SIGSEGV (Segmentation fault)");
  EXPECT_EQ(describe_signal(SIGABRT), "SIGABRT (Aborted)");
  EXPECT_EQ(describe_signal(SIGKILL), "SIGKILL (Killed)");
  EXPECT_EQ(describe_signal(77), "signal 77");
}

TEST(ChildProcess, AnEscapingExceptionEndsTheChildWithTheDocumentedStatus) {
  ChildProcess child = ChildProcess::fork([]() -> int { throw std::runtime_error("boom"); });
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.kind, ChildEnd::Kind::exited);
  EXPECT_EQ(end.exit_status, kExitUncaughtException);
  EXPECT_EQ(child.output().text(), "emm child process: the forked body threw: boom\n");
}

TEST(ChildProcess, TheChildFlushesStdioButDoesNotRunTheParentsAtexitHandlers) {
  const std::string report = test::in_harness([] {
    std::atexit([] { std::fputs("the parent's atexit handler ran\n", stdout); });
    ChildProcess child = ChildProcess::fork([] {
      std::fputs("buffered, then flushed", stdout);
      return 0;
    });
    const std::string end = child.wait(5s).describe();  // before reading the output
    return end + ": " + child.output().text();
  });
  EXPECT_EQ(report, "exited with status 0: buffered, then flushed");
}

// --- the deadline --------------------------------------------------------------------------------

TEST(ChildProcess, DeadlineHoldsForAChildThatClosesAllItsDescriptorsAndBlocks) {
  ChildProcess child = ChildProcess::fork([]() -> int {
    ::syscall(SYS_close_range, 0u, UINT_MAX, 0u);
    block_forever();
  });
  const auto start = std::chrono::steady_clock::now();
  const ChildEnd end = child.wait(200ms);
  const double waited = milliseconds_since(start);
  EXPECT_EQ(end.kind, ChildEnd::Kind::timed_out);
  EXPECT_GE(waited, 195.0);
  EXPECT_LT(waited, 800.0) << "the deadline must hold";
  EXPECT_THAT(end.describe(), MatchesRegex("was still running after [0-9]+ ms and was killed"));
  EXPECT_EQ(::kill(child.pid(), 0), -1) << "reaped: no zombie left";
  EXPECT_EQ(errno, ESRCH);
}

// A seccomp filter that answers pidfd_open() with EPERM, as a sandbox might: the utility falls
// back to polling waitpid(WNOHANG).
bool refuse_pidfd_open() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0 &&
         ::syscall(SYS_pidfd_open, ::getpid(), 0) == -1 && errno == EPERM;
}

TEST(ChildProcess, WithoutPidfdOpenTheExitAndTheDeadlineStillHold) {
  const std::string report = test::in_harness([]() -> std::string {
    if (!refuse_pidfd_open()) return "no seccomp";
    ChildProcess quick = ChildProcess::fork([] {
      std::this_thread::sleep_for(30ms);
      return 3;
    });
    auto start = std::chrono::steady_clock::now();
    const std::string quick_end = quick.wait(5s).describe();
    const bool quick_in_time = milliseconds_since(start) < 1000;
    ChildProcess stuck = ChildProcess::fork([]() -> int {
      ::syscall(SYS_close_range, 0u, UINT_MAX, 0u);
      block_forever();
    });
    start = std::chrono::steady_clock::now();
    const ChildEnd stuck_end = stuck.wait(150ms);
    const double waited = milliseconds_since(start);
    return quick_end + (quick_in_time ? " in time" : " late") + "; " +
           (stuck_end.kind == ChildEnd::Kind::timed_out ? "timed out" : stuck_end.describe()) +
           (waited >= 145 && waited < 800 ? " at the deadline" : " off the deadline");
  });
  if (report == "no seccomp") GTEST_SKIP() << "seccomp filters cannot be installed here";
  EXPECT_EQ(report, "exited with status 3 in time; timed out at the deadline");
}

TEST(ChildProcess, KillEndsARunningChild) {
  ChildProcess child = ChildProcess::fork([]() -> int { block_forever(); });
  const ChildEnd end = child.kill();
  EXPECT_EQ(end.kind, ChildEnd::Kind::killed);
  EXPECT_EQ(end.describe(), "was killed by the caller");
  EXPECT_EQ(child.wait(1ms).kind, ChildEnd::Kind::killed) << "wait() after the end returns it";
}

TEST(ChildProcess, DestroyingARunningChildKillsAndReapsIt) {
  pid_t pid = 0;
  {
    ChildProcess child = ChildProcess::fork([]() -> int { block_forever(); });
    pid = child.pid();
  }
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1) << "already reaped";
  EXPECT_EQ(errno, ECHILD);
}

TEST(ChildProcess, WaitAnyReturnsWhenTheFirstChildEnds) {
  ChildProcess quick = ChildProcess::fork([] { return 0; });
  ChildProcess slow = ChildProcess::fork([]() -> int { block_forever(); });
  ChildProcess* both[] = {&quick, &slow};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_any(both, std::chrono::steady_clock::now() + 5s));
  EXPECT_LT(milliseconds_since(start), 2000.0);
  EXPECT_FALSE(quick.running());
  EXPECT_TRUE(slow.running());
  EXPECT_FALSE(wait_any(std::span<ChildProcess* const>(both + 1, 1),
                        std::chrono::steady_clock::now() + 20ms));
  EXPECT_EQ(slow.wait(std::chrono::steady_clock::now()).kind, ChildEnd::Kind::timed_out)
      << "a deadline already past kills";
}

// One thread serving several workers (the fake backend's side-by-side workers): wait_any_frame
// returns as soon as one of them has a whole answer, while the others go on running.
TEST(ChildProcess, WaitAnyFrameReturnsWhenOneChildHasAWholeAnswer) {
  ChildOptions options;
  options.result_channel = true;
  ChildProcess answering = ChildProcess::fork(
      []() -> int {
        send_result_frame("42");
        block_forever();
      },
      options);
  ChildProcess silent = ChildProcess::fork([]() -> int { block_forever(); }, options);
  ChildProcess* both[] = {&silent, &answering};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_any_frame(both, std::chrono::steady_clock::now() + 5s));
  EXPECT_LT(milliseconds_since(start), 2000.0);
  EXPECT_TRUE(answering.running()) << "a frame, not an end, woke it";
  const FrameWait wait = answering.wait_for_frame(std::chrono::steady_clock::now());
  EXPECT_EQ(wait.status, FrameWait::Status::frame);
  EXPECT_EQ(wait.payload, "42");
  EXPECT_FALSE(wait_any_frame(std::span<ChildProcess* const>(both, 1),
                              std::chrono::steady_clock::now() + 20ms))
      << "the silent child has neither an answer nor an end";
}

// --- SIGCHLD -------------------------------------------------------------------------------------

TEST(ChildProcess, SigchldIgnoredBeforeTheSpawnDoesNotLoseTheCrash) {
  const std::string report = test::in_harness([] {
    ::signal(SIGCHLD, SIG_IGN);  // what a plugin's static initialiser might do
    ChildProcess child = ChildProcess::fork([] {
      ::raise(SIGSEGV);
      return 0;
    });
    const std::string end = child.wait(5s).describe();
    struct sigaction now {};
    ::sigaction(SIGCHLD, nullptr, &now);
    return end + (now.sa_handler == SIG_DFL ? "; SIGCHLD is SIG_DFL" : "; SIGCHLD was left");
  });
  EXPECT_EQ(report, "was killed by SIGSEGV (Segmentation fault); SIGCHLD is SIG_DFL");
}

TEST(ChildProcess, SigchldIgnoredWhileTheChildRunsDoesNotLoseTheCrash) {
  const std::string report = test::in_harness([] {
    ChildProcess child = ChildProcess::fork([] {
      std::this_thread::sleep_for(100ms);
      ::raise(SIGSEGV);
      return 0;
    });
    ::signal(SIGCHLD, SIG_IGN);  // after the spawn, before the wait
    return child.wait(5s).describe();
  });
  EXPECT_EQ(report, "was killed by SIGSEGV (Segmentation fault)");
}

// --- wiring
// ----------------------------------------------------------------------------------------

TEST(ChildProcess, StdoutAndStderrArriveTogetherAndStdinIsDevNull) {
  ChildProcess child = ChildProcess::fork([] {
    char byte = 0;
    const ssize_t n = ::read(STDIN_FILENO, &byte, 1);
    std::printf("stdout %zd;", n);
    std::fflush(stdout);
    std::fprintf(stderr, "stderr");
    return 0;
  });
  EXPECT_EQ(child.wait(5s).exit_status, 0);
  EXPECT_EQ(child.output().text(), "stdout 0;stderr") << "stdin reads end of file at once";
}

TEST(ChildProcess, EveryOtherDescriptorIsClosedInTheChild) {
  const int extra = ::open("/dev/null", O_RDONLY);  // not close-on-exec: fork() would keep it
  ASSERT_GE(extra, 0);
  ChildProcess child = ChildProcess::fork(
      [extra] {
        std::string open;
        for (int fd = 0; fd < 1100; ++fd) {
          if (::fcntl(fd, F_GETFD) >= 0) open += std::to_string(fd) + " ";
        }
        send_result_frame(open + (::fcntl(extra, F_GETFD) < 0 ? "(extra closed)" : "(extra open)"));
        return 0;
      },
      [] {
        ChildOptions options;
        options.result_channel = true;
        options.command_channel = true;
        return options;
      }());
  child.close_command_channel();
  EXPECT_EQ(child.wait(5s).exit_status, 0);
  std::string problem;
  EXPECT_EQ(decode_frame(child.result_bytes(), problem), "0 1 2 1020 1021 (extra closed)")
      << problem;
  ::close(extra);
}

TEST(ChildProcess, AResultFrameReachesTheParent) {
  ChildProcess child = ChildProcess::fork(
      [] {
        send_result_frame(std::string("payload\0with bytes", 18));
        return 0;
      },
      with_result_channel());
  EXPECT_EQ(child.wait(5s).exit_status, 0);
  std::string problem;
  EXPECT_EQ(decode_frame(child.result_bytes(), problem), std::string("payload\0with bytes", 18));
  EXPECT_EQ(child.result_total_bytes(), kFrameHeaderSize + 18);
}

TEST(ChildProcess, AChildThatDup2sOverTheResultChannelIsStoppedBeforeItWrites) {
  ChildProcess child = ChildProcess::fork(
      [] {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, kResultChannelFd);  // what a plugin reusing descriptors might do
        send_result_frame("must not reach /dev/null");
        return 0;
      },
      with_result_channel());
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.kind, ChildEnd::Kind::exited);
  EXPECT_EQ(end.exit_status, kExitChannelLost);
  EXPECT_EQ(child.output().text(),
            "emm child process " + std::to_string(child.pid()) +
                ": fd 1020 is no longer the result channel the parent created: another file was "
                "put in its place (dup2 over it?); nothing is sent; exiting with status 121\n");
  EXPECT_EQ(child.result_total_bytes(), 0u);
}

TEST(ChildProcess, AChildThatClosedTheResultChannelSaysSo) {
  ChildProcess child = ChildProcess::fork(
      [] {
        ::close(kResultChannelFd);
        send_result_frame("lost");
        return 0;
      },
      with_result_channel());
  EXPECT_EQ(child.wait(5s).exit_status, kExitChannelLost);
  EXPECT_EQ(child.output().text(), "emm child process " + std::to_string(child.pid()) +
                                       ": the result channel (fd 1020) was closed (Bad file "
                                       "descriptor); nothing is sent; exiting with status 121\n");
}

TEST(ChildProcess, SendingWithoutAResultChannelSaysSo) {
  ChildProcess child = ChildProcess::fork([] {
    send_result_frame("nowhere");
    return 0;
  });
  EXPECT_EQ(child.wait(5s).exit_status, kExitChannelLost);
  EXPECT_THAT(child.output().text(),
              HasSubstr(": there is no result channel (the parent did not ask for one in "
                        "ChildOptions); exiting with status 121\n"));
}

TEST(ChildProcess, GarbageOnTheResultChannelIsReportedByTheFrameWait) {
  ChildProcess child = ChildProcess::fork(
      []() -> int {
        [[maybe_unused]] const ssize_t n = ::write(kResultChannelFd, "garbage!", 8);
        block_forever();
      },
      with_result_channel());
  const FrameWait got = child.wait_for_frame(std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(got.status, FrameWait::Status::garbage);
  EXPECT_EQ(got.problem, "not a frame: it starts with 67 61 72 62 61 67 65 21");
  EXPECT_TRUE(child.running()) << "the caller decides what garbage means";
}

TEST(ChildProcess, FrameWaitReportsTheEndOfAChildThatSentNothing) {
  ChildProcess child = ChildProcess::fork([] { return 4; }, with_result_channel());
  const FrameWait got = child.wait_for_frame(std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(got.status, FrameWait::Status::child_ended);
  ASSERT_TRUE(child.end().has_value());
  EXPECT_EQ(child.end()->exit_status, 4);
}

TEST(ChildProcess, FrameWaitReturnsAtTheDeadlineAndLeavesTheChildRunning) {
  ChildProcess child = ChildProcess::fork([]() -> int { block_forever(); }, with_result_channel());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(child.wait_for_frame(start + 100ms).status, FrameWait::Status::deadline);
  EXPECT_GE(milliseconds_since(start), 95.0);
  EXPECT_TRUE(child.running());
}

TEST(ChildProcess, ResultChannelBeyondItsLimitIsCountedNotKept) {
  ChildOptions options = with_result_channel();
  options.result_limit_bytes = 10;
  ChildProcess child = ChildProcess::fork(
      [] {
        send_result_frame(std::string(100, 'r'));
        return 0;
      },
      options);
  EXPECT_EQ(child.wait(5s).exit_status, 0);
  EXPECT_TRUE(child.result_overflowed());
  EXPECT_EQ(child.result_total_bytes(), kFrameHeaderSize + 100);
  EXPECT_EQ(child.result_bytes().size(), 10u);
}

// --- caps and limits -----------------------------------------------------------------------------

TEST(ChildProcess, AnOutputFloodIsCappedKeepingHeadAndTail) {
  ChildOptions options;
  options.output_keep_bytes = 16;
  constexpr std::size_t kFlood = 8 << 20;
  ChildProcess child = ChildProcess::fork(
      [] {
        auto put = [](std::string_view text) {
          while (!text.empty()) {
            const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
            if (n <= 0) return;
            text.remove_prefix(static_cast<std::size_t>(n));
          }
        };
        put("HEAD-0123456789ab");
        const std::string chunk(1 << 16, 'x');
        for (std::size_t i = 0; i < kFlood / chunk.size(); ++i) put(chunk);
        put("0123456789ab-TAIL");
        return 0;
      },
      options);
  EXPECT_EQ(child.wait(10s).exit_status, 0);
  EXPECT_EQ(child.output().total_bytes(), kFlood + 34);
  EXPECT_EQ(child.output().dropped_bytes(), kFlood + 2);
  EXPECT_EQ(child.output().text(), "HEAD-0123456789a\n[... " + std::to_string(kFlood + 2) +
                                       " bytes dropped ...]\n123456789ab-TAIL");
}

TEST(ChildProcess, TheMemoryLimitIsAppliedAndALargeAllocationFails) {
  ChildOptions options;
  options.memory_limit_bytes = std::size_t{256} << 20;
  ChildProcess child = ChildProcess::fork(
      [] {
        rlimit data{};
        ::getrlimit(RLIMIT_DATA, &data);
        if (data.rlim_cur != (rlim_t{256} << 20)) return 2;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        // The sanitizers' allocators die on a refused mapping instead of returning null, which
        // is why callers disable the limit under them (ChildOptions::memory_limit_bytes).
        return 0;
#else
        void* block = std::malloc(std::size_t{1} << 30);
        const bool refused = block == nullptr;
        std::free(block);
        return refused ? 0 : 1;
#endif
      },
      options);
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.kind, ChildEnd::Kind::exited);
  EXPECT_EQ(end.exit_status, 0) << "2: the limit was not applied; 1: 1 GiB was allocated";
}

// --- exec
// ------------------------------------------------------------------------------------------

TEST(ChildProcess, ExecRunsAProgramWithArgumentsAndExtraEnvironment) {
  ChildOptions options;
  options.environment = {{"EMM_PROCESS_TEST_VALUE", "hello from the parent"}};
  ChildProcess child = ChildProcess::exec(
      "/bin/sh", {"-c", "echo \"$0 $EMM_PROCESS_TEST_VALUE\"; exit 4", "argv0"}, options);
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.describe(), "exited with status 4");
  EXPECT_EQ(child.output().text(), "argv0 hello from the parent\n");
}

TEST(ChildProcess, ExecOfAMissingProgramThrowsNamingIt) {
  EMM_EXPECT_THROW(
      ProcessError, ChildProcess::exec("/nonexistent/emm-program", {}),
      StrEq("cannot start /nonexistent/emm-program: execve(): No such file or directory"));
}

TEST(ChildProcess, ExecDoesNotSearchThePath) {
  EMM_EXPECT_THROW(ProcessError, ChildProcess::exec("sh", {"-c", "exit 0"}),
                   StrEq("cannot start sh: execve(): No such file or directory"));
}

TEST(ChildProcess, StdinPipeCarriesWhatTheParentWrites) {
  ChildOptions options;
  options.stdin_pipe = true;
  ChildProcess child = ChildProcess::exec("/bin/cat", {}, options);
  EXPECT_TRUE(child.write_stdin("through "));
  EXPECT_TRUE(child.write_stdin("the pipe"));
  child.close_stdin();
  EXPECT_EQ(child.wait(5s).exit_status, 0);
  EXPECT_EQ(child.output().text(), "through the pipe");
}

TEST(ChildProcess, AChildThatDoesNotReadItsStdinNeitherBlocksNorKillsTheParent) {
  ChildOptions options;
  options.stdin_pipe = true;
  ChildProcess child = ChildProcess::exec("/bin/sh", {"-c", "exec 0<&-; sleep 0.05"}, options);
  child.write_stdin(std::string(4 << 20, 'z'));  // far more than a pipe holds
  child.close_stdin();
  const ChildEnd end = child.wait(5s);
  EXPECT_EQ(end.describe(), "exited with status 0") << "no SIGPIPE in the parent, no deadlock";
  EXPECT_FALSE(child.write_stdin("after the end"));
}

TEST(ChildProcess, WritingToAPipeTheChildWasNotGivenIsAnError) {
  ChildProcess child = ChildProcess::fork([] { return 0; });
  EMM_EXPECT_THROW(ProcessError, child.send_command("x"),
                   StrEq("the child was started without a command channel (command_channel); set "
                         "it in ChildOptions"));
  child.wait(5s);
}

TEST(ChildProcess, AnExecdChildFindsItsChannelsInTheEnvironment) {
  ChildOptions options;
  options.result_channel = true;
  options.command_channel = true;
  ChildProcess child = ChildProcess::exec(EMM_PROCESS_TEST_CHILD, {"channels"}, options);
  EXPECT_EQ(child.wait(5s).exit_status, 0);
  EXPECT_THAT(child.output().text(),
              MatchesRegex("result=1020:[0-9]+:[0-9]+;command=1021:[0-9]+:[0-9]+\n"));
}

TEST(ChildProcess, AnExecdChildWithoutChannelsHasNoChannelVariable) {
  const std::string report = test::in_harness([] {
    // This process's own channels (or a caller's attempt) must not reach a child without any.
    ::setenv(kChannelsEnvironmentVariable, "result=1020:1:2", 1);
    ChildOptions options;
    options.environment = {{kChannelsEnvironmentVariable, "command=1021:3:4"}};
    ChildProcess child = ChildProcess::exec(EMM_PROCESS_TEST_CHILD, {"channels"}, options);
    const std::string end = child.wait(5s).describe();  // before reading the output
    return end + ": " + child.output().text();
  });
  EXPECT_EQ(report, "exited with status 0: (unset)\n");
}

TEST(ChildProcess, ALongLivedWorkerAnswersOneCommandAtATime) {
  ChildOptions options;
  options.result_channel = true;
  options.command_channel = true;
  ChildProcess worker = ChildProcess::exec(EMM_PROCESS_TEST_CHILD, {"echo"}, options);
  for (const std::string& command :
       {std::string("one"), std::string("two"), std::string(200000, 'b')}) {
    ASSERT_TRUE(worker.send_command(command));
    const FrameWait answer = worker.wait_for_frame(std::chrono::steady_clock::now() + 5s);
    ASSERT_EQ(answer.status, FrameWait::Status::frame) << answer.problem;
    EXPECT_EQ(answer.payload, "echo:" + command);
    EXPECT_TRUE(worker.result_bytes().empty()) << "the frame was taken off the channel";
  }
  worker.close_command_channel();
  EXPECT_EQ(worker.wait(5s).describe(), "exited with status 0");
}

}  // namespace
}  // namespace emm::conformance
