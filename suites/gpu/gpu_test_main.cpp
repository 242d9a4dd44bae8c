// main() of emm_gpu_driver_tests.
#include <gtest/gtest.h>

#include <string>

#include "emm/cuda_driver.hpp"
#include "gpu_test_support.hpp"

namespace emm::gpu_test {

const std::string& gpu_unavailable_reason() {
  static const std::string reason = CudaDriver::unavailable_reason();
  return reason;
}

}  // namespace emm::gpu_test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
