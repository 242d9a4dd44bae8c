// gpu_test_support.hpp — helpers for the CUDA driver tests (suites/gpu).
//
// * EMM_EXPECT_THROW(Type, statement, message): from <emm/conformance/testing/expect_throw.hpp>
//   (the statement must throw exactly `Type` whose what() is, or satisfies, `message`).
// * pattern_byte(): the byte a test writes at an index, so a reader can check what it sees.
// * kIpcChildFill: what the cross-process IPC test's importing process (emm-ipc-importer, run
//   through emm::conformance::run_import()) writes over the view it imported.
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

// The byte the importing process fills the imported view with (ImportItem::fill), so the
// exporter can check the writes landed in exactly [offset, offset + size).
inline constexpr unsigned char kIpcChildFill = 0x5a;

}  // namespace emm::gpu_test
