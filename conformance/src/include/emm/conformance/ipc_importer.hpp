// emm/conformance/ipc_importer.hpp — the importing process of the IPC checks (IPC-1, IPC-2,
// IPC-3, DEV-4) and the client that runs it.
//
// An exporter serializes each handle; another process deserializes it, opens it through its own
// Runtime (default manager), reads the view's bytes, optionally checks the handle's state
// machine and fills the view, and closes it (serve_import_request(), the per-handle steps are
// in ipc_wire.hpp's ImportItem). On the fake backend that process is a second simulated process
// (FakeDriver::spawn_process()) and serve_import_request() runs in-process; on a GPU it is the
// emm-ipc-importer program — exec'd, because CUDA cannot be used in a forked child of a process
// that initialised it.
//
//   ImporterProcess importer(find_ipc_importer());
//   importer.start();                     // its CUDA start overlaps what the caller does next
//   ImportRequest request;
//   request.items.push_back({handle.serialize()});
//   ImportResponse response = importer.import(request, std::chrono::seconds(60));
//   if (response.answers[0].ok) use(response.answers[0].bytes);
//
// The program starts CUDA as soon as it runs (one Runtime for its whole life), says so with a
// "ready" frame on its result channel, then answers each request frame from its command channel
// with one response frame, until that channel closes (child_process.hpp, ipc_wire.hpp). One
// process serves every import of a certification worker, so the clauses that import pay no CUDA
// start of their own. run_import() is the one-request form.
//
// Finding the program, the one way every user does (emm-certify, the conformance suites, the GPU
// suites): find_ipc_importer() — $EMM_IPC_IMPORTER when set, else emm-ipc-importer beside the
// running program, else the build tree's, else the install tree's.
//
// Thread-safety: the free functions are re-entrant; an ImporterProcess is used by one thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/child_process.hpp"
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
// The same with a runtime made beforehand: null when it could not be made, `why_none` saying
// why.
std::string answer_import_request(std::string_view request, Runtime* runtime,
                                  std::string_view why_none);

// emm-ipc-importer's main(): starts CUDA, sends the ready frame, then answers every request
// from the command channel over the real driver until the channel closes. Exit status 0 when it
// answered, 2 when the channel closed before any request came.
int ipc_importer_main();

// The emm-ipc-importer program (see above), or "" when none exists.
std::string find_ipc_importer();

// One emm-ipc-importer process that answers request after request. A process that fails in
// any way (no answer by the deadline, bytes that are not an answer, an exit) is killed, and the
// next import() starts a new one.
class ImporterProcess {
 public:
  using Clock = ChildProcess::Clock;

  explicit ImporterProcess(std::string program);

  // Starts the process if none runs (returns at once: it starts CUDA on its own). Throws
  // ProcessError when it cannot be started.
  void start();
  // Waits until the running process has started CUDA, at most until `deadline`; false (and no
  // process any more, `problem` saying why) when it ended or did not get there.
  bool wait_ready(Clock::time_point deadline, std::string& problem);
  // Its response to `request` (check response.error), starting a process when none runs.
  // Throws ProcessError when no process could start or none answered within `timeout`, and
  // IpcWireError when the answer is not a response for this request; the message says how the
  // process ended and what it printed.
  ImportResponse import(const ImportRequest& request, std::chrono::milliseconds timeout);
  // Closes the command channel and waits until the process has ended (at most until
  // `deadline`, then kills it). Throws IpcWireError when it wrote anything after its last
  // answer.
  void finish(Clock::time_point deadline);

 private:
  // Kills the process and forgets it: how it ended and what it printed.
  struct Stopped {
    std::string how;
    std::string output;
  };
  Stopped stop();
  [[noreturn]] void fail_process(const std::string& what);

  std::string program_;
  std::optional<ChildProcess> child_;
  bool ready_ = false;
};

// Runs `importer` on `request` alone (ImporterProcess for one request) and returns its response.
// Throws as ImporterProcess::import() does, and IpcWireError when the process writes anything
// after its answer.
ImportResponse run_import(const std::string& importer, const ImportRequest& request,
                          std::chrono::milliseconds timeout);

}  // namespace emm::conformance
