#include "runner/thread_sanitizer.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "emm/conformance/certify.hpp"
#include "emm/conformance/certify_cli.hpp"

namespace emm::conformance {
namespace {

// --- the library's dynamic section ---------------------------------------------------------------

// Set in the restarted process: "+" and the LD_PRELOAD it replaced, or "-" when there was none.
constexpr const char* kRestartVariable = "EMM_CERTIFY_TSAN_RESTARTED";
// The runtime to preload for a library that names none.
constexpr const char* kRuntimeVariable = "EMM_TSAN_RUNTIME";

bool is_runtime_name(std::string_view name) {
  return name.starts_with("libtsan.so") || name.starts_with("libclang_rt.tsan");
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool is_file(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

// `name` in the directories of a DT_RUNPATH/DT_RPATH ("$ORIGIN" is the library's directory), as
// the dynamic loader finds it; else the bare name, for the loader's own search.
std::string resolve(std::string_view name, std::string_view search_path,
                    const std::string& origin) {
  std::size_t start = 0;
  while (start <= search_path.size()) {
    const std::size_t colon = search_path.find(':', start);
    std::string directory(search_path.substr(start, colon - start));
    for (const std::string_view token :
         {std::string_view("${ORIGIN}"), std::string_view("$ORIGIN")}) {
      for (std::size_t at = directory.find(token); at != std::string::npos;
           at = directory.find(token)) {
        directory.replace(at, token.size(), origin);
      }
    }
    if (!directory.empty()) {
      const std::string candidate = directory + "/" + std::string(name);
      if (is_file(candidate)) return candidate;
    }
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return std::string(name);
}

// Reads the section headers of an ELF image of one class: the undefined dynamic symbols and the
// dynamic section's DT_NEEDED, DT_RUNPATH and DT_RPATH.
template <class Ehdr, class Shdr, class Sym, class Dyn>
void read_dynamic(std::string_view image, const std::string& path, ThreadSanitizerNeed& need) {
  auto at = [&image](std::size_t offset, std::size_t size) -> const char* {
    if (offset > image.size() || size > image.size() - offset) return nullptr;
    return image.data() + offset;
  };
  Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  if (header.e_shentsize != sizeof(Shdr)) {
    need.problem = "its section headers are not the size its class gives";
    return;
  }
  const char* table = at(header.e_shoff, std::size_t{header.e_shnum} * sizeof(Shdr));
  if (table == nullptr) {
    need.problem = "its section headers lie outside the file";
    return;
  }
  std::vector<Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), table, sections.size() * sizeof(Shdr));
  // The string table a section's sh_link names, as a view; empty when it is out of range.
  auto strings_of = [&](const Shdr& section) -> std::string_view {
    if (section.sh_link >= sections.size()) return {};
    const Shdr& strtab = sections[section.sh_link];
    const char* bytes = at(strtab.sh_offset, strtab.sh_size);
    return bytes != nullptr ? std::string_view(bytes, strtab.sh_size) : std::string_view();
  };
  auto string_at = [](std::string_view strings, std::size_t offset) -> std::string_view {
    if (offset >= strings.size()) return {};
    const std::size_t end = strings.find('\0', offset);
    return end == std::string_view::npos ? std::string_view()
                                         : strings.substr(offset, end - offset);
  };
  std::vector<std::string_view> needed;
  std::string_view runpath, rpath;
  for (const Shdr& section : sections) {
    const char* bytes = at(section.sh_offset, section.sh_size);
    if (bytes == nullptr) continue;
    const std::string_view strings = strings_of(section);
    if (section.sh_type == SHT_DYNSYM) {
      for (std::size_t i = 0; i + 1 <= section.sh_size / sizeof(Sym); ++i) {
        Sym symbol;
        std::memcpy(&symbol, bytes + i * sizeof(Sym), sizeof symbol);
        if (symbol.st_shndx == SHN_UNDEF && string_at(strings, symbol.st_name) == "__tsan_init") {
          need.instrumented = true;
        }
      }
    } else if (section.sh_type == SHT_DYNAMIC) {
      for (std::size_t i = 0; i + 1 <= section.sh_size / sizeof(Dyn); ++i) {
        Dyn entry;
        std::memcpy(&entry, bytes + i * sizeof(Dyn), sizeof entry);
        if (entry.d_tag == DT_NULL) break;
        const std::string_view text = string_at(strings, entry.d_un.d_val);
        if (entry.d_tag == DT_NEEDED) needed.push_back(text);
        if (entry.d_tag == DT_RUNPATH) runpath = text;
        if (entry.d_tag == DT_RPATH) rpath = text;
      }
    }
  }
  for (const std::string_view name : needed) {
    if (is_runtime_name(name)) {
      // The loader reads DT_RPATH only where there is no DT_RUNPATH.
      need.runtime = resolve(name, runpath.empty() ? rpath : runpath, directory_of(path));
      break;
    }
  }
}

// The runtime a restart preloads for `need`: the library's own, else $EMM_TSAN_RUNTIME, else
// the one of the compiler that built the kit; empty when there is none.
std::string runtime_for(const ThreadSanitizerNeed& need) {
  if (!need.runtime.empty()) return need.runtime;
  if (const char* given = std::getenv(kRuntimeVariable); given != nullptr && *given != '\0') {
    return given;
  }
#ifdef EMM_TSAN_RUNTIME_DEFAULT
  if (is_file(EMM_TSAN_RUNTIME_DEFAULT)) return EMM_TSAN_RUNTIME_DEFAULT;
#endif
  return "";
}

// The file the loaded runtime came from ("libtsan.so.2"), for the console.
std::string loaded_runtime_file() {
  Dl_info info{};
  void* symbol = ::dlsym(RTLD_DEFAULT, "__tsan_init");
  if (symbol == nullptr || ::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// --- the reports ---------------------------------------------------------------------------------

constexpr std::string_view kWarning = "WARNING: ThreadSanitizer: ";
constexpr std::string_view kSummary = "SUMMARY: ThreadSanitizer: ";
constexpr std::size_t kFramesKept = 8;
constexpr std::size_t kLineKept = 220;

struct Report {
  std::string kind;                // "data race", "heap-use-after-free", ...
  std::vector<std::string> lines;  // from the WARNING line to the SUMMARY line
};

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<Report> find_reports(std::string_view output) {
  std::vector<Report> reports;
  Report* open = nullptr;
  for (const std::string_view line : split_lines(output)) {
    if (const std::size_t at = line.find(kWarning); at != std::string_view::npos) {
      std::string_view kind = line.substr(at + kWarning.size());
      if (const std::size_t pid = kind.find(" (pid="); pid != std::string_view::npos) {
        kind = kind.substr(0, pid);
      }
      reports.push_back({std::string(kind), {std::string(line.substr(at))}});
      open = &reports.back();
      continue;
    }
    if (open == nullptr) continue;
    open->lines.emplace_back(line);
    if (line.find(kSummary) != std::string_view::npos) open = nullptr;
  }
  return reports;
}

std::string clipped(std::string_view line) {
  return line.size() > kLineKept ? std::string(line.substr(0, kLineKept)) + "..."
                                 : std::string(line);
}

// The report's first two stacks (the two accesses of a race; the first two sections of any
// other kind), each cut to kFramesKept frames, and its SUMMARY line.
std::string trimmed(const Report& report, bool& through_plugin, std::string_view plugin_file) {
  std::string text;
  int sections = 0;
  std::size_t frames = 0;
  bool keeping = false;
  for (std::size_t i = 1; i < report.lines.size(); ++i) {
    const std::string& line = report.lines[i];
    if (line.find(kSummary) != std::string::npos) {
      text += clipped(line.substr(line.find(kSummary))) + "\n";
      break;
    }
    const bool frame = line.starts_with("    #");
    const bool section = !frame && line.starts_with("  ") && line.size() > 2 && line[2] != ' ';
    if (section) {
      keeping = ++sections <= 2;
      frames = 0;
      if (keeping) text += clipped(line) + "\n";
    } else if (frame && keeping) {
      if (!plugin_file.empty() && line.find(plugin_file) != std::string::npos) {
        through_plugin = true;
      }
      if (++frames <= kFramesKept) {
        text += clipped(line) + "\n";
      } else if (frames == kFramesKept + 1) {
        text += "    ...\n";
      }
    }
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

ThreadSanitizerNeed thread_sanitizer_need(const std::string& library) {
  ThreadSanitizerNeed need;
  std::ifstream file(library, std::ios::binary);
  if (!file) {
    need.problem = std::string("it cannot be read: ") + std::strerror(errno);
    return need;
  }
  const std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.size() < EI_NIDENT || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0) {
    need.problem = "it is not an ELF file";
    return need;
  }
  if (image[EI_DATA] != ELFDATA2LSB && image[EI_DATA] != ELFDATA2MSB) {
    need.problem = "its byte order is unknown";
    return need;
  }
  if (image[EI_CLASS] == ELFCLASS64 && image.size() >= sizeof(Elf64_Ehdr)) {
    read_dynamic<Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, Elf64_Dyn>(image, library, need);
  } else if (image[EI_CLASS] == ELFCLASS32 && image.size() >= sizeof(Elf32_Ehdr)) {
    read_dynamic<Elf32_Ehdr, Elf32_Shdr, Elf32_Sym, Elf32_Dyn>(image, library, need);
  } else {
    need.problem = "its ELF class is unknown";
  }
  return need;
}

bool thread_sanitizer_loaded() noexcept { return ::dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr; }

void restart_for_thread_sanitizer(int argc, char** argv) {
  const char* restarted = std::getenv(kRestartVariable);
  if (restarted != nullptr) {
    // The runtime is in this process (or could not be preloaded); programs it executes get the
    // LD_PRELOAD it was started with.
    const std::string before(restarted);
    if (before.starts_with("+")) {
      ::setenv("LD_PRELOAD", before.c_str() + 1, 1);
    } else {
      ::unsetenv("LD_PRELOAD");
    }
    ::unsetenv(kRestartVariable);
    return;  // never twice: a runtime that would not preload is the probe's to report
  }
  if (argc < 1 || thread_sanitizer_loaded()) return;
  CertifyOptions options;
  try {
    options = parse_certify_args(std::vector<std::string_view>(argv + 1, argv + argc));
  } catch (const std::exception&) {
    return;  // certify_main() says what is wrong with the arguments
  }
  if (options.help || options.list || options.plugin_path.empty() ||
      !options.python_target.empty() || options.nep49) {
    return;
  }
  const ThreadSanitizerNeed need = thread_sanitizer_need(options.plugin_path);
  if (!need.instrumented) return;
  const std::string runtime = runtime_for(need);
  if (runtime.empty()) {
    std::fprintf(stderr,
                 "emm-certify: %s was built with ThreadSanitizer but names no runtime, and none "
                 "was found: set %s to a shared ThreadSanitizer runtime, e.g. "
                 "$(g++ -print-file-name=libtsan.so)\n",
                 options.plugin_path.c_str(), kRuntimeVariable);
    return;
  }
  const char* preload = std::getenv("LD_PRELOAD");
  const std::string before = preload != nullptr ? std::string(preload) : std::string();
  const char* options_text = std::getenv("TSAN_OPTIONS");
  std::string tsan_options(kThreadSanitizerDefaultOptions);
  if (options_text != nullptr && *options_text != '\0') {
    tsan_options += ':';
    tsan_options += options_text;
  }
  std::string restart_value(preload != nullptr ? "+" : "-");
  restart_value += before;
  ::setenv(kRestartVariable, restart_value.c_str(), 1);
  ::setenv("LD_PRELOAD", (before.empty() ? runtime : runtime + ":" + before).c_str(), 1);
  ::setenv("TSAN_OPTIONS", tsan_options.c_str(), 1);
  std::fflush(nullptr);
  ::execv("/proc/self/exe", argv);
  const int error = errno;
  // Not restarted: leave the environment as it was and let the probe say why it cannot load.
  if (preload != nullptr) {
    ::setenv("LD_PRELOAD", before.c_str(), 1);
  } else {
    ::unsetenv("LD_PRELOAD");
  }
  ::unsetenv(kRestartVariable);
  std::fprintf(stderr,
               "emm-certify: could not restart with the ThreadSanitizer runtime %s preloaded "
               "(execv: %s)\n",
               runtime.c_str(), std::strerror(error));
}

std::optional<std::string> thread_sanitizer_status(const std::string& library) {
  const ThreadSanitizerNeed need = thread_sanitizer_need(library);
  if (!need.instrumented) return std::nullopt;
  if (!thread_sanitizer_loaded()) {
    return "ThreadSanitizer: the plugin is instrumented, but no ThreadSanitizer runtime could be "
           "loaded into emm-certify (" +
           (need.runtime.empty() ? std::string("the library names none; set ") + kRuntimeVariable
                                 : "LD_PRELOAD=" + need.runtime + " did not load it") +
           ")";
  }
  const std::string runtime = loaded_runtime_file();
  return "ThreadSanitizer: the plugin is instrumented and the runtime is loaded" +
         (runtime.empty() ? std::string() : " (" + runtime + ")") +
         ": a race it reports fails the clause that ran";
}

void fail_on_thread_sanitizer_reports(ClauseResult& result, std::string_view plugin_file) {
  const std::vector<Report> reports = find_reports(result.output);
  if (reports.empty()) return;
  std::size_t shown = 0;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].kind == "data race") {
      shown = i;
      break;
    }
  }
  const Report& report = reports[shown];
  bool through_plugin = false;
  const std::string stacks = trimmed(report, through_plugin, plugin_file);
  const bool race = report.kind == "data race";
  std::string message = "ThreadSanitizer found " +
                        (race ? std::string("a data race") : "a " + report.kind) +
                        (through_plugin ? " in the plugin (" + std::string(plugin_file) + ")"
                                        : std::string(" in the plugin's process")) +
                        " while the clause ran";
  if (race) {
    message +=
        ": two threads accessed the same memory without synchronisation, at least one "
        "of them writing (a missing lock or atomic)";
  }
  if (reports.size() == 1) {
    message += " (its report, trimmed; the whole of it is in the clause's output):\n";
  } else {
    message += " (" + std::to_string(reports.size()) +
               " reports; this one trimmed, all of them in the clause's output):\n";
  }
  message += stacks;
  if (result.outcome != Outcome::pass && result.outcome != Outcome::not_supported &&
      !result.message.empty()) {
    // Without the tail of the output a crash message carries: the report above is from it.
    std::string own = result.message;
    if (const std::size_t tail = own.find("; last output: "); tail != std::string::npos) {
      own.erase(tail);
    }
    message +=
        "\nThe clause itself then saw (" + std::string(to_string(result.outcome)) + "): " + own;
  }
  result.outcome = Outcome::fail;
  result.message = result.clause->tag(message);
}

}  // namespace emm::conformance

// ThreadSanitizer asks the program for these at start (emm-certify exports the symbol, so that a
// preloaded runtime finds it too). GCC 12's std::atomic<std::shared_ptr> guards its pointer with
// a lock bit ThreadSanitizer does not know, so every concurrent load and store reads as a race in
// libstdc++: a correct plugin must not fail ALLOC-10 for using it. Its frames are named by
// function (std::_Sp_atomic) or, in an unoptimised build, only by file.
extern "C" const char* __tsan_default_suppressions() {
  return "race:std::_Sp_atomic\nrace:bits/shared_ptr_atomic.h\n";
}
