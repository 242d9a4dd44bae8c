#include "emm/conformance/certify.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/backend_descriptor.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/child_process.hpp"
#include "emm/conformance/clause_scheduler.hpp"
#include "emm/conformance/plugin_probe.hpp"
#include "emm/conformance/report.hpp"
#include "emm/conformance/report_index.hpp"
#include "emm/conformance/report_paths.hpp"
#include "emm/conformance/report_writers.hpp"
#include "emm/conformance/sanitizer_build.hpp"
#include "emm/conformance/subject.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "emm/errors.hpp"
#include "process/interruption.hpp"
#include "runner/report_format.hpp"
#include "runner/thread_sanitizer.hpp"

namespace emm::conformance {
namespace {

void print_catalogue(std::ostream& out) {
  for (const Clause& clause : catalogue().clauses()) {
    char line[96];
    const std::string optional =
        clause.optional != nullptr ? "optional:" + std::string(clause.optional->name) : "-";
    std::snprintf(line, sizeof line, "%-10s %-7s %-12s %-28s ", clause.id.c_str(),
                  std::string(to_string(clause.level)).c_str(),
                  std::string(clause.target()).c_str(), optional.c_str());
    out << line << clause.title << "\n";
  }
}

// Sanitizer runtimes reserve shadow memory as private writable mappings, which a data-segment
// limit counts: where a sanitizer runtime is loaded, children run without one by default
// (kSanitizerBuild, sanitizer_build.hpp).

// A sanitizer runtime in this process: a sanitizer build of emm-certify, or a runtime preloaded
// (LD_PRELOAD) to certify a plugin built with a sanitizer (docs/troubleshooting.md).
bool sanitizer_runtime_loaded() {
  return kSanitizerBuild || ::dlsym(RTLD_DEFAULT, "__asan_init") != nullptr ||
         ::dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr;
}

std::size_t memory_limit(const CertifyOptions& options) {
  if (options.memory_limit) return *options.memory_limit;
  return sanitizer_runtime_loaded() ? 0 : kDefaultMemoryLimit;
}

// Descriptors 0-2 open (to /dev/null when the caller closed them), so that no pipe or report
// file this process opens can take their numbers.
void ensure_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int opened = ::open("/dev/null", O_RDWR);
      if (opened >= 0 && opened != fd) {
        ::dup2(opened, fd);
        ::close(opened);
      }
    }
  }
}

// A backend that does not survive fork() (the GPU) is probed in a child, so that this process
// never starts it (CUDA).
BackendStatus probe_in_child(BackendKind kind, const Capabilities& capabilities,
                             const ProbeSettings& settings) {
  BackendStatus status{kind, false, "", ""};
  try {
    const OneFrame answer = one_frame_from_child(
        [kind, &capabilities] {
          const std::string reason = backend_unavailable_reason(kind, capabilities);
          send_result_frame(reason.empty() ? "OK\t" + describe_devices(kind) : "NO\t" + reason);
        },
        settings.timeout, settings.memory_limit_bytes);
    if (!answer.payload) {
      status.reason = "no GPU: probing the CUDA driver in a child process failed (it " +
                      answer.end.describe() + ")";
      return status;
    }
    const std::string& payload = *answer.payload;
    if (payload.starts_with("OK\t")) {
      status.ran = true;
      status.device = payload.substr(3);
    } else {
      status.reason = payload.size() > 3 ? payload.substr(3) : payload;
    }
  } catch (const std::exception& error) {
    status.reason = std::string("no GPU: the probe could not start: ") + error.what();
  }
  return status;
}

BackendStatus probe_here(BackendKind kind, const Capabilities& capabilities,
                         const BackendSettings& settings) {
  BackendStatus status{kind, false, "", ""};
  if (std::string why = backend_unavailable_reason(kind, capabilities); !why.empty()) {
    status.reason = why;
    return status;
  }
  status.ran = true;
  status.device = describe_devices(kind, settings);
  return status;
}

bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    err << "emm-certify: cannot write " << path << " (" << std::strerror(errno) << ")\n";
    return false;
  }
  std::string_view left = text;
  while (!left.empty()) {
    const ssize_t n = ::write(fd, left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err << "emm-certify: cannot write " << path << " (" << std::strerror(errno) << ")\n";
      ::close(fd);
      return false;
    }
    left.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) {
    err << "emm-certify: cannot write " << path << " (" << std::strerror(errno) << ")\n";
    return false;
  }
  return true;
}

