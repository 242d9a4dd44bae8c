#include "emm/conformance/isolation.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <deque>

#include "emm/conformance/result_codec.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

constexpr std::size_t kTailBytes = 4096;

using Clock = std::chrono::steady_clock;

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The child: runs the work, sends the payload, and leaves without running any destructor or
// atexit handler of the plugin's (they belong to the parent's copy of the state).
[[noreturn]] void child_main(const std::function<std::string()>& work, int payload_fd,
                             int output_fd) {
  ::setpgid(0, 0);  // its own group, so a timeout also kills what it started
  ::dup2(output_fd, STDOUT_FILENO);
  ::dup2(output_fd, STDERR_FILENO);
  ::close(output_fd);
  std::string payload;
  try {
    payload = work();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "emm-certify child: the work threw: %s\n", error.what());
    std::fflush(stderr);
    ::_exit(3);
  } catch (...) {
    std::fprintf(stderr, "emm-certify child: the work threw a non-standard exception\n");
    std::fflush(stderr);
    ::_exit(3);
  }
  std::string framed = std::to_string(payload.size()) + "\n" + payload;
  write_all(payload_fd, framed);
  ::close(payload_fd);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(0);
}

struct Running {
  std::size_t index;
  pid_t pid;
  int payload_fd;
  int output_fd;
  Clock::time_point started;
  std::string payload;
  std::string output;
  bool payload_open = true;
  bool output_open = true;
};

// Reads what is available on `fd` into `into`; returns false at end of file.
bool drain(int fd, std::string& into, std::size_t keep_tail) {
  char buffer[65536];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  into.append(buffer, static_cast<std::size_t>(n));
  if (keep_tail > 0 && into.size() > 2 * keep_tail) into.erase(0, into.size() - keep_tail);
  return true;
}

bool complete_payload(const std::string& framed, std::string* payload) {
  const std::size_t newline = framed.find('\n');
  if (newline == std::string::npos) return false;
  std::size_t length = 0;
  const auto [end, error] = std::from_chars(framed.data(), framed.data() + newline, length);
  if (error != std::errc() || end != framed.data() + newline) return false;
  if (framed.size() - newline - 1 != length) return false;
  if (payload) *payload = framed.substr(newline + 1);
  return true;
}

