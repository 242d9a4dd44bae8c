// gpu_test_support.hpp — helpers for the CUDA driver tests (suites/gpu).
//
// * EMM_EXPECT_THROW(Type, statement, message): from <emm/conformance/testing/expect_throw.hpp>
//   (the statement must throw exactly `Type` whose what() is, or satisfies, `message`).
// * pattern_byte() / pattern(): the bytes a test writes, so a reader can check what it sees.
// * kIpcChildFill: what the cross-process IPC test's importing process (emm-ipc-importer, run
//   through emm::conformance::run_import()) writes over the view it imported.
// * CudaDriverGpu: the fixture of the tests that need a GPU. It skips with "no GPU: <reason>"
//   where there is none; otherwise device 0's primary context is retained and current.
// * DeviceBuffer: a cuMemAlloc allocation freed at scope exit.
// * result_of(statement): the CUresult a Driver call ended with (CUDA_SUCCESS when it returned),
//   for tests that record what the real driver answers.
//
// Test-only code; not thread-safe.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <emm/conformance/testing/expect_throw.hpp>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "emm/cuda_api.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"

namespace emm::gpu_test {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;

inline std::uint8_t pattern_byte(std::size_t index, unsigned seed) {
  return static_cast<std::uint8_t>((index * 131 + seed) % 251);
}

inline std::vector<std::uint8_t> pattern(std::size_t size, unsigned seed) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = pattern_byte(i, seed);
  return bytes;
}

// The CUresult `call` ended with: CUDA_SUCCESS, or the code of the CudaDriverError it threw.
template <class Call>
CUresult result_of(Call&& call) {
  try {
    std::forward<Call>(call)();
    return CUDA_SUCCESS;
  } catch (const CudaDriverError& error) {
    return error.code();
  }
}

// "CUDA_ERROR_INVALID_VALUE": compared as text, so a failure names both results.
inline std::string result_name(CUresult result) { return std::string(cuda_result_name(result)); }

class DeviceBuffer {
 public:
  DeviceBuffer(Driver& driver, std::size_t size)
      : driver_(driver), pointer_(driver.mem_alloc(size)), size_(size) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    try {
      driver_.mem_free(pointer_);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "freeing a test buffer: " << error.what();
    }
  }
  CUdeviceptr get() const { return pointer_; }
  std::size_t size() const { return size_; }

 private:
  Driver& driver_;
  CUdeviceptr pointer_;
  std::size_t size_;
};

class CudaDriverGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    RecordProperty("spec", "2.1");
    const CudaDriverProbe& gpu = CudaDriver::probe();
    if (!gpu.driver) GTEST_SKIP() << "no GPU: " << gpu.reason;
    driver_ = gpu.driver;
    context_ = driver_->primary_ctx_retain(kDevice);
    driver_->ctx_set_current(context_);
  }

  void TearDown() override {
    if (driver_ == nullptr) return;
    driver_->ctx_set_current(nullptr);
    driver_->primary_ctx_release(kDevice);
  }

  std::vector<std::uint8_t> read(CUdeviceptr source, std::size_t size) {
    std::vector<std::uint8_t> bytes(size);
    driver_->memcpy_dtoh(bytes.data(), source, size);
    return bytes;
  }

  static constexpr int kDevice = 0;
  std::shared_ptr<CudaDriver> driver_;
  CUcontext context_ = nullptr;
};

// The byte the importing process fills the imported view with (ImportItem::fill), so the
// exporter can check the writes landed in exactly [offset, offset + size).
inline constexpr unsigned char kIpcChildFill = 0x5a;

}  // namespace emm::gpu_test