// Every (clause, backend) of a certification whose subject could not be loaded: not_run.
std::vector<ClauseResult> not_run(const std::vector<const Clause*>& clauses,
                                  const std::vector<BackendKind>& backends,
                                  const std::string& cause) {
  std::vector<ClauseResult> results;
  for (const Clause* clause : clauses) {
    for (const BackendKind backend : backends) {
      ClauseResult result;
      result.clause = clause;
      result.backend = backend;
      result.level = clause->level;
      result.outcome = Outcome::not_run;
      result.message =
          clause->tag("not run: the " + std::string(subject_noun(subject_of(*clause))) +
                      " could not be loaded: " + cause);
      results.push_back(std::move(result));
    }
  }
  return results;
}

// `emm-certify report REPORT.json... --html INDEX.html`: one page over many certificates.
int report_main(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> inputs;
  std::string html;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--html" && i + 1 < args.size() && !args[i + 1].empty()) {
      html = std::string(args[++i]);
    } else if (args[i].starts_with("--html=") && args[i].size() > 7) {
      html = std::string(args[i].substr(7));
    } else if (args[i].starts_with("-")) {
      err << "emm-certify report: unknown argument '" << visible_text(args[i])
          << "'\n\nusage: emm-certify report REPORT.json... --html INDEX.html\n";
      return kExitUsage;
    } else {
      inputs.emplace_back(args[i]);
    }
  }
  if (inputs.empty() || html.empty()) {
    err << "emm-certify report: needs at least one JSON report and --html FILE\n\n"
           "usage: emm-certify report REPORT.json... --html INDEX.html\n";
    return kExitUsage;
  }
  try {
    ReportPaths paths;
    paths.html = html;
    check_report_paths(paths, "");
  } catch (const UsageError& error) {
    err << "emm-certify report: " << error.what() << "\n";
    return kExitUsage;
  }
  std::vector<IndexEntry> entries;
  bool all_read = true;
  for (const std::string& input : inputs) {
    entries.push_back(read_index_entry(input));
    if (!entries.back().problem.empty()) {
      err << "emm-certify report: " << visible_text(input) << " "
          << visible_text(entries.back().problem) << "\n";
      all_read = false;
    }
  }
  if (!write_file(html, index_html(entries), err)) return kExitUsage;
  out << "emm-certify report: " << entries.size() << " report(s) in " << visible_text(html) << "\n";
  return all_read ? kExitCertified : kExitUsage;
}

}  // namespace

