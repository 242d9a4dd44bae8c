// emm/conformance/child_process.hpp — the one way the kit runs a child process: forked or
// exec'd, wired to pipes at fixed descriptors, waited for with a deadline that always holds.
//
// emm-certify runs plugin code it does not trust in children; the IPC checks run a second
// program. A hostile or broken child may crash, hang, close every descriptor and block, leave
// grandchildren holding its pipes, detach them with setsid(), dup2() over descriptors, flood
// its output, or (in the parent, through a plugin's static initialiser) set SIGCHLD to SIG_IGN.
// This utility holds against all of them:
//
//   * wait() ends when the child is REAPED or the deadline passes (then the child's process
//     group is SIGKILLed and reaped) — never "when the pipes close": a grandchild may keep them
//     open forever and a child may close them and block. It polls a pidfd (pidfd_open) next to
//     the pipes, or polls every 10 ms with waitpid(WNOHANG) where pidfd_open is refused.
//   * stdout and stderr go together into one output pipe, kept as the first and last
//     ChildOptions::output_keep_bytes bytes (CapturedOutput), however much arrives.
//   * the result channel (child → parent) and the command channel (parent → child) sit at the
//     fixed descriptors kResultChannelFd and kCommandChannelFd, far from 0–2 and the low
//     numbers a plugin reuses; every other descriptor is closed in the child. The child-side
//     send_result_frame() / read_command_frame() first check that the descriptor is still the
//     pipe the parent created (st_dev/st_ino) and exit with kExitChannelLost if it is not.
//   * messages on the channels are frames (magic, length, payload: encode_frame()); the parent
//     tells a complete frame from garbage, truncation and trailing bytes (scan_frame(),
//     decode_frame()).
//   * each child leads its own process group; after it is reaped the group is SIGKILLed, so
//     grandchildren that stayed in it do not outlive it. Detached ones (setsid) are found by
//     kill_stray_children() once the process is a subreaper (become_child_subreaper()).
//   * SIGCHLD is set back to SIG_DFL before every fork and every wait (see
//     ensure_default_sigchld()).
//
//   ChildOptions options;
//   options.result_channel = true;
//   ChildProcess child = ChildProcess::fork([] {
//     emm::conformance::send_result_frame("42");   // in the child
//     return 0;                                     // its exit status
//   }, options);
//   const ChildEnd end = child.wait(std::chrono::seconds(5));
//   std::string problem;
//   if (end.kind == ChildEnd::Kind::exited && end.exit_status == 0) {
//     if (auto payload = decode_frame(child.result_bytes(), problem)) use(*payload);
//   } else {
//     report(end.describe(), child.output().text());
//   }
//
// An exec'd program finds its channels the same way: send_result_frame() and
// read_command_frame() read kChannelsEnvironmentVariable, which names the descriptors and the
// identity of their pipes.
//
// Ownership and thread-safety: a ChildProcess owns its child (pid, pipes, pidfd) and is
// move-only (a moved-from one may only be destroyed or assigned to); its destructor kills and
// reaps a child still running, so the utility leaves no zombie and no orphan of its own. One
// ChildProcess must not be used from two threads at once; different ones may. fork() runs arbitrary
// code in the child: call it from a single-threaded process (a forked child of a multi-threaded
// process may deadlock on a lock another thread held). exec() is safe from any thread: between fork
// and exec the child makes only async-signal-safe calls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emm/errors.hpp"

