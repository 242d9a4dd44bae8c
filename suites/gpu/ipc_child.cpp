// The second process of the direct IPC GPU tests (ipc_child.hpp): the parent's launcher and the
// child's scenarios.
#include "ipc_child.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <sstream>

#include "emm/conformance/child_process.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/pointer_attribute.hpp"

namespace emm::gpu_test {
namespace {

constexpr auto kChildDeadline = std::chrono::seconds(60);
constexpr char kHexDigits[] = "0123456789abcdef";

std::string to_hex(const CUipcMemHandle& handle) {
  std::string text;
  for (const char byte : handle.reserved) {
    const auto value = static_cast<unsigned char>(byte);
    text += kHexDigits[value >> 4];
    text += kHexDigits[value & 0xf];
  }
  return text;
}

std::optional<CUipcMemHandle> from_hex(const std::string& text) {
  CUipcMemHandle handle{};
  if (text.size() != 2 * sizeof handle.reserved) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < sizeof handle.reserved; ++i) {
    const int high = digit(text[2 * i]);
    const int low = digit(text[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    handle.reserved[i] = static_cast<char>(high * 16 + low);
  }
  return handle;
}

std::string this_program() {
  std::array<char, 4096> path{};
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  return length > 0 ? std::string(path.data(), static_cast<std::size_t>(length)) : "";
}

void print(const std::string& key, const std::string& value) {
  std::printf("%s=%s\n", key.c_str(), value.c_str());
}

// Runs `call` and prints the CUresult it ended with under `key`.
template <class Call>
CUresult record(const std::string& key, Call&& call) {
  CUresult result = CUDA_SUCCESS;
  try {
    call();
  } catch (const CudaDriverError& error) {
    result = error.code();
  }
  print(key, std::string(cuda_result_name(result)));
  return result;
}

void open_twice(Driver& driver, const CUipcMemHandle& handle) {
  CUdeviceptr first = 0;
  CUdeviceptr second = 0;
  const unsigned flags = CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS;
  if (record("open1", [&] { first = driver.ipc_open_mem_handle(handle, flags); }) != CUDA_SUCCESS) {
    return;
  }
  const CUresult again =
      record("open2", [&] { second = driver.ipc_open_mem_handle(handle, flags); });
  print("same_address", again == CUDA_SUCCESS && first == second ? "1" : "0");
  record("close1", [&] { driver.ipc_close_mem_handle(first); });
  unsigned char byte = 0;
  record("read_after_one_close", [&] { driver.memcpy_dtoh(&byte, first, 1); });
  record("close2", [&] { driver.ipc_close_mem_handle(again == CUDA_SUCCESS ? second : first); });
  record("close3", [&] { driver.ipc_close_mem_handle(first); });
}

void open_each(Driver& driver, const std::vector<CUipcMemHandle>& handles) {
  for (std::size_t i = 0; i < handles.size(); ++i) {
    const std::string n = std::to_string(i);
    CUdeviceptr mapped = 0;
    if (record("open" + n, [&] {
          mapped = driver.ipc_open_mem_handle(handles[i], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        }) != CUDA_SUCCESS) {
      continue;
    }
    auto attribute = [&](const std::string& key, CUpointer_attribute which, auto show) {
      try {
        print(key + n, show(driver.pointer_get_attribute(which, mapped)));
      } catch (const CudaDriverError& error) {
        print(key + n, std::string(error.code_name()));
      }
    };
    auto number = [](std::uint64_t value) { return std::to_string(value); };
    attribute("memory_type", CU_POINTER_ATTRIBUTE_MEMORY_TYPE, number);
    attribute("ordinal", CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, number);
    attribute("range_offset", CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
              [mapped](std::uint64_t start) { return std::to_string(mapped - start); });
    attribute("range_size", CU_POINTER_ATTRIBUTE_RANGE_SIZE, number);
    record("close" + n, [&] { driver.ipc_close_mem_handle(mapped); });
  }
}

void free_mapping(Driver& driver, const CUipcMemHandle& handle) {
  CUdeviceptr mapped = 0;
  if (record("open", [&] {
        mapped = driver.ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      }) != CUDA_SUCCESS) {
    return;
  }
  record("free", [&] { driver.mem_free(mapped); });
  record("close", [&] { driver.ipc_close_mem_handle(mapped); });
}

}  // namespace

std::string IpcChildReport::value(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? "<not printed>" : it->second;
}

IpcChildReport run_ipc_child(const std::string& scenario, int device,
                             const std::vector<CUipcMemHandle>& handles) {
  IpcChildReport report;
  std::vector<std::string> arguments{std::string(kIpcChildFlag), scenario, std::to_string(device)};
  for (const CUipcMemHandle& handle : handles) arguments.push_back(to_hex(handle));
  try {
    conformance::ChildProcess child =
        conformance::ChildProcess::exec(this_program(), arguments, {});
    const conformance::ChildEnd end = child.wait(kChildDeadline);
    const std::string output = child.output().text();
    report.text = "the IPC child (" + scenario + ") " + end.describe() + "; it printed:\n" + output;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      const auto equals = line.find('=');
      if (equals != std::string::npos)
        report.values[line.substr(0, equals)] = line.substr(equals + 1);
    }
  } catch (const std::exception& error) {
    report.text = "the IPC child (" + scenario + ") could not run: " + error.what();
  }
  return report;
}

int ipc_child_main(const std::vector<std::string>& arguments) {
  if (arguments.size() < 3) {
    std::fprintf(stderr, "ipc child: expected <scenario> <device> <handle hex>...\n");
    return 2;
  }
  std::vector<CUipcMemHandle> handles;
  for (std::size_t i = 2; i < arguments.size(); ++i) {
    const std::optional<CUipcMemHandle> handle = from_hex(arguments[i]);
    if (!handle) {
      std::fprintf(stderr, "ipc child: argument %zu is not 128 hex digits\n", i);
      return 2;
    }
    handles.push_back(*handle);
  }
  const std::string& scenario = arguments[0];
  if (scenario != "open-twice" && scenario != "open-each" && scenario != "free-mapping") {
    print("error", "unknown scenario " + scenario);
    return 2;
  }
  try {
    const CudaDriverProbe& gpu = CudaDriver::probe();
    if (!gpu.driver) {
      print("error", "no GPU: " + gpu.reason);
      return 2;
    }
    Driver& driver = *gpu.driver;
    const int device = std::stoi(arguments[1]);
    driver.ctx_set_current(driver.primary_ctx_retain(device));
    if (scenario == "open-twice") {
      open_twice(driver, handles.front());
    } else if (scenario == "open-each") {
      open_each(driver, handles);
    } else {
      free_mapping(driver, handles.front());
    }
    driver.ctx_set_current(nullptr);
    driver.primary_ctx_release(device);
  } catch (const std::exception& error) {
    print("error", error.what());
    std::fflush(stdout);
    return 2;
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace emm::gpu_test
