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

std::string answer_import_request(std::string_view request_bytes,
                                  const std::function<std::unique_ptr<Runtime>()>& make_runtime) {
  ImportResponse response;
  ImportRequest request;
  try {
    request = decode_import_request(request_bytes);
  } catch (const IpcWireError& error) {
    response.error = error.what();
    return encode_import_response(response);
  }
  std::unique_ptr<Runtime> runtime;
  try {
    runtime = make_runtime();
  } catch (const std::exception& error) {
    const std::string why =
        std::string("the importing process could not start CUDA: ") + error.what();
    for (std::size_t i = 0; i < request.items.size(); ++i)
      response.answers.push_back({false, {}, why});
    return encode_import_response(response);
  }
  return encode_import_response(serve_import_request(*runtime, request));
}

int ipc_importer_main() {
  std::optional<std::string> request;
  try {
    request = read_command_frame();
  } catch (const ProcessError& error) {
    ImportResponse response;
    response.error = std::string("malformed IPC import request: ") + error.what();
    send_result_frame(encode_import_response(response));
    return 0;
  }
  if (!request) {
    std::fprintf(stderr, "emm-ipc-importer: the command channel closed before a request came\n");
    return 2;
  }
  send_result_frame(answer_import_request(*request, cuda_runtime));
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

ImportResponse run_import(const std::string& importer, const ImportRequest& request,
                          std::chrono::milliseconds timeout) {
  const std::string wire = encode_import_request(request);
  ChildOptions options;
  options.command_channel = true;
  options.result_channel = true;
  const auto deadline = ChildProcess::Clock::now() + timeout;
  ChildProcess child = ChildProcess::exec(importer, {}, options);
  child.send_command(wire);
  child.close_command_channel();
  const FrameWait answer = child.wait_for_frame(deadline);
  // Reaped (or killed at the deadline) either way: an importer that answered but hangs on its
  // way out does not cost its answer.
  const ChildEnd end = child.wait(deadline);
  if (answer.status != FrameWait::Status::frame) {
    const std::string channel =
        answer.status == FrameWait::Status::garbage || !answer.problem.empty()
            ? "its answer was not a frame: " + answer.problem
            : "it sent no answer";
    throw ProcessError(importer + " " + end.describe() + "; " + channel + "; " + output_of(child));
  }
  if (!child.result_bytes().empty()) {
    throw IpcWireError(importer + " sent " + std::to_string(child.result_bytes().size()) +
                       " bytes after its answer; " + output_of(child));
  }
  ImportResponse response;
  try {
    response = decode_import_response(answer.payload);
  } catch (const IpcWireError& error) {
    throw IpcWireError(importer + " answered with " + error.what() + "; " + output_of(child));
  }
  if (response.error.empty() && response.answers.size() != request.items.size()) {
    throw IpcWireError(importer + " answered " + std::to_string(response.answers.size()) + " of " +
                       std::to_string(request.items.size()) + " handles; " + output_of(child));
  }
  return response;
}

}  // namespace emm::conformance