int certify_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  ensure_standard_descriptors();
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "report") {
    return report_main(std::span(args).subspan(1), out, err);
  }
  CertifyOptions options;
  // The subject: an EMM plugin library, a Python plugin class, a NEP 49 handler, or a kind of
  // subject_options() (subject.hpp).
  std::unique_ptr<Subject> subject;
  try {
    options = parse_certify_args(args);
    if (options.help) {
      out << certify_usage();
      return kExitCertified;
    }
    if (options.list) {
      print_catalogue(out);
      return kExitCertified;
    }
    subject = make_subject(options);
    if (options.subject_option != nullptr) {
      // Only the subject knows its clauses (Subject::clauses); the command line could not check.
      const std::vector<const Clause*> answered = subject->clauses();
      for (const Clause* clause : options.only) {
        if (std::find(answered.begin(), answered.end(), clause) == answered.end()) {
          throw UsageError("--only: " + clause->id + " is not a clause " +
                           options.subject_option->flag + " certifies (see --list)");
        }
      }
    }
    check_report_paths(options.reports,
                       options.subject_option != nullptr ? subject->path() : options.plugin_path);
  } catch (const UsageError& error) {
    err << "emm-certify: " << error.what() << "\n\n" << certify_usage();
    return kExitUsage;
  }
  // SIGINT, SIGTERM and SIGHUP end the run cleanly: what started is killed, the reports are
  // written with what ran, the exit status is 128 + the signal; --deadline the same way, with
  // exit status 124 (interruption.hpp).
  const InterruptionHandlers interruption(options.deadline_s);
  // Plugin code runs in children; what they leave behind (detached grandchildren) is reparented
  // here and killed after each child (child_process.hpp).
  ensure_default_sigchld();
  become_child_subreaper();
  const std::chrono::milliseconds timeout = std::chrono::seconds(options.timeout_s);
  const ProbeSettings probe_settings{timeout, memory_limit(options)};
  const std::string_view subject_kind = subject_noun(subject->kind());
  const std::vector<const Clause*> clauses =
      !options.only.empty() ? options.only : subject->clauses();

  out << "emm-certify " << kKitVersion << " (catalogue " << catalogue().version()
      << "): certifying " << visible_text(subject->title()) << " (isolation "
      << to_string(options.isolation) << ")\n";
  for (const std::string& line : subject->preface()) out << line << "\n";
  out.flush();
  // Even for --in-process the subject is loaded in a child first: a load that ends the process
  // (exit() in a static initialiser, a sanitizer runtime that cannot start) is then "could not
  // load", exit status 2, never a status of the plugin's choosing.
  const bool in_process = options.isolation == Isolation::in_process;
  ProbeResult probe = subject->probe(probe_settings);
  if (probe.loaded && in_process) probe = subject->probe_in_process();

  const bool report_loaded = probe.loaded;
  CertificationReport report;
  report.subject = subject->kind();
  report.kit_version = kKitVersion;
  report.catalogue_version = catalogue().version();
  if (!probe.loaded) {
    err << "emm-certify: could not load the " << subject_kind << " "
        << visible_text(subject->path()) << ": " << report_format::console_text(probe.failure)
        << "\n";
    report.plugin_loaded = false;
    report.load_failure = probe.failure;
    report.plugin.description.path = subject->path();
    for (const BackendKind backend : options.backends) {
      report.backends.push_back(
          {backend, false, "", "the " + std::string(subject_kind) + " could not be loaded"});
    }
    report.results = not_run(clauses, options.backends, probe.failure);
  } else {
    const Capabilities& capabilities = probe.description.capabilities;
    report.plugin = PluginInfo{probe.description, probe.interface_version};
    subject->describe(probe, out, err);
    // Each backend's availability is decided once, here; children run what they are given.
    std::vector<ClauseJob> jobs;
    for (const BackendKind backend : options.backends) {
      BackendStatus status = backend_descriptor(backend).fork_safe
                                 ? probe_here(backend, capabilities, options.backend_settings)
                                 : probe_in_child(backend, capabilities, probe_settings);
      out << "backend " << to_string(status.kind) << ": "
          << visible_text(status.ran ? "runs on " + status.device
                                     : "not run (" + status.reason + ")")
          << "\n";
      if (status.ran) {
        for (const Clause* clause : clauses) {
          jobs.push_back({clause, backend, clause->effective_level(capabilities)});
        }
      }
      report.backends.push_back(std::move(status));
    }
    out.flush();
    std::size_t done = 0;
    SchedulerSettings settings{options.plugin_path,   {}, options.isolation,       timeout,
                               memory_limit(options), 2,  options.backend_settings};
    settings.load_subject = subject->loader();
    report.results = run_clause_jobs(jobs, settings, [&](const ClauseResult& r) {
      char line[160];
      std::snprintf(line, sizeof line, "[%3zu/%zu] %-10s %-5s %-14s %8.0f ms", ++done, jobs.size(),
                    r.clause->id.c_str(), std::string(to_string(r.backend)).c_str(),
                    std::string(to_string(r.outcome)).c_str(), r.duration_ms);
      out << line << "\n";
      out.flush();
    });
  }
  kill_stray_children();
  report.interrupted_by = interrupting_signal();
  if (report.interrupted_by != 0) {
    err << "emm-certify: " << interruption_text(report.interrupted_by)
        << ": every process of the run was ended; the reports hold what ran, the rest is "
           "not_run"
        << (report.interrupted_by == SIGALRM ? " (--deadline none lifts the bound)" : "") << "\n";
  }
  const Certificate certificate = make_certificate(std::move(report));

  out << "\n" << to_text(certificate);
  out.flush();
  bool written = true;
  const ReportPaths& paths = options.reports;
  if (!paths.json.empty()) written &= write_file(paths.json, to_json(certificate), err);
  if (!paths.junit.empty()) written &= write_file(paths.junit, to_junit(certificate), err);
  if (!paths.markdown.empty()) written &= write_file(paths.markdown, to_markdown(certificate), err);
  if (!paths.html.empty()) written &= write_file(paths.html, to_html(certificate), err);
  if (!paths.logs.empty()) {
    if (::mkdir(paths.logs.c_str(), 0755) != 0 && errno != EEXIST) {
      err << "emm-certify: cannot make " << paths.logs << " (" << std::strerror(errno) << ")\n";
      written = false;
    }
    for (const ClauseResult& r : certificate.report.results) {
      if (r.output.empty()) continue;
      written &= write_file(
          paths.logs + "/" + r.clause->id + "." + std::string(to_string(r.backend)) + ".log",
          r.output, err);
    }
  }
  int status = certificate.verdict.exit_status();
  const bool any_ran =
      std::any_of(certificate.report.backends.begin(), certificate.report.backends.end(),
                  [](const BackendStatus& backend) { return backend.ran; });
  if (report_loaded && !any_ran) {
    if (const std::optional<std::string> why = subject->nothing_ran(certificate.report.backends)) {
      err << "emm-certify: " << *why << "\n";
      status = kExitUsage;
    }
  }
  // A report that could not be written does not hide a verdict against the plugin; it only
  // keeps a certificate from being claimed without its report.
  if (!written && status != kExitNotCertified && certificate.verdict.interrupted_by == 0) {
    return kExitUsage;
  }
  return status;
}

}  // namespace emm::conformance
