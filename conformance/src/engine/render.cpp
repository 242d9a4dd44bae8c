#include "engine/render.hpp"

#include <sstream>

namespace emm::conformance::engine {

// Each line of `text` prefixed with `prefix` (render.hpp).
std::string indent_lines(std::string_view text, std::string_view prefix) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += prefix;
    out += line;
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

namespace {

std::string replay_command(const ClauseRun& run, const Reproducer& reproducer,
                           std::string_view subject) {
  return str("emm-certify ", subject, " --backend ", run.backend().name(), " --only ", run.id(),
             " --seed ", reproducer.seed, " --budget ", reproducer.budget);
}

}  // namespace

std::string render_gtest(const ClauseRun& run, const Trace& trace, std::string_view failure,
                         const Reproducer& reproducer) {
  std::ostringstream out;
  const std::string name = run.clause().key();
  out << "// " << run.id() << ": the shortest failing sequence found (" << trace.calls.size()
      << " calls). `" << replay_command(run, reproducer, "--plugin <your plugin library>")
      << "` replays it.\n"
      << "// Needs <emm/fake/fake_driver.hpp>, <emm/runtime.hpp>, <gtest/gtest.h>, <cstdlib>, "
         "<thread>; rename MyPlugin to your plugin's class.\n"
      << "TEST(EmmReproducer, " << name << ") {\n";
  if (trace.devices > 1) {
    out << "  emm::FakeSystemConfig machine;\n"
        << "  machine.devices.resize(" << trace.devices << ");\n"
        << "  auto driver = std::make_shared<emm::FakeDriver>(machine);\n";
  } else {
    out << "  auto driver = std::make_shared<emm::FakeDriver>();\n";
  }
  out << "  emm::Runtime runtime(driver);\n"
      << "  runtime.set_memory_manager<MyPlugin>();\n";
  if (trace.bare) {
    out << "  // The plugin is constructed while no context is current and nothing else is called "
           "(LIFE-4, LIFE-5).\n"
        << "  std::vector<std::unique_ptr<emm::Context>> bare;\n"
        << "  for (int device = 0; device < " << trace.devices << "; ++device) {\n"
        << "    CUcontext handle = driver->primary_ctx_retain(device);\n"
        << "    driver->ctx_set_current(nullptr);\n"
        << "    bare.push_back(std::make_unique<emm::Context>(runtime, device, handle,\n"
        << "        [](emm::Context* c) { return std::make_unique<MyPlugin>(c); },\n"
        << "        runtime.dealloc_config()));\n"
        << "  }\n"
        << "  auto context = [&](int device = 0) -> emm::Context& {\n"
        << "    bare[device]->make_current();\n"
        << "    return *bare[device];\n"
        << "  };\n";
  } else {
    out << "  auto context = [&](int device = 0) -> emm::Context& { return "
           "runtime.get_context(device); };\n";
    for (int device = 0; device < trace.devices; ++device) {
      out << "  context(" << device << ");  // constructs the plugin, then initialize()\n";
    }
  }
  out << "  auto factory = [](emm::Context* c) { return std::make_unique<MyPlugin>(c); };\n";
  for (const auto& [index, size] : trace.buffers) {
    out << "  std::shared_ptr<std::byte> buffer" << index
        << "(static_cast<std::byte*>(std::aligned_alloc(4096, " << size << ")), std::free);\n";
  }
  for (const Call& call : trace.calls) out << indent_lines(call.cpp, "  ");
  out << indent_lines(str("The call above fails the clause: ", failure), "  // ");
  if (!trace.assertion_cpp.empty()) out << indent_lines(trace.assertion_cpp, "  ");
  out << "}\n";
  return out.str();
}

std::string render_python(const ClauseRun& run, const Trace& trace, std::string_view failure,
                          const Reproducer& reproducer) {
  std::ostringstream out;
  out << "# " << run.id() << ": the shortest failing sequence found (" << trace.calls.size()
      << " calls).\n# `" << replay_command(run, reproducer, "--python <module:Class>")
      << "` replays it. Set Plugin to your class.\n"
      << "import threading\n"
      << "import numpy as np\n"
      << "from numba import cuda\n\n"
      << "cuda.set_memory_manager(Plugin)\n"
      << "ctx = cuda.current_context()\n";
  if (trace.devices > 1) {
    out << "with cuda.gpus[1]:\n    ctx1 = cuda.current_context()\n";
  }
  for (const auto& [index, size] : trace.buffers) {
    out << "buffer" << index << " = np.zeros(" << size << ", dtype=np.uint8)\n";
  }
  for (const Call& call : trace.calls) out << call.python << "\n";
  out << indent_lines(str("The call above fails the clause: ", failure), "# ");
  if (!trace.assertion_python.empty()) out << trace.assertion_python << "\n";
  return out.str();
}

}  // namespace emm::conformance::engine
