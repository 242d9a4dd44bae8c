// The child's side of the result and command channels (child_process.hpp).
//
// A plugin running in the child may have closed kResultChannelFd, or dup2()ed another file
// over it; writing there would hand the parent's frame to whatever file that is. So every use
// first checks the descriptor against the pipe identity the parent created, and the child
// leaves with kExitChannelLost, saying why on stderr, when it does not match.
#include "child_channels.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

#include "emm/conformance/child_process.hpp"

namespace emm::conformance {
namespace detail {
namespace {

struct Channel {
  int fd = -1;  // -1: this process has no such channel
  PipeIdentity identity;
};

struct Channels {
  bool known = false;
  std::string problem;  // why kChannelsEnvironmentVariable could not be read
  Channel result;
  Channel command;
};

Channels& channels_state() {
  static Channels channels;
  return channels;
}

template <class T>
bool parse_number(std::string_view text, T& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

// "result=1020:<dev>:<ino>" into `channels`.
bool parse_part(std::string_view part, Channels& channels) {
  const std::size_t equals = part.find('=');
  if (equals == std::string_view::npos) return false;
  const std::string_view name = part.substr(0, equals);
  std::string_view rest = part.substr(equals + 1);
  Channel channel;
  const std::size_t first = rest.find(':');
  const std::size_t second = rest.find(':', first == std::string_view::npos ? first : first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return false;
  unsigned long long device = 0, inode = 0;
  if (!parse_number(rest.substr(0, first), channel.fd) ||
      !parse_number(rest.substr(first + 1, second - first - 1), device) ||
      !parse_number(rest.substr(second + 1), inode)) {
    return false;
  }
  channel.identity.device = static_cast<dev_t>(device);
  channel.identity.inode = static_cast<ino_t>(inode);
  if (name == "result" && channel.fd == kResultChannelFd) {
    channels.result = channel;
  } else if (name == "command" && channel.fd == kCommandChannelFd) {
    channels.command = channel;
  } else {
    return false;
  }
  return true;
}

Channels& channels() {
  Channels& state = channels_state();
  if (state.known) return state;
  state.known = true;
  const char* value = std::getenv(kChannelsEnvironmentVariable);
  if (value == nullptr) return state;
  std::string_view text(value);
  while (!text.empty()) {
    const std::size_t semicolon = text.find(';');
    if (!parse_part(text.substr(0, semicolon), state)) {
      state.result = {};
      state.command = {};
      state.problem = std::string(kChannelsEnvironmentVariable) + "=\"" + value +
                      "\" is malformed (expected e.g. \"result=1020:<st_dev>:<st_ino>\")";
      return state;
    }
    text = semicolon == std::string_view::npos ? std::string_view() : text.substr(semicolon + 1);
  }
  return state;
}

void write_line(const std::string& line) {
  std::string_view rest(line);
  while (!rest.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

[[noreturn]] void give_up(const std::string& why) {
  write_line("emm child process " + std::to_string(::getpid()) + ": " + why +
             "; exiting with status " + std::to_string(kExitChannelLost) + "\n");
  ::_exit(kExitChannelLost);
}

// Exits unless `channel` is still the pipe the parent created.
void verify(const Channels& all, const Channel& channel, const char* name) {
  if (channel.fd < 0) {
    give_up(std::string("there is no ") + name +
            " channel (the parent did not ask for one in ChildOptions" +
            (all.problem.empty() ? std::string(")") : "; " + all.problem + ")"));
  }
  struct stat status {};
  if (::fstat(channel.fd, &status) != 0) {
    give_up(std::string("the ") + name + " channel (fd " + std::to_string(channel.fd) +
            ") was closed (" + std::strerror(errno) + "); nothing is sent");
  }
  if (!S_ISFIFO(status.st_mode) || status.st_dev != channel.identity.device ||
      status.st_ino != channel.identity.inode) {
    give_up(std::string("fd ") + std::to_string(channel.fd) + " is no longer the " + name +
            " channel the parent created: another file was put in its place (dup2 over it?); "
            "nothing is sent");
  }
}

}  // namespace

std::optional<PipeIdentity> identity_of(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return std::nullopt;
  return PipeIdentity{status.st_dev, status.st_ino};
}

std::string channels_environment_value(const std::optional<PipeIdentity>& result,
                                       const std::optional<PipeIdentity>& command) {
  auto part = [](const char* name, int fd, const PipeIdentity& identity) {
    return std::string(name) + "=" + std::to_string(fd) + ":" +
           std::to_string(static_cast<unsigned long long>(identity.device)) + ":" +
           std::to_string(static_cast<unsigned long long>(identity.inode));
  };
  std::string value;
  if (result) value = part("result", kResultChannelFd, *result);
  if (command) {
    if (!value.empty()) value += ';';
    value += part("command", kCommandChannelFd, *command);
  }
  return value;
}

void adopt_forked_channels(const std::optional<PipeIdentity>& result,
                           const std::optional<PipeIdentity>& command) {
  Channels& state = channels_state();
  state = Channels{};
  state.known = true;
  if (result) state.result = {kResultChannelFd, *result};
  if (command) state.command = {kCommandChannelFd, *command};
}

}  // namespace detail

void send_result_frame(std::string_view payload) {
  const detail::Channels& all = detail::channels();
  detail::verify(all, all.result, "result");
  const std::string frame = encode_frame(payload);
  // A parent that stopped reading must not kill this process with SIGPIPE before it can say so.
  sigset_t pipe_signal, previous;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  std::string_view rest(frame);
  while (!rest.empty()) {
    const ssize_t n = ::write(all.result.fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      detail::give_up(std::string("writing the result channel failed (") + std::strerror(errno) +
                      "): the parent stopped reading");
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

std::optional<std::string> read_command_frame() {
  const detail::Channels& all = detail::channels();
  detail::verify(all, all.command, "command");
  auto read_exactly = [&](char* into, std::size_t size) -> std::size_t {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(all.command.fd, into + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw ProcessError(std::string("reading the command channel failed: ") +
                           std::strerror(errno));
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  };
  std::string frame(kFrameHeaderSize, '\0');
  const std::size_t header = read_exactly(frame.data(), frame.size());
  if (header == 0) return std::nullopt;
  frame.resize(header);
  const FrameScan scan = scan_frame(frame);
  if (scan.status == FrameScan::Status::garbage) {
    throw ProcessError("the command channel carried something that is not a frame: " +
                       scan.problem);
  }
  if (header < kFrameHeaderSize) {
    throw ProcessError("the command channel ended inside a frame header (" + scan.problem + ")");
  }
  const std::size_t length = scan.announced;
  frame.resize(kFrameHeaderSize + length);
  const std::size_t got = read_exactly(frame.data() + kFrameHeaderSize, length);
  if (got != length) {
    throw ProcessError("the command channel ended inside a frame: " + std::to_string(got) +
                       " of its " + std::to_string(length) + " payload bytes arrived");
  }
  std::string problem;
  std::optional<std::string> decoded = decode_frame(frame, problem);
  if (!decoded) throw ProcessError("the command channel carried a bad frame: " + problem);
  return decoded;
}

}  // namespace emm::conformance
