// main() of emm_gpu_driver_tests: the tests, or (with kIpcChildFlag first) the second process
// of the direct IPC tests (ipc_child.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ipc_child.hpp"

int main(int argc, char** argv) {
  if (argc >= 2 && argv[1] == emm::gpu_test::kIpcChildFlag) {
    return emm::gpu_test::ipc_child_main(std::vector<std::string>(argv + 2, argv + argc));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
