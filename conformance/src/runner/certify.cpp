#include "emm/conformance/certify.hpp"

#include <cstdio>
#include <fstream>
#include <optional>
#include <thread>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/evaluate.hpp"
#include "emm/conformance/isolation.hpp"
#include "emm/conformance/report_writers.hpp"
#include "emm/conformance/result_codec.hpp"
#include "emm/errors.hpp"
#include "emm/plugin_loader.hpp"

namespace emm::conformance {
namespace {

constexpr std::chrono::seconds kProbeTimeout{60};

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

// interface_version() of a null-context instance, asked in a child (plugin code may crash).
std::optional<int> probe_interface_version(const PluginSubject& subject, std::ostream& err) {
  auto reports = run_in_children({[&subject] {
                                   auto probe = subject.factory(nullptr);
                                   return std::to_string(probe ? probe->interface_version() : -1);
                                 }},
                                 1, kProbeTimeout);
  if (reports[0].kind == ChildReport::Kind::finished) {
    try {
      return std::stoi(reports[0].payload);
    } catch (...) {
    }
  }
  err << "emm-certify: warning: could not read interface_version() from a null-context "
         "instance (REG-1/REG-2 report why)\n";
  return std::nullopt;
}

// The GPU is probed in a child so that this process never initialises CUDA.
BackendStatus probe_gpu(const Capabilities& capabilities) {
  BackendStatus status{BackendKind::gpu, false, "", ""};
  auto reports = run_in_children({[&capabilities] {
                                   const std::string reason =
                                       backend_unavailable_reason(BackendKind::gpu, capabilities);
                                   if (!reason.empty()) return "NO\t" + reason;
                                   return "OK\t" + make_backend(BackendKind::gpu)->device_name(0);
                                 }},
                                 1, kProbeTimeout);
  const ChildReport& report = reports[0];
  if (report.kind != ChildReport::Kind::finished) {
    status.reason =
        report.kind == ChildReport::Kind::timed_out
            ? "no GPU: probing the CUDA driver did not finish"
            : "no GPU: probing the CUDA driver crashed (" +
                  (report.signal ? describe_signal(report.signal)
                                 : "exit status " + std::to_string(report.exit_status)) +
                  ")";
    return status;
  }
  const std::string& payload = report.payload;
  if (payload.starts_with("OK\t")) {
    status.ran = true;
    status.device = payload.substr(3);
  } else {
    status.reason = payload.size() > 3 ? payload.substr(3) : payload;
  }
  return status;
}

BackendStatus probe_fake(const Capabilities& capabilities) {
  BackendStatus status{BackendKind::fake, false, "", ""};
  if (std::string why = backend_unavailable_reason(BackendKind::fake, capabilities); !why.empty()) {
    status.reason = why;
    return status;
  }
  status.ran = true;
  status.device = make_backend(BackendKind::fake)->device_name(0);
  return status;
}

bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    err << "emm-certify: cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace

int certify_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  CertifyOptions options;
  try {
    options = parse_certify_args(args);
  } catch (const UsageError& error) {
    err << "emm-certify: " << error.what() << "\n\n" << certify_usage();
    return kExitUsage;
  }
  if (options.help) {
    out << certify_usage();
    return kExitCertified;
  }
  if (options.list) {
    print_catalogue(out);
    return kExitCertified;
  }

  LoadedPlugin plugin;
  try {
    plugin = load_plugin(options.plugin_path);
  } catch (const std::exception& error) {
    err << "emm-certify: could not load the plugin: " << error.what() << "\n";
    return kExitUsage;
  }
  const PluginSubject subject = subject_from_library(plugin);
  const Capabilities& capabilities = subject.description.capabilities;
  out << "emm-certify " << kKitVersion << " (catalogue " << catalogue().version()
      << "): certifying '" << subject.description.name << "' from " << subject.description.path
      << "\n";
  out.flush();

  CertificationReport report;
  report.kit_version = kKitVersion;
  report.catalogue_version = catalogue().version();
  report.plugin = PluginInfo{subject.description, probe_interface_version(subject, err)};

  // Each backend's availability is decided once, here; children run what they are given.
  std::vector<BackendKind> ran;
  for (const BackendKind backend : options.backends) {
    BackendStatus status =
        backend == BackendKind::fake ? probe_fake(capabilities) : probe_gpu(capabilities);
    out << "backend " << to_string(status.kind) << ": "
        << (status.ran ? "runs on " + status.device : "not run (" + status.reason + ")") << "\n";
    if (status.ran) ran.push_back(backend);
    report.backends.push_back(std::move(status));
  }

  const std::vector<const Clause*> clauses =
      options.only.empty() ? catalogue().plugin_clauses() : options.only;

  struct Job {
    const Clause* clause;
    BackendKind backend;
  };
  std::vector<Job> jobs;
  for (const Clause* clause : clauses) {
    for (const BackendKind backend : ran) jobs.push_back({clause, backend});
  }
  std::vector<ClauseResult> results(jobs.size());
  std::size_t done = 0;
  // Fake runs are independent simulated devices: two at a time. GPU runs share one device whose
  // memory figures (cuMemGetInfo) are device-wide: one at a time, or they would see each other.
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  for (const BackendKind backend : ran) {
    std::vector<std::size_t> indices;
    std::vector<std::function<std::string()>> work;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].backend != backend) continue;
      indices.push_back(i);
      work.push_back([&subject, job = jobs[i]] {
        return encode_result(evaluate(subject, *job.clause, *make_backend(job.backend)));
      });
    }
    const std::size_t parallel = backend == BackendKind::fake ? std::min<std::size_t>(2, cores) : 1;
    run_in_children(work, parallel, std::chrono::seconds(options.timeout_s),
                    [&](std::size_t k, const ChildReport& child) {
                      const Job& job = jobs[indices[k]];
                      ClauseResult& r = results[indices[k]];
                      r = result_from_child(child, *job.clause, job.backend,
                                            job.clause->effective_level(capabilities),
                                            options.timeout_s);
                      char line[160];
                      std::snprintf(line, sizeof line, "[%3zu/%zu] %-10s %-5s %-14s %8.0f ms",
                                    ++done, jobs.size(), r.clause->id.c_str(),
                                    std::string(to_string(r.backend)).c_str(),
                                    std::string(to_string(r.outcome)).c_str(), r.duration_ms);
                      out << line << "\n";
                      out.flush();
                    });
  }
  report.results = std::move(results);
  const Certificate certificate = make_certificate(std::move(report));

  out << "\n" << to_text(certificate);
  out.flush();
  bool written = true;
  if (!options.json_path.empty()) {
    written &= write_file(options.json_path, to_json(certificate), err);
  }
  if (!options.junit_path.empty()) {
    written &= write_file(options.junit_path, to_junit(certificate), err);
  }
  if (!options.markdown_path.empty()) {
    written &= write_file(options.markdown_path, to_markdown(certificate), err);
  }
  if (!written) return kExitUsage;
  return certificate.verdict.certified ? kExitCertified : kExitNotCertified;
}

}  // namespace emm::conformance