namespace emm::conformance {

// --- fixed descriptors and exit statuses ------------------------------------------------------

// Where a child finds its channels: high, so that closing or dup2()ing over 0–2 or the low
// numbers open() hands out does not touch them, and below the usual 1024 soft descriptor limit.
inline constexpr int kResultChannelFd = 1020;   // child writes, parent reads
inline constexpr int kCommandChannelFd = 1021;  // parent writes, child reads

// In an exec'd child: "result=1020:<st_dev>:<st_ino>;command=1021:<st_dev>:<st_ino>" (either
// part absent when that channel was not asked for). The identity lets the child verify the
// descriptor before using it.
inline constexpr const char* kChannelsEnvironmentVariable = "EMM_CHILD_CHANNELS";

// The child side gave up because a channel descriptor was closed, replaced by another file,
// absent, or the parent stopped reading; the reason is one line on stderr.
inline constexpr int kExitChannelLost = 121;
// A fork() body let an exception escape; what() is one line on stderr.
inline constexpr int kExitUncaughtException = 122;

// The utility could not do what it was asked (pipe(), fork(), exec of the program, ...).
class ProcessError : public Error {
 public:
  using Error::Error;
};

// --- what a child is started with ------------------------------------------------------------

struct ChildOptions {
  // The child's stdin: a pipe the parent writes (write_stdin()), else /dev/null.
  bool stdin_pipe = false;
  // A child → parent pipe at kResultChannelFd (send_result_frame()).
  bool result_channel = false;
  // A parent → child pipe at kCommandChannelFd (send_command() / read_command_frame()).
  bool command_channel = false;
  // setrlimit(RLIMIT_DATA) in the child; 0: no limit. RLIMIT_DATA, not RLIMIT_AS: CUDA
  // reserves huge virtual address ranges it never backs, so an address-space limit breaks it
  // while a data limit bounds what the child can really allocate (brk and private writable
  // mappings, which is where malloc gets memory). Sanitizer shadow memory is also a private
  // writable mapping, so callers pass 0 under ASan/TSan; this utility applies what it is given.
  std::size_t memory_limit_bytes = 0;
  // CapturedOutput keeps this many bytes from the start and as many from the end.
  std::size_t output_keep_bytes = 64 * 1024;
  // Bytes of the result channel kept (beyond: still read, dropped, result_overflowed()).
  std::size_t result_limit_bytes = std::size_t{256} << 20;
  // Added to the child's environment (replacing a variable of the same name). An exec'd child
  // gets the parent's environment plus these; a forked one gets them through setenv().
  std::vector<std::pair<std::string, std::string>> environment;
};

// --- how a child ended ------------------------------------------------------------------------

struct ChildEnd {
  enum class Kind {
    exited,     // exit_status holds its status
    signaled,   // a signal it did not get from this utility ended it (signal)
    timed_out,  // still running at the deadline: its process group was SIGKILLed
    killed,     // kill() was called while it ran
    lost,       // someone else reaped it (a SIGCHLD handler calling waitpid(-1), ...)
  };
  Kind kind = Kind::lost;
  int exit_status = 0;
  int signal = 0;
  double duration_ms = 0.0;  // from just before fork() to the reap

  // "exited with status 3", "was killed by SIGSEGV (Segmentation fault)", "was still running
  // after 300 ms and was killed", "was killed by the caller", "ended, but its exit status was
  // taken by another waiter".
  std::string describe() const;
};

// "SIGSEGV (Segmentation fault)"; "signal 77" for a number without a name.
std::string describe_signal(int signal);

// --- output with a cap ------------------------------------------------------------------------

// The first and last `keep` bytes of a stream, and how many were seen. Not thread-safe.
class CapturedOutput {
 public:
  explicit CapturedOutput(std::size_t keep = 64 * 1024);
  void append(std::string_view bytes);
  std::size_t total_bytes() const noexcept { return total_; }
  std::size_t dropped_bytes() const noexcept;
  // Everything when nothing was dropped; else head, "\n[... N bytes dropped ...]\n", tail.
  std::string text() const;
  // The last min(n, kept) bytes.
  std::string tail(std::size_t n) const;

