// emm_bench_certify — the wall time of one full certification per backend and isolation mode:
//
//   Certify/<plugin>/<backend>/<mode>    emm-certify --plugin <plugin .so> --backend <backend>
//                                                    <mode's arguments> --json <temporary file>
//
// with the modes of certify_cli.hpp: `worker` (--isolation backend, the default: one worker
// process per backend), `clause` (--isolation clause: one process per clause, what every
// certification paid before workers) and `in-process` (--in-process: no isolation at all, the
// floor the other two are measured against). Each runs as a child process (ChildProcess,
// child_process.hpp; its output is kept only to explain a failure), timed from spawn to exit,
// within 30 minutes: once on the gpu (seconds each), and on the fake the mean of kFakeRuns runs (a
// fraction of a second each, where one run on a 2-core machine varies by a fifth). The verdict is
// the benchmark's label; for NOT CERTIFIED the label also names the clauses that failed, crashed or
// timed out (read from the JSON report), so a flaky clause is visible. The paths come from the
// build (EMM_BENCH_CERTIFY, EMM_BENCH_PLUGIN_<name>), and the environment variables of the same
// names override them (for executables run away from their build tree); a configuration without
// emm-certify or the plugin reports the benchmark as skipped. Exit status 0 (CERTIFIED) and 1 (NOT
// CERTIFIED, still a complete certification) are timed; anything else is an error.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "emm/conformance/child_process.hpp"

