// gpu_test_support.hpp — helpers for the CUDA driver tests (suites/gpu).
//
// * EMM_EXPECT_THROW(Type, statement, message): from <emm/conformance/testing/expect_throw.hpp>
//   (the statement must throw exactly `Type` whose what() is, or satisfies, `message`).
// * pattern_byte(): the byte a test writes at an index, so a reader can check what it sees.
// * run_ipc_child() / spawn_ipc_child(): the second process of the cross-process IPC test. The
//   test executable is its own child: main() hands `--ipc-child ...` to run_ipc_child().
//
// Test-only code; not thread-safe.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <emm/conformance/testing/expect_throw.hpp>

#include "emm/cuda_api.hpp"

namespace emm::gpu_test {

inline std::uint8_t pattern_byte(std::size_t index, unsigned seed) {
  return static_cast<std::uint8_t>((index * 131 + seed) % 251);
}

// What the child does with the allocation behind `handle`: opens it with
// CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, checks that [offset, offset + size) holds
// pattern_byte(offset + i, seed), overwrites that range with kIpcChildFill, closes the handle.
inline constexpr unsigned char kIpcChildFill = 0x5a;

struct IpcChildRequest {
  CUipcMemHandle handle{};
  std::size_t offset = 0;
  std::size_t size = 0;
  unsigned seed = 0;
};

// Runs this executable as `--ipc-child <request>` and waits: the child's exit status, or -1 if
// it could not be started or died of a signal. The child explains failures on stderr.
int spawn_ipc_child(const IpcChildRequest& request);

// The child's side: argv after "--ipc-child". Returns the process exit status.
int run_ipc_child(int argc, char** argv);

}  // namespace emm::gpu_test
