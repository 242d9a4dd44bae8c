// ChildProcess (child_process.hpp): spawning, wiring, waiting and killing.
//
// Between fork() and exec() (or the fork body) the child makes only async-signal-safe calls:
// everything it needs (argv, envp, descriptors) is prepared before fork(). A setup step that
// fails in the child is reported through a close-on-exec pipe, so the parent can throw a
// ProcessError that says which step failed and why; end of file on that pipe means the child
// reached exec (or its body).
#include "emm/conformance/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "child_channels.hpp"
#include "child_registry.hpp"
#include "interruption.hpp"

extern char** environ;

namespace emm::conformance {
namespace detail {

// A parent → child pipe's queue: bytes not yet written, from `written` on.
struct Outbox {
  int fd = -1;
  bool present = false;  // the child was started with this pipe
  std::string pending;
  std::size_t written = 0;
  bool close_when_written = false;
};

struct ChildState {
  explicit ChildState(const ChildOptions& options)
      : output_keep(options.output_keep_bytes),
        output(options.output_keep_bytes),
        result_limit(options.result_limit_bytes) {}

  pid_t pid = -1;
  int pidfd = -1;
  Outbox stdin_pipe;
  Outbox command;
  int output_fd = -1;
  int result_fd = -1;
  std::size_t output_keep = 0;
  CapturedOutput output;
  std::string result;
  std::size_t result_total = 0;
  std::size_t result_limit = 0;
  bool result_overflow = false;
  ChildProcess::Clock::time_point started;
  std::optional<ChildEnd> end;
};

}  // namespace detail

namespace {

using detail::ChildState;
using detail::Outbox;
using detail::PipeIdentity;
using Clock = ChildProcess::Clock;

// While the child is alive at most this much is read from one pipe per poll round, so a child
// flooding one pipe cannot starve the others; after the reap, at most this much more is taken
// (a detached grandchild may still be writing).
constexpr std::size_t kReadBudget = std::size_t{4} << 20;
// Without a pidfd the parent looks for the child's exit this often.
constexpr int kFallbackPollMs = 10;

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw ProcessError(what + " failed: " + std::strerror(errno));
}

// A pipe never lands on 0–2: those would become the child's stdio by accident, or a later
// open() in the parent would take them. Opening /dev/null on a closed one fills it (open()
// returns the lowest free number, and the loop goes upwards).
void ensure_standard_descriptors_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", O_RDWR);
    if (opened < 0)
      throw_errno("opening /dev/null for the closed descriptor " + std::to_string(fd));
    if (opened != fd) {
      ::close(opened);
      throw ProcessError("descriptor " + std::to_string(fd) +
                         " is closed and /dev/null could not be opened there");
    }
  }
}

struct Pipe {
  int read = -1;
  int write = -1;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2()");
  return {fds[0], fds[1]};
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) throw_errno("fcntl(O_NONBLOCK)");
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : static_cast<int>(fd);  // ENOSYS, EPERM (seccomp): poll with a timeout
#else
  (void)pid;
  return -1;
#endif
}

