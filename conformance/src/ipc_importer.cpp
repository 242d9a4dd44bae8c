#include "emm/conformance/ipc_importer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/ipc_handle.hpp"

extern char** environ;

namespace emm::conformance {
namespace {

bool executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

std::string running_program_dir() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.parent_path().string();
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("writing to the importer failed: ") + std::strerror(errno));
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string to_hex(const std::vector<std::byte>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    const auto v = static_cast<unsigned>(b);
    text += kDigits[v >> 4];
    text += kDigits[v & 0xF];
  }
  return text;
}

std::vector<std::byte> from_hex(std::string_view text) {
  if (text.size() % 2 != 0) throw Error("hex text of odd length");
  auto digit = [](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
    throw Error(std::string("not a hex digit: '") + c + "'");
  };
  std::vector<std::byte> bytes(text.size() / 2);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>(digit(text[2 * i]) << 4 | digit(text[2 * i + 1]));
  }
  return bytes;
}

std::vector<ImportResult> import_handles(Runtime& runtime,
                                         const std::vector<std::vector<std::byte>>& handles) {
  Context& context = runtime.get_context(0);
  std::vector<ImportResult> results;
  for (const std::vector<std::byte>& serialized : handles) {
    ImportResult result;
    try {
      IpcHandle handle = IpcHandle::deserialize(serialized);
      std::shared_ptr<MemoryPointer> memory = handle.open(context);
      std::vector<std::byte> bytes(memory->size());
      context.make_current();
      if (!bytes.empty())
        context.driver().memcpy_dtoh(bytes.data(), memory->device_pointer(), bytes.size());
      memory.reset();
      handle.close();
      result.ok = true;
      result.bytes = std::move(bytes);
    } catch (const std::exception& error) {
      result.error = error.what();
    }
    results.push_back(std::move(result));
  }
  return results;
}

std::string find_ipc_importer() {
  if (const char* env = std::getenv("EMM_IPC_IMPORTER"); env != nullptr && executable(env)) {
    return env;
  }
  if (const std::string dir = running_program_dir(); !dir.empty()) {
    if (const std::string next = dir + "/emm-ipc-importer"; executable(next)) return next;
  }
#ifdef EMM_IPC_IMPORTER_BUILD_PATH
  if (executable(EMM_IPC_IMPORTER_BUILD_PATH)) return EMM_IPC_IMPORTER_BUILD_PATH;
#endif
#ifdef EMM_IPC_IMPORTER_INSTALL_PATH
  if (executable(EMM_IPC_IMPORTER_INSTALL_PATH)) return EMM_IPC_IMPORTER_INSTALL_PATH;
#endif
  return "";
}

std::vector<ImportResult> run_ipc_importer(const std::string& importer,
                                           const std::vector<std::vector<std::byte>>& handles,
                                           int timeout_s) {
  int to_child[2];
  int from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) throw Error("pipe() failed");
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    throw Error("pipe() failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::string program = importer;
  char* argv[] = {program.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, importer.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (spawned != 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    throw Error("cannot start " + importer + ": " + std::strerror(spawned));
  }
  std::string output;
  bool timed_out = false;
  try {
    std::string input;
    for (const auto& handle : handles) input += to_hex(handle) + "\n";
    // An importer that dies early must not kill this process with SIGPIPE.
    const auto previous = ::signal(SIGPIPE, SIG_IGN);
    try {
      write_all(to_child[1], input);
    } catch (...) {
      ::signal(SIGPIPE, previous);
      throw;
    }
    ::signal(SIGPIPE, previous);
    ::close(to_child[1]);
    to_child[1] = -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    char buffer[65536];
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd fd{from_child[0], POLLIN, 0};
      const int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) continue;
      const ssize_t n = ::read(from_child[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      output.append(buffer, static_cast<std::size_t>(n));
    }
  } catch (...) {
    if (to_child[1] >= 0) ::close(to_child[1]);
    ::close(from_child[0]);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw;
  }
  ::close(from_child[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (timed_out) {
    throw Error(importer + " gave no answer within " + std::to_string(timeout_s) + " s");
  }
  std::vector<ImportResult> results;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    ImportResult result;
    if (line.rfind("OK ", 0) == 0 || line == "OK") {
      result.ok = true;
      result.bytes = from_hex(line.size() > 3 ? std::string_view(line).substr(3) : "");
    } else if (line.rfind("ERR ", 0) == 0) {
      result.error = line.substr(4);
    } else {
      throw Error(importer + " answered an unexpected line: " + line.substr(0, 200));
    }
    results.push_back(std::move(result));
  }
  if (results.size() != handles.size()) {
    std::string why = "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (WIFSIGNALED(status)) why = "killed by signal " + std::to_string(WTERMSIG(status));
    throw Error(importer + " answered " + std::to_string(results.size()) + " of " +
                std::to_string(handles.size()) + " handles (" + why + ")");
  }
  return results;
}

int ipc_importer_main(std::istream& in, std::ostream& out) {
  std::vector<std::vector<std::byte>> handles;
  std::string line;
  try {
    while (std::getline(in, line)) {
      if (!line.empty()) handles.push_back(from_hex(line));
    }
  } catch (const std::exception& error) {
    out << "ERR bad input: " << error.what() << "\n";
    return 2;
  }
  std::vector<ImportResult> results;
  try {
    RuntimeOptions options;
    options.getenv = [](const char*) -> std::optional<std::string> { return std::nullopt; };
    Runtime runtime(CudaDriver::load(), options);
    results = import_handles(runtime, handles);
  } catch (const std::exception& error) {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      out << "ERR the importing process could not start CUDA: " << error.what() << "\n";
    }
    return 1;
  }
  for (const ImportResult& result : results) {
    if (result.ok) {
      out << "OK " << to_hex(result.bytes) << "\n";
    } else {
      std::string error = result.error;
      for (char& c : error) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      out << "ERR " << error << "\n";
    }
  }
  out.flush();
  return 0;
}

}  // namespace emm::conformance
