// The importing process of the two-process IPC test (gpu_test.cpp): a separate program,
// because CUDA cannot be used in a child made by fork() after CUDA was initialised.
//
//   emm_reference_gpu_ipc_importer HANDLES RESULTS
//
// HANDLES holds IpcHandle::serialize() records. For each, the importer deserializes it, opens
// it with its own Runtime over the real driver, checks the state machine (IPC-3), reads the
// view's bytes back and writes them to RESULTS in the same order. Exit status 0 on success;
// otherwise the reason is printed on stderr and the status is 1.
#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"
#include "ipc_records.hpp"

namespace {

emm::test::Record import_one(emm::Runtime& runtime, const emm::test::Record& bytes) {
  emm::IpcHandle handle = emm::IpcHandle::deserialize(std::span<const std::byte>(bytes));
  if (handle.base() != nullptr) throw std::runtime_error("a deserialized handle has a base");
  emm::Context& context = handle.source_info() ? runtime.context_for_identity(*handle.source_info())
                                               : runtime.get_context(0);
  std::shared_ptr<emm::MemoryPointer> view = handle.open(context);
  try {
    handle.open(context);
    throw std::runtime_error("a second open was not refused");
  } catch (const emm::IpcStateError& error) {
    if (std::string(error.what()) != "IpcHandle is already opened") throw;
  }
  if (view->size() != handle.size()) throw std::runtime_error("the opened view has the wrong size");
  emm::test::Record data(view->size());
  context.make_current();
  context.driver().memcpy_dtoh(data.data(), view->device_pointer(), data.size());
  handle.close();
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " HANDLES RESULTS\n";
    return 2;
  }
  try {
    emm::Runtime runtime(emm::CudaDriver::load());
    std::vector<emm::test::Record> results;
    for (const auto& record : emm::test::read_records(argv[1])) {
      results.push_back(import_one(runtime, record));
    }
    emm::test::write_records(argv[2], results);
    runtime.close();
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "importer: " << error.what() << "\n";
    return 1;
  }
}