// write() that turns a closed reader into EPIPE instead of a SIGPIPE that kills the parent:
// SIGPIPE is blocked in this thread around the write and a SIGPIPE it raised is consumed.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_signal, previous, pending;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  const ssize_t n = ::write(fd, data, size);
  const int error = errno;
  if (n < 0 && error == EPIPE && !was_pending) {
    const timespec now{0, 0};
    while (::sigtimedwait(&pipe_signal, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = error;
  return n;
}

// --- the child between fork() and exec() / its body -------------------------------------------

enum class Stage : int {
  setpgid,
  rlimit_data,
  rlimit_nofile,
  move_descriptor,
  dup2_stdio,
  dup2_channel,
  close_descriptors,
  execve,
};

// What each Stage was doing, in Stage's order.
constexpr std::array<const char*, 8> kStageNames{
    "setpgid()",
    "setrlimit(RLIMIT_DATA)",
    "raising RLIMIT_NOFILE to hold the channel descriptors",
    "fcntl(F_DUPFD)",
    "dup2() onto stdin/stdout/stderr",
    "dup2() onto the channel descriptors",
    "closing the inherited descriptors",
    "execve()"};
static_assert(kStageNames.size() == static_cast<std::size_t>(Stage::execve) + 1,
              "one name per Stage");

const char* stage_name(Stage stage) {
  const auto index = static_cast<std::size_t>(stage);
  return index < kStageNames.size() ? kStageNames[index] : "setup";
}

struct SetupFailure {
  int stage;
  int error;
};

// Everything the child needs, prepared before fork().
struct ChildPlan {
  int stdin_source = -1;    // stdin pipe's read end or /dev/null
  int output_sink = -1;     // output pipe's write end
  int result_sink = -1;     // result pipe's write end, or -1
  int command_source = -1;  // command pipe's read end, or -1
  int report = -1;          // setup-failure pipe's write end (close-on-exec)
  std::size_t memory_limit = 0;
  pid_t parent = 0;              // the forking process
  bool die_with_parent = false;  // forked by the parent's main thread (see set_up_child)
  // exec
  const char* program = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

[[noreturn]] void fail_setup(int report, Stage stage) {
  const SetupFailure failure{static_cast<int>(stage), errno};
  [[maybe_unused]] const ssize_t ignored = ::write(report, &failure, sizeof failure);
  ::_exit(127);
}

bool is_channel_fd(int fd) { return fd == kResultChannelFd || fd == kCommandChannelFd; }

// A copy of `fd` on a number that is not a channel descriptor (the copy keeps `fd` open).
int move_off_channels(int fd, int report, bool cloexec) {
  const int command = cloexec ? F_DUPFD_CLOEXEC : F_DUPFD;
  int moved = ::fcntl(fd, command, 3);
  if (moved >= 0 && is_channel_fd(moved)) moved = ::fcntl(fd, command, kCommandChannelFd + 1);
  if (moved < 0) fail_setup(report, Stage::move_descriptor);
  return moved;
}

int raw_close_range(unsigned first, unsigned last) {
#ifdef SYS_close_range
  return static_cast<int>(::syscall(SYS_close_range, first, last, 0u));
#else
  errno = ENOSYS;
  return -1;
#endif
}

// Closes every descriptor but those in keep[0..count) (sorted, ascending).
void close_all_except(const int* keep, int count, int report) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const long highest = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > INT_MAX
                           ? INT_MAX
                           : static_cast<long>(limit.rlim_cur) - 1;
  long first = 0;
  for (int i = 0; i <= count; ++i) {
    const long last = i < count ? keep[i] - 1L : static_cast<long>(UINT_MAX);
    if (first <= last) {
      if (raw_close_range(static_cast<unsigned>(first), static_cast<unsigned>(last)) != 0) {
        if (errno != ENOSYS && errno != EINVAL) fail_setup(report, Stage::close_descriptors);
        for (long fd = first; fd <= std::min(last, highest); ++fd) ::close(static_cast<int>(fd));
      }
    }
    if (i < count) first = keep[i] + 1L;
  }
}

// Wires the child's descriptors, limits and process group. Async-signal-safe.
void set_up_child(ChildPlan& plan) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(SIGCHLD, &default_action, nullptr);
  ::sigaction(SIGPIPE, &default_action, nullptr);
  reset_interruption_in_child();  // SIGINT, SIGTERM, SIGHUP end the child again

  if (::setpgid(0, 0) != 0) fail_setup(plan.report, Stage::setpgid);
  // A child forked by the main thread dies with its parent: a certifier killed by its caller (a
  // deadline, a CI job's timeout) must not leave a worker spinning in a hung plugin. The kernel
  // sends the signal when the forking *thread* ends, so a child of another thread is left to its
  // parent's own clean-up (the scheduler's, which kills its workers' groups).
  if (plan.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != plan.parent) ::_exit(127);  // the parent died before the line above
  }
  if (plan.memory_limit != 0) {
    const rlimit data{plan.memory_limit, plan.memory_limit};
    if (::setrlimit(RLIMIT_DATA, &data) != 0) fail_setup(plan.report, Stage::rlimit_data);
  }
  const bool channels = plan.result_sink >= 0 || plan.command_source >= 0;
  if (channels) {
    rlimit files{};
    ::getrlimit(RLIMIT_NOFILE, &files);
    const rlim_t wanted = kCommandChannelFd + 3;  // the channels, and room to move around them
    if (files.rlim_cur < wanted) {
      if (files.rlim_max != RLIM_INFINITY && files.rlim_max < wanted) {
        errno = EMFILE;
        fail_setup(plan.report, Stage::rlimit_nofile);
      }
      files.rlim_cur = wanted;
      if (::setrlimit(RLIMIT_NOFILE, &files) != 0) fail_setup(plan.report, Stage::rlimit_nofile);
    }
  }
  if (is_channel_fd(plan.report)) plan.report = move_off_channels(plan.report, plan.report, true);

  if (::dup2(plan.stdin_source, STDIN_FILENO) < 0 || ::dup2(plan.output_sink, STDOUT_FILENO) < 0 ||
      ::dup2(plan.output_sink, STDERR_FILENO) < 0) {
    fail_setup(plan.report, Stage::dup2_stdio);
  }
  // The command pipe must not sit where the result pipe is about to go.
  if (plan.command_source == kResultChannelFd && plan.result_sink >= 0) {
    plan.command_source = move_off_channels(plan.command_source, plan.report, false);
  }
  auto place = [&plan](int fd, int target) {
    if (fd < 0) return;
    if (fd == target) {
      if (::fcntl(fd, F_SETFD, 0) != 0) fail_setup(plan.report, Stage::dup2_channel);
    } else if (::dup2(fd, target) < 0) {
      fail_setup(plan.report, Stage::dup2_channel);
    }
  };
  place(plan.result_sink, kResultChannelFd);
  place(plan.command_source, kCommandChannelFd);

  int keep[6];
  int count = 0;
  keep[count++] = STDIN_FILENO;
  keep[count++] = STDOUT_FILENO;
  keep[count++] = STDERR_FILENO;
  if (plan.result_sink >= 0) keep[count++] = kResultChannelFd;
  if (plan.command_source >= 0) keep[count++] = kCommandChannelFd;
  keep[count++] = plan.report;
  std::sort(keep, keep + count);
  close_all_except(keep, count, plan.report);
}