 private:
  std::size_t keep_;
  std::size_t total_ = 0;
  std::string head_;
  std::string tail_;  // holds up to 2 * keep_ bytes; its last keep_ are the tail
};

// --- frames ----------------------------------------------------------------------------------

// "EMMF", the payload length as 8 little-endian bytes, the payload.
inline constexpr std::size_t kFrameHeaderSize = 12;
inline constexpr std::size_t kMaxFramePayload = std::size_t{1} << 30;

std::string encode_frame(std::string_view payload);

// What the start of `bytes` holds.
struct FrameScan {
  enum class Status { complete, incomplete, garbage };
  Status status = Status::incomplete;
  std::string_view payload;    // complete: a view into the scanned bytes
  std::size_t frame_size = 0;  // complete: header + payload
  std::size_t announced = 0;   // the payload length the header gives, once the header is whole
  std::string problem;         // incomplete or garbage: what was seen
};
FrameScan scan_frame(std::string_view bytes);

// `bytes` must be exactly one frame: its payload, else nullopt with `problem` set to what was
// wrong ("no bytes", "not a frame: it starts with 41 42 ...", "truncated frame: ...",
// "3 bytes after the frame").
std::optional<std::string> decode_frame(std::string_view bytes, std::string& problem);

// --- the child --------------------------------------------------------------------------------

namespace detail {
struct ChildState;
}

// What wait_for_frame() saw first.
struct FrameWait {
  enum class Status {
    frame,        // payload holds the next frame from the result channel (taken off it)
    garbage,      // the result channel holds bytes that are not a frame (problem)
    child_ended,  // the child was reaped without a further complete frame: see end()
    deadline,     // the deadline passed; the child still runs
  };
  Status status = Status::deadline;
  std::string payload;
  std::string problem;
};

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Forks; the child runs `body` and leaves with _exit(its return value) after flushing
  // stdio, never running the parent's atexit handlers or static destructors. An escaping
  // exception ends it with kExitUncaughtException. Throws ProcessError when the child cannot
  // be set up.
  static ChildProcess fork(std::function<int()> body, const ChildOptions& options = {});
  // Forks and executes `program` (a path: no PATH search) with argv = {program, arguments...}.
  // Throws ProcessError naming the program and the reason when it cannot be executed.
  static ChildProcess exec(const std::string& program, const std::vector<std::string>& arguments,
                           const ChildOptions& options = {});

  ChildProcess(ChildProcess&&) noexcept;
  ChildProcess& operator=(ChildProcess&&) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // kill() if still running

  pid_t pid() const noexcept;
  bool running() const noexcept;  // not reaped yet

  // Queue bytes for the child's stdin / one frame for its command channel; they are written
  // while waiting (never blocking: a child that does not read cannot stall the parent).
  // False when that pipe is already closed (the child ended or closed its end). Throws
  // ProcessError when the child was started without that pipe.
  bool write_stdin(std::string_view bytes);
  bool send_command(std::string_view payload);
  // Close the pipe once what was queued is written (the child then reads end of file).
  void close_stdin();
  void close_command_channel();

  // Waits until the child is reaped; at `deadline` kills its process group (Kind::timed_out).
  // Drains the output and the result channel meanwhile, and what is left in them after the
  // reap (without blocking). Returns at once when it has already ended.
  ChildEnd wait(Clock::time_point deadline);
  ChildEnd wait(std::chrono::milliseconds limit);
  // Waits until the result channel holds one complete frame (or garbage), the child ended, or
  // `deadline` passed — for long-lived workers that answer one command at a time.
  FrameWait wait_for_frame(Clock::time_point deadline);
  // Whether wait_for_frame() would return at once (a whole frame, garbage, or the child's end),
  // from what was read so far.
  bool has_answer() const;
  // SIGKILL to its process group, then reaps it (Kind::killed unless it had already ended).
  ChildEnd kill();

  // Set once the child was reaped.
  const std::optional<ChildEnd>& end() const noexcept;
  // stdout and stderr together, capped.
  const CapturedOutput& output() const noexcept;
  // The output captured so far (after reading what is already in the pipe, without blocking),
  // leaving an empty capture with the same cap in its place: how a long-lived worker's output
  // is cut into one piece per command.
  CapturedOutput take_output();
  // The result channel's bytes not yet taken by wait_for_frame().
  const std::string& result_bytes() const noexcept;
  std::size_t result_total_bytes() const noexcept;
  bool result_overflowed() const noexcept;

