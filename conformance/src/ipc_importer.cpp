// The importing process of the IPC checks and its client (ipc_importer.hpp).
#include "emm/conformance/ipc_importer.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "emm/conformance/child_process.hpp"
#include "emm/context.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/ipc_handle.hpp"

namespace emm::conformance {
namespace {

// The importer's first frame: it has started CUDA (or knows why it cannot) and takes requests.
constexpr std::string_view kImporterReady = "emm-ipc-importer ready";

bool executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

std::string running_program_dir() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.parent_path().string();
}

// IPC-3 in the importing process, on a handle just opened in `context` as `view`.
void check_state_machine(IpcHandle& handle, Context& context, const MemoryPointer& view) {
  bool refused = false;
  try {
    handle.open(context);
  } catch (const IpcStateError& error) {
    if (std::string(error.what()) != "IpcHandle is already opened") {
      throw Error(std::string("IPC-3: a second open() threw IpcStateError(\"") + error.what() +
                  "\"), expected \"IpcHandle is already opened\"");
    }
    refused = true;
  }
  if (!refused) {
    throw Error(
        "IPC-3: a second open() of the same handle was not refused (expected IpcStateError "
        "\"IpcHandle is already opened\")");
  }
  if (view.size() != handle.size()) {
    throw Error("IPC-3: the opened view has " + std::to_string(view.size()) +
                " bytes, the handle says " + std::to_string(handle.size()));
  }
}

ImportAnswer import_one(Runtime& runtime, const ImportItem& item) {
  IpcHandle handle = IpcHandle::deserialize(item.handle);
  if (item.check_state_machine && handle.base() != nullptr) {
    throw Error("IPC-3: a deserialized handle has a base pointer; it must have none");
  }
  Context& context = item.context == ImportContext::source_device && handle.source_info()
                         ? runtime.context_for_identity(*handle.source_info())
                         : runtime.get_context(0);
  std::shared_ptr<MemoryPointer> view = handle.open(context);
  if (item.check_state_machine) check_state_machine(handle, context, *view);
  ImportAnswer answer;
  answer.bytes.resize(view->size());
  context.make_current();
  if (!answer.bytes.empty()) {
    context.driver().memcpy_dtoh(answer.bytes.data(), view->device_pointer(), answer.bytes.size());
  }
  if (item.fill) {
    context.driver().memset_d8(view->device_pointer(), *item.fill, view->size());
    context.driver().ctx_synchronize();
  }
  view.reset();
  handle.close();
  answer.ok = true;
  return answer;
}

std::unique_ptr<Runtime> cuda_runtime() {
  // The importer's own environment must not pick a plugin: it imports with the default manager.
  return std::make_unique<Runtime>(CudaDriver::load(), RuntimeOptions::hermetic());
}

std::string output_of(const ChildProcess& child) {
  std::string text = child.output().tail(2000);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "it printed nothing" : "its output: " + text;
}

}  // namespace

ImportResponse serve_import_request(Runtime& runtime, const ImportRequest& request) {
  ImportResponse response;
  for (const ImportItem& item : request.items) {
    try {
      response.answers.push_back(import_one(runtime, item));
    } catch (const std::exception& error) {
      response.answers.push_back({false, {}, error.what()});
    }
  }
  return response;
}

std::string answer_import_request(std::string_view request_bytes, Runtime* runtime,
                                  std::string_view why_none) {
  ImportResponse response;
  ImportRequest request;
  try {
    request = decode_import_request(request_bytes);
  } catch (const IpcWireError& error) {
    response.error = error.what();
    return encode_import_response(response);
  }
  if (runtime == nullptr) {
    const std::string why =
        std::string("the importing process could not start CUDA: ") + std::string(why_none);
    for (std::size_t i = 0; i < request.items.size(); ++i)
      response.answers.push_back({false, {}, why});
    return encode_import_response(response);
  }
  return encode_import_response(serve_import_request(*runtime, request));
}

std::string answer_import_request(std::string_view request_bytes,
                                  const std::function<std::unique_ptr<Runtime>()>& make_runtime) {
  try {
    decode_import_request(request_bytes);
  } catch (const IpcWireError&) {
    return answer_import_request(request_bytes, nullptr, "");  // the error, without CUDA
  }
  std::unique_ptr<Runtime> runtime;
  std::string why_none;
  try {
    runtime = make_runtime();
  } catch (const std::exception& error) {
    why_none = error.what();
  }
  return answer_import_request(request_bytes, runtime.get(), why_none);
}

int ipc_importer_main() {
  // CUDA first, before any request can arrive: the client starts this process ahead of its
  // first import so that this overlaps its own work. Device 0's context is made here too (the
  // one every request on a machine of one GPU opens its handles in).
  std::unique_ptr<Runtime> runtime;
  std::string why_none;
  try {
    runtime = cuda_runtime();
    runtime->get_context(0).make_current();
  } catch (const std::exception& error) {
    runtime.reset();
    why_none = error.what();
  }
  send_result_frame(std::string(kImporterReady));
  bool answered = false;
  for (;;) {
    std::optional<std::string> request;
    try {
      request = read_command_frame();
    } catch (const ProcessError& error) {
      // The channel's framing is lost: answer with why, and take no further request.
      ImportResponse response;
      response.error = std::string("malformed IPC import request: ") + error.what();
      send_result_frame(encode_import_response(response));
      return 0;
    }
    if (!request) break;
    send_result_frame(answer_import_request(*request, runtime.get(), why_none));
    answered = true;
  }
  if (!answered) {
    std::fprintf(stderr, "emm-ipc-importer: the command channel closed before a request came\n");
    return 2;
  }
  return 0;
}