// --- the parent's side ---------------------------------------------------------------------------

// Reads what `fd` holds now (up to `budget` bytes) into `sink`; closes it at end of file or on an
// error.
template <class Sink>
void read_available(int& fd, std::size_t budget, Sink&& sink) {
  char buffer[65536];
  std::size_t taken = 0;
  while (fd >= 0 && taken < budget) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      sink(std::string_view(buffer, static_cast<std::size_t>(n)));
      taken += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(fd);
  }
}

void read_output(ChildState& state, std::size_t budget) {
  read_available(state.output_fd, budget,
                 [&state](std::string_view bytes) { state.output.append(bytes); });
}

void read_result(ChildState& state, std::size_t budget) {
  read_available(state.result_fd, budget, [&state](std::string_view bytes) {
    state.result_total += bytes.size();
    const std::size_t room = state.result_limit - std::min(state.result_limit, state.result.size());
    if (bytes.size() > room) state.result_overflow = true;
    state.result.append(bytes.substr(0, std::min(room, bytes.size())));
  });
}

// Writes what the outbox holds without blocking; a reader that is gone drops the rest.
void flush(Outbox& box) {
  while (box.fd >= 0 && box.written < box.pending.size()) {
    const ssize_t n = write_without_sigpipe(box.fd, box.pending.data() + box.written,
                                            box.pending.size() - box.written);
    if (n > 0) {
      box.written += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(box.fd);  // EPIPE: the child closed its end or ended
    box.pending.clear();
    box.written = 0;
  }
  if (box.written == box.pending.size()) {
    box.pending.clear();
    box.written = 0;
    if (box.close_when_written) close_fd(box.fd);
  }
}

bool queue(Outbox& box, std::string_view bytes, const char* option) {
  if (!box.present) {
    throw ProcessError(std::string("the child was started without ") + option +
                       "; set it in ChildOptions");
  }
  if (box.fd < 0) return false;
  box.pending.append(bytes);
  flush(box);
  return box.fd >= 0;
}

void close_after_queue(Outbox& box) {
  box.close_when_written = true;
  flush(box);
}

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// The child was reaped with `end`: takes what is left in its pipes and closes them.
void finish(ChildState& state, ChildEnd end) {
  end.duration_ms = elapsed_ms(state.started);
  read_output(state, kReadBudget);
  read_result(state, kReadBudget);
  close_fd(state.output_fd);
  close_fd(state.result_fd);
  close_fd(state.stdin_pipe.fd);
  close_fd(state.command.fd);
  close_fd(state.pidfd);
  state.stdin_pipe.pending.clear();
  state.command.pending.clear();
  detail::ChildRegistry::instance().forget(state.pid);
  state.end = end;
}

ChildEnd end_from_status(int status) {
  ChildEnd end;
  if (WIFEXITED(status)) {
    end.kind = ChildEnd::Kind::exited;
    end.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    end.kind = ChildEnd::Kind::signaled;
    end.signal = WTERMSIG(status);
  }
  return end;
}

// Blocks until `pid` is reaped: its status, or nullopt when another waiter took it.
std::optional<int> reap(pid_t pid) {
  int status = 0;
  for (;;) {
    const pid_t reaped = ::waitpid(pid, &status, 0);
    if (reaped == pid) return status;
    if (reaped < 0 && errno == EINTR) continue;
    return std::nullopt;
  }
}

// Reaps the child if it has ended. Its process group is killed first, while the zombie still
// holds the group's number (so no new group can have taken it): grandchildren that stayed in
// the group do not outlive it.
void reap_if_ended(ChildState& state) {
  if (state.end) return;
  siginfo_t info{};
  const int waited =
      ::waitid(P_PID, static_cast<id_t>(state.pid), &info, WEXITED | WNOHANG | WNOWAIT);
  if (waited < 0) {
    if (errno == EINTR) return;
    finish(state, ChildEnd{});  // ECHILD: someone else reaped it
    return;
  }
  if (info.si_pid == 0) return;
  ::kill(-state.pid, SIGKILL);
  const std::optional<int> status = reap(state.pid);
  finish(state, status ? end_from_status(*status) : ChildEnd{});
}

// SIGKILLs the child and its group and reaps it; `kind` unless it had ended by itself.
void kill_and_reap(ChildState& state, ChildEnd::Kind kind) {
  reap_if_ended(state);
  if (state.end) return;
  ::kill(-state.pid, SIGKILL);
  ::kill(state.pid, SIGKILL);  // in case it left its group
  const std::optional<int> status = reap(state.pid);
  ChildEnd end;
  end.kind = status ? kind : ChildEnd::Kind::lost;
  finish(state, end);
}

enum class Role { pidfd, output, result, stdin_pipe, command };

// Services the children's pipes until done() or the deadline; reaps those that end.
template <class Done>
bool pump(std::span<ChildState* const> states, Clock::time_point deadline, Done&& done) {
  std::vector<pollfd> fds;
  std::vector<std::pair<ChildState*, Role>> owners;
  for (;;) {
    for (ChildState* state : states) reap_if_ended(*state);
    if (done()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (interrupting_signal() != 0) return false;  // the caller ends the run (interruption.hpp)

    fds.clear();
    owners.clear();
    bool tick = false;
    auto add = [&](ChildState* state, int fd, short events, Role role) {
      fds.push_back({fd, events, 0});
      owners.emplace_back(state, role);
    };
    for (ChildState* state : states) {
      if (state->end) continue;
      if (state->pidfd >= 0) {
        add(state, state->pidfd, POLLIN, Role::pidfd);
      } else {
        tick = true;
      }
      if (state->output_fd >= 0) add(state, state->output_fd, POLLIN, Role::output);
      if (state->result_fd >= 0) add(state, state->result_fd, POLLIN, Role::result);
      if (state->stdin_pipe.fd >= 0 && !state->stdin_pipe.pending.empty()) {
        add(state, state->stdin_pipe.fd, POLLOUT, Role::stdin_pipe);
      }
      if (state->command.fd >= 0 && !state->command.pending.empty()) {
        add(state, state->command.fd, POLLOUT, Role::command);
      }
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    int timeout = static_cast<int>(std::min<long long>(left, INT_MAX));
    if (tick) timeout = std::min(timeout, kFallbackPollMs);
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) throw_errno("poll()");
    if (ready <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      ChildState& state = *owners[i].first;
      switch (owners[i].second) {
        case Role::pidfd:
          break;  // the reap at the top of the loop sees it
        case Role::output:
          read_output(state, kReadBudget);
          break;
        case Role::result:
          read_result(state, kReadBudget);
          break;
        case Role::stdin_pipe:
          flush(state.stdin_pipe);
          break;
        case Role::command:
          flush(state.command);
          break;
      }
    }
  }
}

// "NAME=value" entries: the parent's environment without the names in `added`, then `added`,
// then the channels. kChannelsEnvironmentVariable is the utility's alone: it is never inherited
// or taken from `added`.
std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& added, const std::string& channels) {
  std::vector<std::string> names = {kChannelsEnvironmentVariable};
  for (const auto& [name, value] : added) names.push_back(name);
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (std::find(names.begin(), names.end(), name) == names.end()) entries.emplace_back(text);
  }
  for (const auto& [name, value] : added) {
    if (name != kChannelsEnvironmentVariable) entries.push_back(name + "=" + value);
  }
  if (!channels.empty())
    entries.push_back(std::string(kChannelsEnvironmentVariable) + "=" + channels);
  return entries;
}