ChildReport finish(Running& child, bool timed_out) {
  ChildReport report;
  if (timed_out) {
    ::kill(-child.pid, SIGKILL);
    ::kill(child.pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (child.payload_open) ::close(child.payload_fd);
  if (child.output_open) ::close(child.output_fd);
  report.duration_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - child.started).count();
  report.output_tail = child.output.size() > kTailBytes
                           ? child.output.substr(child.output.size() - kTailBytes)
                           : child.output;
  std::string payload;
  if (timed_out) {
    report.kind = ChildReport::Kind::timed_out;
  } else if (WIFSIGNALED(status)) {
    report.kind = ChildReport::Kind::crashed;
    report.signal = WTERMSIG(status);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
             complete_payload(child.payload, &payload)) {
    report.kind = ChildReport::Kind::finished;
    report.payload = std::move(payload);
  } else {
    report.kind = ChildReport::Kind::crashed;
    report.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return report;
}

}  // namespace

std::string describe_signal(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  const char* description = ::sigdescr_np(signal);
  std::string text = abbreviation != nullptr ? std::string("SIG") + abbreviation
                                             : "signal " + std::to_string(signal);
  if (description != nullptr) text += std::string(" (") + description + ")";
  return text;
}

std::vector<ChildReport> run_in_children(
    const std::vector<std::function<std::string()>>& work, std::size_t parallel,
    std::chrono::milliseconds timeout,
    const std::function<void(std::size_t, const ChildReport&)>& on_done) {
  std::vector<ChildReport> reports(work.size());
  std::deque<std::size_t> pending;
  for (std::size_t i = 0; i < work.size(); ++i) pending.push_back(i);
  std::vector<Running> running;
  parallel = std::max<std::size_t>(parallel, 1);
  std::fflush(stdout);
  std::fflush(stderr);

  while (!pending.empty() || !running.empty()) {
    while (!pending.empty() && running.size() < parallel) {
      const std::size_t index = pending.front();
      pending.pop_front();
      int payload_pipe[2];
      int output_pipe[2];
      if (::pipe2(payload_pipe, O_CLOEXEC) != 0) throw Error("pipe() failed");
      if (::pipe2(output_pipe, O_CLOEXEC) != 0) throw Error("pipe() failed");
      const pid_t pid = ::fork();
      if (pid < 0) throw Error(std::string("fork() failed: ") + std::strerror(errno));
      if (pid == 0) {
        ::close(payload_pipe[0]);
        ::close(output_pipe[0]);
        // Only the fds still open: a closed one's number may now be this child's own pipe.
        for (const Running& other : running) {
          if (other.payload_open) ::close(other.payload_fd);
          if (other.output_open) ::close(other.output_fd);
        }
        child_main(work[index], payload_pipe[1], output_pipe[1]);
      }
      ::setpgid(pid, pid);  // also in the parent, to win the race with the child's own call
      ::close(payload_pipe[1]);
      ::close(output_pipe[1]);
      running.push_back({index, pid, payload_pipe[0], output_pipe[0], Clock::now(), {}, {}});
    }

    std::vector<pollfd> fds;
    for (const Running& child : running) {
      if (child.payload_open) fds.push_back({child.payload_fd, POLLIN, 0});
      if (child.output_open) fds.push_back({child.output_fd, POLLIN, 0});
    }
    auto wait = timeout;
    const auto now = Clock::now();
    for (const Running& child : running) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(child.started + timeout - now);
      wait = std::min(wait, std::max(left, std::chrono::milliseconds(0)));
    }
    if (!fds.empty()) {
      const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()) + 1);
      if (ready < 0 && errno != EINTR) throw Error("poll() failed");
    }
    for (pollfd& fd : fds) {
      if (fd.revents == 0) continue;
      for (Running& child : running) {
        if (fd.fd == child.payload_fd && child.payload_open) {
          if (!drain(fd.fd, child.payload, 0)) {
            ::close(fd.fd);
            child.payload_open = false;
          }
        } else if (fd.fd == child.output_fd && child.output_open) {
          if (!drain(fd.fd, child.output, kTailBytes)) {
            ::close(fd.fd);
            child.output_open = false;
          }
        }
      }
    }
    for (auto it = running.begin(); it != running.end();) {
      const bool closed = !it->payload_open && !it->output_open;
      const bool late = Clock::now() >= it->started + timeout;
      if (closed || late) {
        reports[it->index] = finish(*it, !closed && late);
        if (on_done) on_done(it->index, reports[it->index]);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  return reports;
}

ClauseResult result_from_child(const ChildReport& report, const Clause& clause, BackendKind backend,
                               Level level, int timeout_s) {
  ClauseResult result;
  result.clause = &clause;
  result.backend = backend;
  result.level = level;
  result.duration_ms = report.duration_ms;
  std::string tail = report.output_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  const std::string output = tail.empty() ? "" : "; last output: " + tail;
  const std::string id = "[" + clause.id + "] ";
  switch (report.kind) {
    case ChildReport::Kind::finished: {
      std::optional<ClauseResult> decoded = decode_result(report.payload);
      if (decoded && decoded->clause == &clause && decoded->backend == backend) return *decoded;
      result.outcome = Outcome::crash;
      result.message = decoded ? id + "the run reported a result for " + decoded->clause->id +
                                     " on " + std::string(to_string(decoded->backend)) +
                                     ", not for this clause and backend"
                               : id + "the run reported a result the kit cannot read";
      break;
    }
    case ChildReport::Kind::timed_out:
      result.outcome = Outcome::timeout;
      result.message = id + "no answer within " + std::to_string(timeout_s) +
                       " s: the plugin hangs (the run was killed)" + output;
      break;
    case ChildReport::Kind::crashed:
      result.outcome = Outcome::crash;
      result.message =
          report.signal != 0
              ? id + "the plugin crashed the process: " + describe_signal(report.signal) + output
              : id + "the process ended (exit status " + std::to_string(report.exit_status) +
                    ") without reporting a result" + output;
      break;
  }
  return result;
}

}  // namespace emm::conformance
