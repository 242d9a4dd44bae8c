// Strays (child_process.hpp): children of this process that no ChildProcess tracks — detached
// grandchildren re-parented here after their parent died, when this process is a subreaper.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "child_registry.hpp"
#include "emm/conformance/child_process.hpp"

namespace emm::conformance {
namespace {

template <class Each>
bool for_each_numeric_entry(const char* directory, Each&& each) {
  DIR* dir = ::opendir(directory);
  if (dir == nullptr) return false;
  while (const dirent* entry = ::readdir(dir)) {
    long value = 0;
    const char* name = entry->d_name;
    const auto [end, error] = std::from_chars(name, name + std::strlen(name), value);
    if (error == std::errc() && *end == '\0') each(value);
  }
  ::closedir(dir);
  return true;
}

// /proc/self/task/<tid>/children for every thread: the children each thread forked, including
// orphans re-parented to this process.
std::optional<std::vector<pid_t>> children_from_task_lists() {
  std::vector<pid_t> children;
  bool readable = false;
  for_each_numeric_entry("/proc/self/task", [&](long tid) {
    std::ifstream list("/proc/self/task/" + std::to_string(tid) + "/children");
    if (!list) return;
    readable = true;
    long pid = 0;
    while (list >> pid) children.push_back(static_cast<pid_t>(pid));
  });
  if (!readable) return std::nullopt;  // a kernel without CONFIG_PROC_CHILDREN
  return children;
}

// Every /proc/<pid>/stat whose ppid (the field after the ")" that ends the command name and the
// state letter) is this process.
std::vector<pid_t> children_from_stat_scan() {
  std::vector<pid_t> children;
  const pid_t self = ::getpid();
  for_each_numeric_entry("/proc", [&](long pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return;
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) return;
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    long parent = 0;
    if (fields >> state >> parent && parent == self) children.push_back(static_cast<pid_t>(pid));
  });
  return children;
}

std::vector<pid_t> list_children() {
  if (auto children = children_from_task_lists()) return *children;
  return children_from_stat_scan();
}

}  // namespace

void become_child_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    throw ProcessError(std::string("prctl(PR_SET_CHILD_SUBREAPER) failed: ") +
                       std::strerror(errno) +
                       "; detached grandchildren will be adopted by init and cannot be swept");
  }
}

StraySweep kill_stray_children(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  StraySweep sweep;
  detail::ChildRegistry& registry = detail::ChildRegistry::instance();
  for (;;) {
    std::vector<pid_t> strays = registry.untracked(list_children());
    if (strays.empty()) return sweep;
    for (pid_t pid : strays) {
      // Its own group too: a stray that called setsid() leads one, and its members would be the
      // next round's strays.
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    for (pid_t pid : strays) {
      for (;;) {
        const pid_t reaped = ::waitpid(pid, nullptr, WNOHANG);
        if (reaped == pid || (reaped < 0 && errno != EINTR)) {
          if (reaped == pid) sweep.killed.push_back(pid);
          break;
        }
        if (std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      sweep.left = registry.untracked(list_children());
      return sweep;
    }
  }
}

}  // namespace emm::conformance