std::string find_ipc_importer() {
  if (const char* env = std::getenv("EMM_IPC_IMPORTER"); env != nullptr && executable(env)) {
    return env;
  }
  if (const std::string dir = running_program_dir(); !dir.empty()) {
    if (const std::string next = dir + "/emm-ipc-importer"; executable(next)) return next;
  }
#ifdef EMM_IPC_IMPORTER_BUILD_PATH
  if (executable(EMM_IPC_IMPORTER_BUILD_PATH)) return EMM_IPC_IMPORTER_BUILD_PATH;
#endif
#ifdef EMM_IPC_IMPORTER_INSTALL_PATH
  if (executable(EMM_IPC_IMPORTER_INSTALL_PATH)) return EMM_IPC_IMPORTER_INSTALL_PATH;
#endif
  return "";
}

ImporterProcess::ImporterProcess(std::string program) : program_(std::move(program)) {}

ImporterProcess::Stopped ImporterProcess::stop() {
  const ChildEnd end = child_->kill();
  Stopped stopped{end.describe(), output_of(*child_)};
  child_.reset();
  ready_ = false;
  return stopped;
}

void ImporterProcess::fail_process(const std::string& what) {
  const Stopped stopped = stop();
  throw ProcessError(program_ + " " + stopped.how + "; " + what + "; " + stopped.output);
}

void ImporterProcess::start() {
  if (child_ && child_->running()) return;
  ChildOptions options;
  options.command_channel = true;
  options.result_channel = true;
  child_.emplace(ChildProcess::exec(program_, {}, options));
  ready_ = false;
}

bool ImporterProcess::wait_ready(Clock::time_point deadline, std::string& problem) {
  if (!child_) {
    problem = "no importing process runs";
    return false;
  }
  if (ready_) return true;
  const FrameWait wait = child_->wait_for_frame(deadline);
  if (wait.status == FrameWait::Status::frame && wait.payload == kImporterReady) {
    ready_ = true;
    return true;
  }
  problem = wait.status == FrameWait::Status::frame ? "its first frame was not the ready frame"
            : wait.status == FrameWait::Status::garbage
                ? "its first bytes were not a frame: " + wait.problem
            : wait.status == FrameWait::Status::deadline ? "it did not start CUDA in time"
                                                         : "it ended before it was ready";
  const Stopped stopped = stop();
  problem = program_ + " " + stopped.how + "; " + problem + "; " + stopped.output;
  return false;
}

ImportResponse ImporterProcess::import(const ImportRequest& request,
                                       std::chrono::milliseconds timeout) {
  const std::string wire = encode_import_request(request);
  const auto deadline = Clock::now() + timeout;
  start();
  if (std::string problem; !wait_ready(deadline, problem)) throw ProcessError(problem);
  // Bytes between two answers are not an answer to anything.
  if (!child_->result_bytes().empty()) {
    fail_process("it wrote " + std::to_string(child_->result_bytes().size()) +
                 " bytes after its last answer");
  }
  child_->send_command(wire);
  const FrameWait answer = child_->wait_for_frame(deadline);
  if (answer.status != FrameWait::Status::frame) {
    fail_process(answer.status == FrameWait::Status::garbage || !answer.problem.empty()
                     ? "its answer was not a frame: " + answer.problem
                     : "it sent no answer");
  }
  ImportResponse response;
  try {
    response = decode_import_response(answer.payload);
  } catch (const IpcWireError& error) {
    throw IpcWireError(program_ + " answered with " + error.what() + "; " + stop().output);
  }
  if (response.error.empty() && response.answers.size() != request.items.size()) {
    throw IpcWireError(program_ + " answered " + std::to_string(response.answers.size()) + " of " +
                       std::to_string(request.items.size()) + " handles; " + stop().output);
  }
  return response;
}

void ImporterProcess::finish(Clock::time_point deadline) {
  if (!child_) return;
  child_->close_command_channel();
  // Reaped (or killed at the deadline) either way: an importer that answered but hangs on its
  // way out does not cost its answer.
  child_->wait(deadline);
  const std::size_t extra = child_->result_bytes().size();
  const std::string output = output_of(*child_);
  child_.reset();
  ready_ = false;
  if (extra != 0) {
    throw IpcWireError(program_ + " sent " + std::to_string(extra) + " bytes after its answer; " +
                       output);
  }
}

ImportResponse run_import(const std::string& importer, const ImportRequest& request,
                          std::chrono::milliseconds timeout) {
  const auto deadline = ImporterProcess::Clock::now() + timeout;
  ImporterProcess process(importer);
  ImportResponse response = process.import(request, timeout);
  process.finish(deadline);
  return response;
}

}  // namespace emm::conformance