// Descriptors held by the parent while it spawns; closed on every way out.
struct SpawnDescriptors {
  Pipe stdin_pipe, output, result, command, report;
  int dev_null = -1;
  ~SpawnDescriptors() {
    for (Pipe* pipe : {&stdin_pipe, &output, &result, &command, &report}) {
      close_fd(pipe->read);
      close_fd(pipe->write);
    }
    close_fd(dev_null);
  }
};

}  // namespace

// --- ChildProcess --------------------------------------------------------------------------------

ChildProcess::ChildProcess(std::unique_ptr<detail::ChildState> state) : state_(std::move(state)) {}
ChildProcess::ChildProcess(ChildProcess&&) noexcept = default;
ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (state_ && !state_->end) kill_and_reap(*state_, ChildEnd::Kind::killed);
    state_ = std::move(other.state_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (state_ && !state_->end) kill_and_reap(*state_, ChildEnd::Kind::killed);
}

namespace {

ChildProcess::Clock::time_point spawn_started() {
  ensure_standard_descriptors_open();
  ensure_default_sigchld();
  return Clock::now();
}

// One spawn for both ways: `body` set forks and runs it, else `program` is executed.
std::unique_ptr<detail::ChildState> spawn(std::function<int()>* body, const std::string& program,
                                          const std::vector<std::string>& arguments,
                                          const ChildOptions& options) {
  auto state = std::make_unique<ChildState>(options);
  state->started = spawn_started();
  SpawnDescriptors fds;
  fds.output = make_pipe();
  fds.report = make_pipe();
  if (options.stdin_pipe) {
    fds.stdin_pipe = make_pipe();
  } else {
    fds.dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fds.dev_null < 0) throw_errno("opening /dev/null");
  }
  std::optional<PipeIdentity> result_identity, command_identity;
  if (options.result_channel) {
    fds.result = make_pipe();
    result_identity = detail::identity_of(fds.result.read);
  }
  if (options.command_channel) {
    fds.command = make_pipe();
    command_identity = detail::identity_of(fds.command.read);
  }
  set_nonblocking(fds.output.read);
  if (fds.result.read >= 0) set_nonblocking(fds.result.read);
  if (fds.stdin_pipe.write >= 0) set_nonblocking(fds.stdin_pipe.write);
  if (fds.command.write >= 0) set_nonblocking(fds.command.write);

