// emm/conformance/ipc_importer.hpp — the importing process of the IPC checks (IPC-1, IPC-2,
// IPC-3) and the client that runs it.
//
// An exporter serializes each handle; another process deserializes it, opens it through its own
// Runtime (default manager), reads the view's bytes, optionally checks the handle's state
// machine and fills the view, and closes it (serve_import_request(), the per-handle steps are
// in ipc_wire.hpp's ImportItem). On the fake backend that process is a second simulated process
// (FakeDriver::spawn_process()) and serve_import_request() runs in-process; on a GPU it is the
// emm-ipc-importer program, started by run_import() — exec'd, because CUDA cannot be used in a
// forked child of a process that initialised it.
//
//   ImportRequest request;
//   request.items.push_back({handle.serialize()});
//   ImportResponse response = run_import(find_ipc_importer(), request, std::chrono::seconds(60));
//   if (response.answers[0].ok) use(response.answers[0].bytes);
//
// The program reads one request frame from its command channel and writes one response frame on
// its result channel (child_process.hpp, ipc_wire.hpp).
//
// Finding the program, the one way every user does (emm-certify, the conformance suites, the GPU
// suites): find_ipc_importer() — $EMM_IPC_IMPORTER when set, else emm-ipc-importer beside the
// running program, else the build tree's, else the install tree's.
//
// Thread-safety: the functions are re-entrant; run_import() starts a child (child_process.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/ipc_wire.hpp"
#include "emm/runtime.hpp"

namespace emm::conformance {

// What the importing process does with each item, in `runtime`. A failing item gets its error;
// the others are unaffected.
ImportResponse serve_import_request(Runtime& runtime, const ImportRequest& request);

// The importing process's whole work on request bytes: a malformed request gets a response
// whose error says why; when `make_runtime` throws, every item is answered "the importing
// process could not start CUDA: <why>"; otherwise serve_import_request(). Returns the encoded
// response.
std::string answer_import_request(std::string_view request,
                                  const std::function<std::unique_ptr<Runtime>()>& make_runtime);

// emm-ipc-importer's main(): one request from the command channel, answered over the real
// driver on the result channel. Exit status 0 when it answered, 2 when no request arrived.
int ipc_importer_main();

// The emm-ipc-importer program (see above), or "" when none exists.
std::string find_ipc_importer();

// Runs `importer` on `request` and returns its response (check response.error). Throws
// ProcessError when it cannot be started or gives no complete answer within `timeout`, and
// IpcWireError when it answers something that is not a response for this request; the message
// says how the process ended and what it printed.
ImportResponse run_import(const std::string& importer, const ImportRequest& request,
                          std::chrono::milliseconds timeout);

}  // namespace emm::conformance
