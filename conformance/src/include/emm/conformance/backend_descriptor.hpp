// emm/conformance/backend_descriptor.hpp — each backend as one registered descriptor: its name,
// whether it can run here, how to make one, and the facts about it that the runner and the
// engine act on. Nothing in the kit tests a backend's kind; it asks the kind's descriptor.
//
//   const BackendDescriptor& fake = backend_descriptor(BackendKind::fake);
//   fake.name;                                  // "fake"
//   std::unique_ptr<Backend> b = fake.make(settings, /*keep_context=*/true);
//
// The registry (backend_descriptor(), core/backend.cpp) has one row per row of
// EMM_BACKEND_KINDS (backend_kind.hpp); each, `<row>_backend_descriptor`, is defined beside its
// Backend implementation (core/fake_backend.cpp, core/gpu_backend.cpp). Adding a backend: its
// row in EMM_BACKEND_KINDS and a new core/<row>_backend.cpp with its implementation and
// descriptor, which the build picks up when CMake configures (conformance/CMakeLists.txt globs
// core/*_backend.cpp).
//
// Thread-safety: the descriptors are constants, and their functions may be called from any
// thread, as make_backend() may.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/backend_kind.hpp"
#include "emm/plugin_declaration.hpp"

namespace emm::conformance {

struct BackendDescriptor {
  BackendKind kind;
  std::string_view name;  // the command line's and the reports' word: "fake", "gpu"
  // "" when the backend can certify a plugin with these capabilities here, else why not
  // ("no GPU: ..."): backend_unavailable_reason().
  std::string (*unavailable_reason)(const Capabilities& capabilities);
  // A backend for a clause; `keep_context`: hold what the backend starts for the rest of the
  // process (false for a probe that only names the devices). Throws when it cannot run.
  std::unique_ptr<Backend> (*make)(const BackendSettings& settings, bool keep_context);
  // More for the certificate's device line after the devices' names, or "" (describe_devices()).
  std::string (*device_note)();
  // Readies a worker before its first clause (prepare_process()).
  void (*prepare_process)(bool will_import, std::chrono::milliseconds timeout);
  // Generated sequences per clause by default (exploration.hpp): what a sequence costs there.
  int default_budget;
  // The backend survives fork(): a child may make and use one. When false (CUDA), emm-certify
  // probes it in a child so that its own process never starts it, and the engines run their
  // sequences in the clause's process instead of forked children (no crash reproducers).
  bool fork_safe;
  // Clauses may run on it in several processes at once (each fake process has a machine of its
  // own; a GPU is shared, so its clauses run in one process at a time).
  bool side_by_side;
  // Its memory is the kit's simulation: making and releasing blocks costs nothing, filling it
  // maps no pages, and every process may end its threads at exit. A real GPU's release
  // synchronises the device and a fill maps every page, so commands there are kept shorter.
  bool simulated;
};

// The descriptor of `kind`.
[[nodiscard]] const BackendDescriptor& backend_descriptor(BackendKind kind) noexcept;

}  // namespace emm::conformance
