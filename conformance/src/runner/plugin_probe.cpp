#include "emm/conformance/plugin_probe.hpp"

#include "emm/conformance/child_process.hpp"
#include "emm/conformance/clause_run.hpp"
#include "emm/errors.hpp"
#include "emm/plugin_loader.hpp"
#include "runner/field_codec.hpp"

namespace emm::conformance {
namespace {

using namespace field_codec;

constexpr std::string_view kMagic = "EMMLOAD1\n";

std::string encode(const ProbeResult& probe) {
  std::string out(kMagic);
  put(out, probe.loaded ? "loaded" : "failed");
  put(out, probe.failure);
  put(out, probe.description.name);
  put(out, probe.description.defer_cleanup_behaviour);
  std::vector<std::string> declared;
  for (const CapabilityField& field : kCapabilityFields) {
    if (emm::declared(probe.description.capabilities, field)) declared.emplace_back(field.name);
  }
  put_list(out, declared);
  put(out, probe.interface_version ? std::to_string(*probe.interface_version) : "");
  put(out, probe.interface_problem);
  return out;
}

std::optional<ProbeResult> decode(std::string_view in, const std::string& path) {
  if (!in.starts_with(kMagic)) return std::nullopt;
  in.remove_prefix(kMagic.size());
  ProbeResult probe;
  std::string status, version;
  std::vector<std::string> declared;
  if (!take(in, status) || !take(in, probe.failure) || !take(in, probe.description.name) ||
      !take(in, probe.description.defer_cleanup_behaviour) || !take_list(in, declared) ||
      !take(in, version) || !take(in, probe.interface_problem) || !in.empty()) {
    return std::nullopt;
  }
  if (status != "loaded" && status != "failed") return std::nullopt;
  probe.loaded = status == "loaded";
  probe.description.path = path;
  probe.description.capabilities = Capabilities{.runs_on_fake_driver = false};
  for (const std::string& name : declared) {
    const CapabilityField* field = find_capability(name);
    if (field == nullptr) return std::nullopt;
    probe.description.capabilities.*field->flag = true;
  }
  if (!version.empty()) {
    try {
      std::size_t used = 0;
      probe.interface_version = std::stoi(version, &used);
      if (used != version.size()) return std::nullopt;
    } catch (...) {
      return std::nullopt;
    }
  }
  return probe;
}

}  // namespace

namespace {

// Loads the library and reads its declaration (probe.loaded, probe.description).
ProbeResult load_and_describe(const std::string& path, const PluginLoad& load,
                              LoadedPlugin& plugin) {
  ProbeResult probe;
  try {
    plugin = load ? load() : load_plugin(path);
  } catch (const std::exception& error) {
    probe.failure = error.what();
    return probe;
  }
  probe.loaded = true;
  probe.description = PluginDescription::from(plugin.declaration(), path);
  return probe;
}

// Builds a null-context instance, asks it for interface_version() and destroys it (REG-1/2).
void ask_null_context_instance(const LoadedPlugin& plugin, ProbeResult& probe) {
  try {
    const std::unique_ptr<BaseCUDAMemoryManager> instance = plugin.factory()(nullptr);
    if (instance) {
      probe.interface_version = instance->interface_version();
    } else {
      probe.interface_problem = "the factory returned null for a null context";
    }
  } catch (...) {
    probe.interface_problem =
        "a null-context instance could not be asked: " + describe_current_exception();
  }
}

// What the first frame of a probe child says while the null-context instance is asked: if the
// process ends before the second, the library did load and the instance ended it (REG-2's
// failure, not a load failure).
constexpr std::string_view kInstanceEndedTheProcess =
    "the process ended while a null-context instance was built, asked for interface_version() "
    "and destroyed";

}  // namespace

ProbeResult probe_plugin_in_process(const std::string& path, const PluginLoad& load) {
  LoadedPlugin plugin;
  ProbeResult probe = load_and_describe(path, load, plugin);
  if (probe.loaded) ask_null_context_instance(plugin, probe);
  return probe;
}

namespace {

// The hint for a load that a sanitizer runtime stopped (ASan must come first in the process;
// TSan cannot be dlopen()ed at all; a clang-built plugin lacks the runtime's symbols), or "".
std::string sanitizer_hint(std::string_view text) {
  for (const std::string_view sign :
       {std::string_view("Sanitizer"), std::string_view("ASan runtime"),
        std::string_view("libasan.so"), std::string_view("libtsan.so"), std::string_view("__asan_"),
        std::string_view("__tsan_")}) {
    if (text.find(sign) != std::string_view::npos) {
      return " (a plugin built with a sanitizer: preload its runtime into emm-certify, "
             "LD_PRELOAD=$(c++ -print-file-name=libasan.so) or libtsan.so; see "
             "docs/troubleshooting.md, \"Sanitizer builds\")";
    }
  }
  return "";
}

ProbeResult probe_in_child(const std::string& path, const ProbeSettings& settings,
                           const PluginLoad& load) {
  ProbeResult failed;
  ChildOptions options;
  options.result_channel = true;
  options.memory_limit_bytes = settings.memory_limit_bytes;
  std::optional<ChildProcess> child;
  try {
    child.emplace(ChildProcess::fork(
        [&path, &load] {
          // Two frames: the load report first, then the same with the null-context instance's
          // answer, so that an instance that crashes or hangs (in its destructor, say) is
          // reported as REG-2's failure with full reports, not as a library that cannot load.
          LoadedPlugin plugin;
          ProbeResult probe = load_and_describe(path, load, plugin);
          if (probe.loaded) {
            ProbeResult provisional = probe;
            provisional.interface_problem = kInstanceEndedTheProcess;
            send_result_frame(encode(provisional));
            ask_null_context_instance(plugin, probe);
          }
          send_result_frame(encode(probe));
          return 0;
        },
        options));
  } catch (const std::exception& error) {
    failed.failure = std::string("no process could be started to load it: ") + error.what();
    return failed;
  }
  const ChildEnd end = child->wait(settings.timeout);
  kill_stray_children();
  std::string output = child->output().tail(1500);
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  const std::string printed = output.empty() ? "" : "; it printed: " + output;
  // The last complete frame (one or two; see above).
  std::string problem = "no bytes";
  std::optional<std::string> payload;
  std::string_view bytes = child->result_bytes();
  while (!bytes.empty()) {
    const FrameScan scan = scan_frame(bytes);
    if (scan.status != FrameScan::Status::complete) {
      problem = scan.problem;
      break;
    }
    payload.emplace(scan.payload);
    bytes.remove_prefix(scan.frame_size);
    problem.clear();
  }
  if (end.kind == ChildEnd::Kind::exited && end.exit_status == 0 && payload && problem.empty()) {
    if (std::optional<ProbeResult> probe = decode(*payload, path)) {
      if (!probe->loaded) probe->failure += printed;
      return *probe;
    }
    problem = "it answered with something that is not a load report";
  }
  // The library loaded, then the null-context instance ended the process (or hung): REG-2.
  if (payload && end.kind != ChildEnd::Kind::exited) {
    if (std::optional<ProbeResult> probe = decode(*payload, path);
        probe && probe->loaded && probe->interface_problem == kInstanceEndedTheProcess) {
      probe->interface_problem += end.kind == ChildEnd::Kind::timed_out
                                      ? ": it did not finish within " +
                                            std::to_string(settings.timeout.count() / 1000) + " s" +
                                            printed
                                      : ": it " + end.describe() + printed;
      return *probe;
    }
  }
  if (end.kind == ChildEnd::Kind::timed_out) {
    failed.failure = "loading it did not finish within " +
                     std::to_string(settings.timeout.count() / 1000) +
                     " s (a static initialiser or the entry point hangs)" + printed;
  } else if (end.kind == ChildEnd::Kind::exited && end.exit_status == 0) {
    failed.failure =
        "the process that loaded it ended without a load report (" + problem + ")" + printed;
  } else {
    failed.failure = "the process that loaded it " + end.describe() +
                     " before it could report (a static initialiser or the entry point ended "
                     "it)" +
                     printed;
  }
  return failed;
}

}  // namespace

ProbeResult probe_plugin(const std::string& path, const ProbeSettings& settings,
                         const PluginLoad& load) {
  ProbeResult probe = probe_in_child(path, settings, load);
  if (!probe.loaded) probe.failure += sanitizer_hint(probe.failure);
  return probe;
}

}  // namespace emm::conformance