  ChildPlan plan;
  plan.stdin_source = options.stdin_pipe ? fds.stdin_pipe.read : fds.dev_null;
  plan.output_sink = fds.output.write;
  plan.result_sink = fds.result.write;
  plan.command_source = fds.command.read;
  plan.report = fds.report.write;
  plan.memory_limit = options.memory_limit_bytes;
  plan.parent = ::getpid();
  plan.die_with_parent = ::syscall(SYS_gettid) == plan.parent;

  std::vector<std::string> argv_text, env_text;
  std::vector<char*> argv, envp;
  if (body == nullptr) {
    argv_text.push_back(program);
    argv_text.insert(argv_text.end(), arguments.begin(), arguments.end());
    env_text = child_environment(
        options.environment, detail::channels_environment_value(result_identity, command_identity));
    for (std::string& text : argv_text) argv.push_back(text.data());
    argv.push_back(nullptr);
    for (std::string& text : env_text) envp.push_back(text.data());
    envp.push_back(nullptr);
    plan.program = program.c_str();
    plan.argv = argv.data();
    plan.envp = envp.data();
  } else {
    // The body's child inherits the parent's stdio buffers: empty them first, or they would be
    // written twice.
    std::fflush(nullptr);
  }

  detail::ChildRegistry& registry = detail::ChildRegistry::instance();
  registry.spawn_begins();
  const pid_t pid = ::fork();
  if (pid == 0) {
    set_up_child(plan);
    if (body == nullptr) {
      ::execve(plan.program, plan.argv, plan.envp);
      fail_setup(plan.report, Stage::execve);
    }
    ::close(plan.report);
    detail::adopt_forked_channels(result_identity, command_identity);
    ::unsetenv(kChannelsEnvironmentVariable);  // this process's own, if any: not the child's
    for (const auto& [name, value] : options.environment) {
      if (name != kChannelsEnvironmentVariable) ::setenv(name.c_str(), value.c_str(), 1);
    }
    int status = kExitUncaughtException;
    try {
      status = (*body)();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "emm child process: the forked body threw: %s\n", error.what());
    } catch (...) {
      std::fprintf(stderr, "emm child process: the forked body threw a non-standard exception\n");
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  registry.spawn_ends(pid);
  if (pid < 0) throw_errno("fork()");
  state->pid = pid;
  ::setpgid(pid, pid);  // also here, so the group exists before anyone signals it

  close_fd(fds.stdin_pipe.read);
  close_fd(fds.output.write);
  close_fd(fds.result.write);
  close_fd(fds.command.read);
  close_fd(fds.report.write);
  close_fd(fds.dev_null);
  SetupFailure failure{};
  ssize_t got = 0;
  do {
    got = ::read(fds.report.read, &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    reap(pid);
    registry.forget(pid);
    const std::string what =
        body == nullptr ? "cannot start " + program : std::string("cannot set up the forked child");
    throw ProcessError(what + ": " + stage_name(static_cast<Stage>(failure.stage)) + ": " +
                       std::strerror(failure.error));
  }

  state->pidfd = open_pidfd(pid);
  state->output_fd = std::exchange(fds.output.read, -1);
  state->result_fd = std::exchange(fds.result.read, -1);
  state->stdin_pipe.present = options.stdin_pipe;
  state->stdin_pipe.fd = std::exchange(fds.stdin_pipe.write, -1);
  state->command.present = options.command_channel;
  state->command.fd = std::exchange(fds.command.write, -1);
  return state;
}

}  // namespace

ChildProcess ChildProcess::fork(std::function<int()> body, const ChildOptions& options) {
  if (!body) throw ProcessError("ChildProcess::fork() needs a body to run in the child");
  return ChildProcess(spawn(&body, "", {}, options));
}

ChildProcess ChildProcess::exec(const std::string& program,
                                const std::vector<std::string>& arguments,
                                const ChildOptions& options) {
  if (program.empty()) throw ProcessError("ChildProcess::exec() needs a program path");
  return ChildProcess(spawn(nullptr, program, arguments, options));
}

pid_t ChildProcess::pid() const noexcept { return state_->pid; }
bool ChildProcess::running() const noexcept { return !state_->end; }

bool ChildProcess::write_stdin(std::string_view bytes) {
  return queue(state_->stdin_pipe, bytes, "a stdin pipe (stdin_pipe)");
}

bool ChildProcess::send_command(std::string_view payload) {
  return queue(state_->command, encode_frame(payload), "a command channel (command_channel)");
}

void ChildProcess::close_stdin() { close_after_queue(state_->stdin_pipe); }
void ChildProcess::close_command_channel() { close_after_queue(state_->command); }

ChildEnd ChildProcess::wait(Clock::time_point deadline) {
  ChildState& state = *state_;
  if (!state.end) {
    ensure_default_sigchld();
    ChildState* one[] = {&state};
    pump(one, deadline, [&state] { return state.end.has_value(); });
    if (!state.end) kill_and_reap(state, ChildEnd::Kind::timed_out);
  }
  return *state.end;
}

ChildEnd ChildProcess::wait(std::chrono::milliseconds limit) { return wait(Clock::now() + limit); }

FrameWait ChildProcess::wait_for_frame(Clock::time_point deadline) {
  ChildState& state = *state_;
  std::optional<FrameWait> answer;
  auto look = [&state, &answer] {
    FrameWait seen;
    const FrameScan scan = scan_frame(state.result);
    if (!state.result.empty() && scan.status == FrameScan::Status::complete) {
      seen.status = FrameWait::Status::frame;
      seen.payload.assign(scan.payload);
      state.result.erase(0, scan.frame_size);
    } else if (!state.result.empty() && scan.status == FrameScan::Status::garbage) {
      seen.status = FrameWait::Status::garbage;
      seen.problem = scan.problem;
    } else if (state.end) {
      seen.status = FrameWait::Status::child_ended;
      if (!state.result.empty()) seen.problem = scan.problem;
    } else {
      return false;
    }
    answer = std::move(seen);
    return true;
  };
  if (!look()) {
    ensure_default_sigchld();
    ChildState* one[] = {&state};
    pump(one, deadline, look);
  }
  return answer ? std::move(*answer) : FrameWait{};
}

ChildEnd ChildProcess::kill() {
  if (!state_->end) kill_and_reap(*state_, ChildEnd::Kind::killed);
  return *state_->end;
}

const std::optional<ChildEnd>& ChildProcess::end() const noexcept { return state_->end; }
const CapturedOutput& ChildProcess::output() const noexcept { return state_->output; }
CapturedOutput ChildProcess::take_output() {
  // What the child wrote before it answered may still be in the pipe: the result channel can
  // be polled ready first.
  if (state_->output_fd >= 0) read_output(*state_, kReadBudget);
  CapturedOutput taken(state_->output_keep);
  std::swap(taken, state_->output);
  return taken;
}
const std::string& ChildProcess::result_bytes() const noexcept { return state_->result; }
std::size_t ChildProcess::result_total_bytes() const noexcept { return state_->result_total; }
bool ChildProcess::result_overflowed() const noexcept { return state_->result_overflow; }

bool wait_any(std::span<ChildProcess* const> children, ChildProcess::Clock::time_point deadline) {
  std::vector<ChildState*> states;
  for (ChildProcess* child : children) states.push_back(child->state_.get());
  auto any_ended = [&states] {
    return std::any_of(states.begin(), states.end(),
                       [](const ChildState* state) { return state->end.has_value(); });
  };
  if (any_ended()) return true;
  ensure_default_sigchld();
  return pump(states, deadline, any_ended);
}

bool ChildProcess::has_answer() const {
  if (state_->end) return true;
  if (state_->result.empty()) return false;
  const FrameScan::Status status = scan_frame(state_->result).status;
  return status == FrameScan::Status::complete || status == FrameScan::Status::garbage;
}

bool wait_any_frame(std::span<ChildProcess* const> children,
                    ChildProcess::Clock::time_point deadline) {
  std::vector<ChildState*> states;
  for (ChildProcess* child : children) states.push_back(child->state_.get());
  auto any_answered = [children] {
    return std::any_of(children.begin(), children.end(),
                       [](const ChildProcess* child) { return child->has_answer(); });
  };
  if (any_answered()) return true;
  ensure_default_sigchld();
  return pump(states, deadline, any_answered);
}

OneFrame one_frame_from_child(const std::function<void()>& body, std::chrono::milliseconds timeout,
                              std::size_t memory_limit_bytes) {
  ChildOptions options;
  options.result_channel = true;
  options.memory_limit_bytes = memory_limit_bytes;
  ChildProcess child = ChildProcess::fork(
      [&body] {
        body();
        return 0;
      },
      options);
  OneFrame answer{child.wait(timeout), std::nullopt, ""};
  kill_stray_children();
  std::string problem;
  if (answer.end.kind == ChildEnd::Kind::exited && answer.end.exit_status == 0) {
    answer.payload = decode_frame(child.result_bytes(), problem);
  }
  answer.output = child.output().text();
  return answer;
}

}  // namespace emm::conformance