 private:
  explicit ChildProcess(std::unique_ptr<detail::ChildState> state);
  friend bool wait_any(std::span<ChildProcess* const> children, Clock::time_point deadline);
  friend bool wait_any_frame(std::span<ChildProcess* const> children, Clock::time_point deadline);

  std::unique_ptr<detail::ChildState> state_;
};

// Waits until at least one of `children` has ended (true) or `deadline` passes (false: the
// children still run; wait() on one with a past deadline kills it). Drains all their pipes.
bool wait_any(std::span<ChildProcess* const> children, ChildProcess::Clock::time_point deadline);

// Waits until at least one of `children` has what wait_for_frame() would return at once (a whole
// frame, garbage, or its end: true) or `deadline` passes or the run is interrupted (false).
// Drains all their pipes and sends their pending commands: one thread serves several workers.
bool wait_any_frame(std::span<ChildProcess* const> children,
                    ChildProcess::Clock::time_point deadline);

// --- the child's side of the channels ----------------------------------------------------------

// Sends one frame on the result channel. First checks that kResultChannelFd is still the pipe
// the parent created (fstat: st_dev, st_ino — recorded when a forked child started, passed in
// kChannelsEnvironmentVariable to an exec'd one); when it was closed, replaced, or the child
// has no result channel, or the parent stopped reading, writes one line saying so to stderr and
// _exit(kExitChannelLost)s instead of writing. Call from one thread at a time.
void send_result_frame(std::string_view payload);
// Reads the next frame from the command channel (blocking), verified the same way. nullopt at
// end of file on a frame boundary (the parent closed the channel). Throws ProcessError for
// bytes that are not a frame or a frame cut short.
std::optional<std::string> read_command_frame();

// --- the calling process -----------------------------------------------------------------------

// Sets SIGCHLD back to SIG_DFL when it is SIG_IGN or has SA_NOCLDWAIT: with either, the kernel
// reaps children itself and their exit status (the crash a certification must report) is lost.
// A handler the process installed is left alone (one that calls waitpid(-1) can still steal a
// status: the child then ends as Kind::lost). ChildProcess calls this before each fork and
// each wait; the disposition stays SIG_DFL afterwards.
void ensure_default_sigchld();

// prctl(PR_SET_CHILD_SUBREAPER): orphaned descendants (e.g. a grandchild that called setsid()
// and outlived its parent) become children of this process instead of init's, so that
// kill_stray_children() can find them. Throws ProcessError when the kernel refuses.
void become_child_subreaper();

struct StraySweep {
  std::vector<pid_t> killed;  // SIGKILLed (with their process groups) and reaped
  std::vector<pid_t> left;    // still there when the time limit ran out
};
// Kills and reaps every child of this process that no ChildProcess is tracking, again and again
// until none is left or `limit` passes. Children are listed from /proc/self/task/*/children,
// else by scanning /proc/*/stat for this process's pid.
//
// It catches: orphans re-parented here (after become_child_subreaper()), whatever their
// session or group, and children any other code of this process started — so call it only
// where nothing else starts children that must live. It cannot catch: descendants whose parent
// still lives (they are not children of this process — kill that parent's group first), any
// orphan when this process is not a subreaper (init adopts it), processes that escaped through
// another subreaper or into another pid namespace, and a fork bomb faster than the sweep.
StraySweep kill_stray_children(std::chrono::milliseconds limit = std::chrono::seconds(2));

// A child asked one question: `body` runs in it and sends one result frame. What it left:
// `payload` is that frame's payload when the child exited 0 with exactly one well-formed frame,
// else nullopt; `end` how it ended and `output` what it printed.
struct OneFrame {
  ChildEnd end;
  std::optional<std::string> payload;
  std::string output;
};
// Forks the child (result channel, the data-segment limit; 0: none), waits at most `timeout`
// and kills the strays it left (kill_stray_children()). Throws what ChildProcess::fork throws.
OneFrame one_frame_from_child(const std::function<void()>& body, std::chrono::milliseconds timeout,
                              std::size_t memory_limit_bytes);

}  // namespace emm::conformance
