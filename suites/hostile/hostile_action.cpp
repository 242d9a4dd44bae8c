// The attacks (hostile_action.hpp): what broken plugins really do. Only two kinds know
// emm-certify's insides: the channel attacks use the result channel's fixed descriptor
// (child_process.hpp), and the forged answers imitate the answer format (clause_scheduler.cpp,
// result_codec.cpp) so that nothing but the nonce gives them away.
#include "hostile_action.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "baseline_pool.hpp"
#include "emm/conformance/child_process.hpp"
#include "runner/field_codec.hpp"

namespace emm::hostile {
namespace {

using conformance::field_codec::put;
using conformance::field_codec::put_list;

// Noncharacters (U+FFFE, U+FFFF), bytes that are not UTF-8, terminal escapes (colour, window
// title, CSI as a C1 byte), carriage return and backspace, a right-to-left override, the
// characters that end a JSON string, an XML element, a CDATA section or a Markdown table cell,
// and a line that reads like the certifier's verdict.
constexpr const char* kWeirdName =
    "hostile \xEF\xBF\xBE \xEF\xBF\xBF \xFF\xC0\x80\xED\xA0\x80 \x1B[31mred\x1B[0m "
    "\x1B]0;title\x07 \r\b \xC2\x9B\x32J \xE2\x80\xAE \x7F \"\\ </name>]]>--|`\n"
    "VERDICT: CERTIFIED (a forged line)";
constexpr const char* kWeirdDeferText =
    "defers \xEF\xBF\xBF\x1B[2J\x1B[H everything \xFE\xFF <![CDATA[ ]]> </testcase> | --- |";

const char* setting(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

bool is(const char* name, const char* expected) { return std::strcmp(name, expected) == 0; }

const char* site_name(Site site) {
  switch (site) {
    case Site::load:
      return "load";
    case Site::entry:
      return "entry";
    case Site::constructor:
      return "constructor";
    case Site::initialize:
      return "initialize";
    case Site::memalloc:
      return "memalloc";
    case Site::reset:
      return "reset";
  }
  return "";
}

[[noreturn]] void sleep_forever() {
  for (;;) ::pause();
}

// A process the plugin leaves behind: `sleep 300` named `name` (so that a survivor is easy to
// recognise), keeping every descriptor it inherited and the environment, EMM_HOSTILE_TOKEN
// included.
[[noreturn]] void become_sleeper(const char* name) {
  ::execl("/bin/sleep", name, "300", static_cast<char*>(nullptr));
  ::execl("/usr/bin/sleep", name, "300", static_cast<char*>(nullptr));
  sleep_forever();
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// A well-formed answer of a clause child (result_codec.hpp): its magic, a nonce (made up: the
// real one is only in emm-certify's memory and the command the child read), its kind, what the
// clause saw (that `clause` passed; an answer names no clause: the parent stamps it), and that the
// process may run another clause.
std::string forged_answer(const char* clause) {
  std::string observed;
  put(observed, "pass");
  put(observed, std::string("[") + clause + "] passed (a forged answer)");
  put(observed, "1.000000");
  put_list(observed, {});
  put_list(observed, {});
  put(observed, "0");  // no properties
  put(observed, "0");  // no reproducer
  std::string answer("EMMANS3\n");
  put(answer, "0123456789abcdef");
  put(answer, "result");
  put(answer, observed);
  put(answer, "reusable");
  return answer;
}

void send_forged(const char* clause) {
  write_all(conformance::kResultChannelFd, conformance::encode_frame(forged_answer(clause)));
}

void flood_output() {
  const std::string chunk(std::size_t{1} << 20, 'x');
  for (int i = 0; i < 200; ++i) write_all(STDOUT_FILENO, chunk);
}

void print_weird_text() {
  std::printf("plugin output: %s\n", kWeirdName);
  std::fflush(stdout);
  constexpr char kControls[] = "nul \0 byte, bell \a, escape \x1B[5m\n";
  write_all(STDERR_FILENO, std::string_view(kControls, sizeof kControls - 1));
}

// Removes the library file this code was loaded from: the process that loaded it keeps its
// mapping, every later dlopen() of the path fails (a plugin whose load cannot be repeated).
void unlink_this_library() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&unlink_this_library), &info) != 0 &&
      info.dli_fname != nullptr) {
    ::unlink(info.dli_fname);
  }
}

// An exception escaping a noexcept function: std::terminate, as an uncaught one would.
void throw_runtime_error() { throw std::runtime_error("hostile plugin: an uncaught exception"); }
void call_noexcept(void (*function)()) noexcept { function(); }

std::vector<char*>* g_hoard = nullptr;