namespace emm::bench {
namespace {

constexpr int kFakeRuns = 5;

#ifdef EMM_BENCH_CERTIFY
constexpr const char* kCertify = EMM_BENCH_CERTIFY;
#else
constexpr const char* kCertify = "";
#endif

struct Plugin {
  const char* name;
  const char* path;
  const char* variable;  // overrides `path` when set
};

// `variable` from the environment when set, else the path the build compiled in.
std::string path_from(const char* variable, const char* built) {
  const char* set = std::getenv(variable);
  return set != nullptr && *set != '\0' ? std::string(set) : std::string(built);
}

struct Mode {
  const char* name;
  std::vector<std::string> arguments;
};

const std::vector<Mode>& modes() {
  static const std::vector<Mode> all = {{"worker", {"--isolation", "backend"}},
                                        {"clause", {"--isolation", "clause"}},
                                        {"in-process", {"--in-process"}}};
  return all;
}

constexpr Plugin kCertifiedPlugins[] = {
#ifdef EMM_BENCH_PLUGIN_REFERENCE
    {"reference", EMM_BENCH_PLUGIN_REFERENCE, "EMM_BENCH_PLUGIN_REFERENCE"},
#else
    {"reference", "", "EMM_BENCH_PLUGIN_REFERENCE"},
#endif
};

// User + system time of every reaped descendant of this process so far (ms).
double children_cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

// Runs `arguments`; returns the exit status, or -1 with `why` set.
int run_quietly(const std::vector<std::string>& arguments, std::string& why) {
  using conformance::ChildEnd;
  using conformance::ChildProcess;
  conformance::ChildOptions options;
  options.output_keep_bytes = 4096;
  try {
    ChildProcess child = ChildProcess::exec(
        arguments[0], std::vector<std::string>(arguments.begin() + 1, arguments.end()), options);
    const ChildEnd end = child.wait(std::chrono::minutes(30));
    if (end.kind == ChildEnd::Kind::exited) return end.exit_status;
    why = arguments[0] + " " + end.describe() + "; its output ends: " + child.output().tail(600);
  } catch (const conformance::ProcessError& error) {
    why = error.what();
  }
  return -1;
}

// The JSON string value that starts at text[at] (just after its opening quote), unescaped
// loosely (escapes are kept as the escaped character).
std::string json_string_at(const std::string& text, std::size_t at) {
  std::string value;
  for (std::size_t i = at; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    value += text[i];
  }
  return value;
}

// The value of the string field `key` of the first occurrence at or after `from`, or "".
std::string json_field(const std::string& text, const std::string& key, std::size_t from,
                       std::size_t* where = nullptr) {
  const std::string quoted = "\"" + key + "\"";
  const std::size_t found = text.find(quoted, from);
  if (found == std::string::npos) return {};
  const std::size_t open = text.find('"', text.find(':', found + quoted.size()));
  if (open == std::string::npos) return {};
  if (where != nullptr) *where = found;
  return json_string_at(text, open + 1);
}

// "LIFE-7 fail: <message>; ..." for every result that is not pass / not_supported.
std::string failed_clauses(const std::string& report_path) {
  std::ifstream in(report_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string summary;
  std::size_t at = text.find("\"results\"");
  while (at != std::string::npos) {
    std::size_t clause_at = 0;
    const std::string clause = json_field(text, "clause", at, &clause_at);
    if (clause.empty()) break;
    const std::string outcome = json_field(text, "outcome", clause_at);
    if (outcome != "pass" && outcome != "not_supported") {
      std::string message = json_field(text, "message", clause_at);
      if (message.size() > 160) message = message.substr(0, 157) + "...";
      if (!summary.empty()) summary += "; ";
      summary += clause + " " + outcome + ": " + message;
    }
    at = clause_at + 1;
  }
  return summary;
}

void certify(benchmark::State& state, const Plugin& plugin, Backend backend, const Mode& mode) {
  const std::string certifier = path_from("EMM_BENCH_CERTIFY", kCertify);
  const std::string library = path_from(plugin.variable, plugin.path);
  if (certifier.empty()) {
    state.SkipWithError("emm-certify is not built in this configuration");
    return;
  }
  if (library.empty()) {
    state.SkipWithError(
        (std::string(plugin.name) + " plugin is not built in this configuration").c_str());
    return;
  }
  if (backend == Backend::gpu && !gpu_unavailable_reason().empty()) {
    state.SkipWithError(("no GPU: " + gpu_unavailable_reason()).c_str());
    return;
  }
  char report[] = "/tmp/emm_bench_certify_XXXXXX";
  const int descriptor = mkstemp(report);
  if (descriptor < 0) {
    state.SkipWithError((std::string("mkstemp: ") + std::strerror(errno)).c_str());
    return;
  }
  close(descriptor);
  std::vector<std::string> arguments = {
      certifier, "--plugin", library, "--backend", std::string(name_of(backend)), "--json", report};
  arguments.insert(arguments.end(), mode.arguments.begin(), mode.arguments.end());
  int status = 0;
  std::string why;
  double cpu_ms = 0;
  for (auto _ : state) {
    const double cpu_before = children_cpu_ms();
    Stopwatch watch;
    watch.start();
    status = run_quietly(arguments, why);
    state.SetIterationTime(watch.stop_ns() * 1e-9);
    cpu_ms += children_cpu_ms() - cpu_before;
  }
  // The processor time emm-certify and its children took (user + system): on a busy machine the
  // wall time also counts waiting for a core, this does not.
  state.counters["cpu_ms"] = cpu_ms / static_cast<double>(state.iterations());
  if (status < 0) {
    state.SkipWithError(why.c_str());
  } else if (status > 1) {
    state.SkipWithError(("emm-certify exited with status " + std::to_string(status) +
                         " (2: usage error or the plugin could not be loaded)")
                            .c_str());
  } else {
    state.SetLabel(status == 0 ? "CERTIFIED" : "NOT CERTIFIED: " + failed_clauses(report));
    state.counters["certified"] = status == 0 ? 1 : 0;
  }
  unlink(report);
}

void register_all() {
  for (const Plugin& plugin : kCertifiedPlugins) {
    for (Backend backend : kBackends) {
      for (const Mode& mode : modes()) {
        const std::string name = "Certify/" + std::string(plugin.name) + "/" +
                                 std::string(name_of(backend)) + "/" + mode.name;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [&plugin, backend, &mode](benchmark::State& state) {
                                       certify(state, plugin, backend, mode);
                                     })
            ->UseManualTime()
            ->Iterations(backend == Backend::fake ? kFakeRuns : 1)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace
}  // namespace emm::bench

int main(int argc, char** argv) {
  emm::bench::register_all();
  return emm::bench::run_main(argc, argv);
}
