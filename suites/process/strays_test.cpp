// What a child leaves behind (child_process.hpp): grandchildren holding its pipes, detached
// grandchildren, and a parent that starts with 0–2 closed. Each runs in a harness process
// (process_test_support.hpp), which may become a subreaper or close descriptors freely.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <filesystem>
#include <string>

#include "emm/conformance/child_process.hpp"
#include "process_test_support.hpp"

namespace emm::conformance {
namespace {

using namespace std::chrono_literals;
using test::milliseconds_since;

ChildOptions with_result_channel() {
  ChildOptions options;
  options.result_channel = true;
  return options;
}

// Forks a grandchild that sleeps holding every descriptor it inherited; `detach`: it first
// moves to a session of its own (setsid) and says so before its parent goes on. The child
// sends the grandchild's pid and exits 0.
ChildProcess spawn_with_grandchild(bool detach) {
  return ChildProcess::fork(
      [detach] {
        int ready[2];
        if (::pipe(ready) != 0) return 10;
        const pid_t grandchild = ::fork();
        if (grandchild == 0) {
          if (detach) ::setsid();
          [[maybe_unused]] const ssize_t n = ::write(ready[1], "r", 1);
          ::sleep(30);
          ::_exit(0);
        }
        char byte = 0;
        if (::read(ready[0], &byte, 1) != 1) return 11;
        std::puts("the child is done");
        send_result_frame(std::to_string(grandchild));
        return 0;
      },
      with_result_channel());
}

pid_t grandchild_of(const ChildProcess& child) {
  std::string problem;
  const auto sent = decode_frame(child.result_bytes(), problem);
  return sent ? static_cast<pid_t>(std::stol(*sent)) : -1;
}

std::string how_it_ended(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return "not a child here";
  if (WIFSIGNALED(status)) return describe_signal(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

TEST(Strays, AGrandchildHoldingThePipesDoesNotDelayTheWaitAndDiesWithTheGroup) {
  const std::string report = test::in_harness([] {
    become_child_subreaper();  // so the orphaned grandchild can be waited for here
    ChildProcess child = spawn_with_grandchild(false);
    const auto start = std::chrono::steady_clock::now();
    const ChildEnd end = child.wait(10s);
    const double waited = milliseconds_since(start);
    return end.describe() + (waited < 1000 ? " at once" : " late") +
           "; output: " + child.output().text() +
           "grandchild: " + how_it_ended(grandchild_of(child));
  });
  EXPECT_EQ(report,
            "exited with status 0 at once; output: the child is done\n"
            "grandchild: SIGKILL (Killed)");
}

TEST(Strays, ADetachedGrandchildIsKilledByTheStraySweep) {
  const std::string report = test::in_harness([] {
    become_child_subreaper();
    ChildProcess child = spawn_with_grandchild(true);
    const auto start = std::chrono::steady_clock::now();
    const std::string end = child.wait(10s).describe();
    const double waited = milliseconds_since(start);
    const pid_t grandchild = grandchild_of(child);
    const bool alive_before = ::kill(grandchild, 0) == 0;
    const StraySweep sweep = kill_stray_children(2s);
    const bool gone_after = ::kill(grandchild, 0) == -1 && errno == ESRCH;
    const bool swept_it = sweep.killed == std::vector<pid_t>{grandchild};
    return end + (waited < 1000 ? " at once" : " late") +
           (alive_before ? "; it outlived its group" : "; it died with its group") +
           (swept_it ? "; the sweep killed it" : "; the sweep missed it") +
           (gone_after ? " and it is gone" : " and it is still there") + "; left " +
           std::to_string(sweep.left.size());
  });
  EXPECT_EQ(report,
            "exited with status 0 at once; it outlived its group; the sweep killed it and it is "
            "gone; left 0");
}

TEST(Strays, TheSweepLeavesTrackedChildrenAlone) {
  const std::string report = test::in_harness([] {
    become_child_subreaper();
    ChildProcess tracked = ChildProcess::fork([]() -> int {
      for (;;) ::pause();
    });
    const pid_t untracked = ::fork();
    if (untracked == 0) {
      ::pause();
      ::_exit(0);
    }
    const StraySweep sweep = kill_stray_children(2s);
    const bool only_untracked = sweep.killed == std::vector<pid_t>{untracked};
    const std::string still = tracked.running() ? "running" : "ended";
    return std::string(only_untracked ? "swept the untracked child" : "swept the wrong ones") +
           "; the tracked one is " + still + ", then " + tracked.kill().describe();
  });
  EXPECT_EQ(report,
            "swept the untracked child; the tracked one is running, then was killed by the "
            "caller");
}

TEST(Strays, NoPipeLandsOnDescriptorsZeroToTwoWhenTheParentStartsWithThemClosed) {
  const std::string report = test::in_harness([] {
    ::close(STDIN_FILENO);
    ::close(STDOUT_FILENO);
    ::close(STDERR_FILENO);
    ChildOptions options;
    options.result_channel = true;
    options.command_channel = true;
    ChildProcess child = ChildProcess::fork(
        [] {
          std::optional<std::string> command = read_command_frame();
          char byte = 0;
          const ssize_t from_stdin = ::read(STDIN_FILENO, &byte, 1);
          [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, "out;", 4);
          n = ::write(STDERR_FILENO, "err", 3);
          send_result_frame((command ? *command : "no command") + ", stdin read " +
                            std::to_string(from_stdin));
          return 0;
        },
        options);
    child.send_command("command");
    child.close_command_channel();
    const std::string end = child.wait(5s).describe();
    std::string problem;
    const auto frame = decode_frame(child.result_bytes(), problem);
    std::string standard;
    for (int fd = 0; fd <= 2; ++fd) {
      std::error_code error;
      standard += ' ';
      standard +=
          std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), error).string();
    }
    return end + "; output " + child.output().text() + "; frame " + frame.value_or(problem) +
           "; 0-2 are" + standard;
  });
  EXPECT_EQ(report,
            "exited with status 0; output out;err; frame command, stdin read 0; 0-2 are "
            "/dev/null /dev/null /dev/null");
}

}  // namespace
}  // namespace emm::conformance