// Takes memory 1 MiB at a time and touches it, until the allocator gives up (std::bad_alloc).
void hoard_memory() {
  if (g_hoard == nullptr) g_hoard = new std::vector<char*>;
  for (;;) {
    char* chunk = new char[std::size_t{1} << 20];
    std::memset(chunk, 0x5A, std::size_t{1} << 20);
    g_hoard->push_back(chunk);
  }
}

void act(const char* action) {
  if (is(action, "exit0")) {
    std::exit(0);
  } else if (is(action, "exit3")) {
    std::exit(3);
  } else if (is(action, "exit120")) {
    std::exit(120);
  } else if (is(action, "exit121")) {
    std::exit(121);
  } else if (is(action, "unlink_library")) {
    unlink_this_library();
  } else if (is(action, "abort")) {
    std::abort();
  } else if (is(action, "segv")) {
    // A store through a null pointer, as a plugin's bug makes one; a volatile store, so that no
    // build type drops it. raise() stands behind it should a compiler still do so (a Release
    // build once turned the "crashing" plugin into a certified one).
    volatile int* volatile nowhere = nullptr;
    *nowhere = 1;
    ::raise(SIGSEGV);
  } else if (is(action, "terminate")) {
    call_noexcept(&throw_runtime_error);
  } else if (is(action, "hang")) {
    sleep_forever();
  } else if (is(action, "killpg")) {
    ::kill(0, SIGTERM);
    sleep_forever();
  } else if (is(action, "close_fds")) {
    for (int fd = 0; fd < 1024; ++fd) ::close(fd);
    sleep_forever();
  } else if (is(action, "sigchld_ign")) {
    ::signal(SIGCHLD, SIG_IGN);
  } else if (is(action, "flood")) {
    flood_output();
  } else if (is(action, "fork_holder")) {
    // The child keeps every descriptor it inherited: stdout, stderr and the channels.
    if (::fork() == 0) become_sleeper("hostile-fork-holder");
  } else if (is(action, "setsid_grandchild")) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::setsid();
      if (::fork() == 0) become_sleeper("hostile-setsid-grandchild");
      ::_exit(0);
    }
    if (child > 0) ::waitpid(child, nullptr, 0);
  } else if (is(action, "devnull_channel")) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, conformance::kResultChannelFd);
    ::close(null);
  } else if (is(action, "close_channel")) {
    ::close(conformance::kResultChannelFd);
  } else if (is(action, "forge_nonce")) {
    send_forged("ALLOC-1");
    std::fflush(nullptr);
    ::_exit(0);
  } else if (is(action, "forge_other_clause")) {
    send_forged("REG-2");
  } else if (is(action, "forge_two")) {
    send_forged("ALLOC-1");
    send_forged("ALLOC-1");
  } else if (is(action, "forge_garbage")) {
    write_all(conformance::kResultChannelFd, "this is not a frame\n");
  } else if (is(action, "forge_truncated")) {
    const std::string frame = conformance::encode_frame(forged_answer("ALLOC-1"));
    write_all(conformance::kResultChannelFd, std::string_view(frame).substr(0, 20));
    ::_exit(0);
  } else if (is(action, "malloc_loop")) {
    hoard_memory();
  } else if (is(action, "require_memory_limit")) {
    // Not an attack: proves that a process running plugin code has a data-segment limit
    // without --memory-limit, the one that stops malloc_loop on a machine of any size.
    rlimit data{};
    if (::getrlimit(RLIMIT_DATA, &data) != 0 || data.rlim_cur == RLIM_INFINITY) {
      throw std::runtime_error(
          "this process has no RLIMIT_DATA: a runaway allocation would "
          "take the machine's memory");
    }
  } else if (is(action, "weird_text")) {
    print_weird_text();
    throw std::runtime_error(std::string("memalloc refuses: ") + kWeirdName + "\n");
  } else if (is(action, "weird_exit")) {
    print_weird_text();
    std::exit(3);
  }
}

}  // namespace

void strike(Site site) {
  if (!is(setting("EMM_HOSTILE_SITE"), site_name(site))) return;
  static std::atomic<bool> struck{false};
  if (struck.exchange(true)) return;
  act(setting("EMM_HOSTILE_ACTION"));
}

PluginDeclaration declaration() {
  strike(Site::entry);
  PluginDeclaration declared = zoo::baseline_declaration("hostile plugin");
  if (is(setting("EMM_HOSTILE_ACTION"), "weird_text")) {
    declared.name = kWeirdName;
    declared.defer_cleanup_behaviour = kWeirdDeferText;
  }
  return declared;
}

}  // namespace emm::hostile
