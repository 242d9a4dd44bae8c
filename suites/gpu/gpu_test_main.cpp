// main() of emm_gpu_driver_tests, and the second process of the cross-process IPC test.
//
// The executable is its own IPC peer: `emm_gpu_driver_tests --ipc-child HANDLE OFFSET SIZE SEED`
// opens the exporter's handle in a fresh process (CUDA refuses to import a handle in the process
// that exported it, and a forked child cannot use CUDA), so no second program has to be found.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "gpu_test_support.hpp"

extern char** environ;

namespace emm::gpu_test {
namespace {

constexpr const char* kIpcChildFlag = "--ipc-child";

std::string to_hex(const CUipcMemHandle& handle) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (char byte : handle.reserved) {
    const auto value = static_cast<unsigned char>(byte);
    text += kDigits[value >> 4];
    text += kDigits[value & 0xf];
  }
  return text;
}

bool from_hex(const std::string& text, CUipcMemHandle& handle) {
  if (text.size() != 2 * sizeof handle.reserved) return false;
  for (std::size_t i = 0; i < sizeof handle.reserved; ++i) {
    char* end = nullptr;
    const std::string pair = text.substr(2 * i, 2);
    const unsigned long value = std::strtoul(pair.c_str(), &end, 16);
    if (end != pair.c_str() + 2) return false;
    handle.reserved[i] = static_cast<char>(value);
  }
  return true;
}

int child_check_and_fill(const IpcChildRequest& request) {
  auto driver = CudaDriver::load();
  CUcontext context = driver->primary_ctx_retain(0);
  driver->ctx_set_current(context);
  const CUdeviceptr base =
      driver->ipc_open_mem_handle(request.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  std::vector<std::uint8_t> bytes(request.size);
  driver->memcpy_dtoh(bytes.data(), base + request.offset, request.size);
  int status = 0;
  for (std::size_t i = 0; i < request.size; ++i) {
    const std::uint8_t expected = pattern_byte(request.offset + i, request.seed);
    if (bytes[i] != expected) {
      std::fprintf(stderr,
                   "ipc child: byte %zu of the imported allocation is %u, the exporter wrote %u\n",
                   request.offset + i, unsigned{bytes[i]}, unsigned{expected});
      status = 1;
      break;
    }
  }
  if (status == 0) driver->memset_d8(base + request.offset, kIpcChildFill, request.size);
  driver->ctx_synchronize();
  driver->ipc_close_mem_handle(base);
  driver->ctx_set_current(nullptr);
  driver->primary_ctx_release(0);
  return status;
}

}  // namespace

int spawn_ipc_child(const IpcChildRequest& request) {
  std::vector<std::string> arguments = {
      "emm_gpu_driver_tests",       kIpcChildFlag,
      to_hex(request.handle),       std::to_string(request.offset),
      std::to_string(request.size), std::to_string(request.seed)};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  const int error = posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv.data(), environ);
  if (error != 0) {
    std::fprintf(stderr, "could not start the IPC child: %s\n", std::strerror(error));
    return -1;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_ipc_child(int argc, char** argv) {
  IpcChildRequest request;
  if (argc != 4 || !from_hex(argv[0], request.handle)) {
    std::fprintf(stderr, "usage: %s HANDLE_HEX OFFSET SIZE SEED\n", kIpcChildFlag);
    return 2;
  }
  try {
    request.offset = std::stoull(argv[1]);
    request.size = std::stoull(argv[2]);
    request.seed = static_cast<unsigned>(std::stoul(argv[3]));
    return child_check_and_fill(request);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ipc child: %s\n", error.what());
    return 3;
  }
}

}  // namespace emm::gpu_test

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--ipc-child") == 0) {
    return emm::gpu_test::run_ipc_child(argc - 2, argv + 2);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
