// device_blocks.hpp — the two things every known-good plugin needs around raw cuMemAlloc blocks:
// rounding a request to the driver's alignment without overflow, and freeing a batch of blocks
// so that one failure does not leak the rest.
//
//   const std::size_t length = known_good::round_up(size, known_good::kDriverAlignment);
//   known_good::free_device_blocks(driver, blocks);   // all freed, then the first error thrown
//
// Header-only: each plugin is its own shared library. Stateless; thread-safety is the driver's.
#pragma once

#include <cstddef>
#include <exception>
#include <limits>
#include <vector>

#include "emm/driver.hpp"

namespace emm::known_good {

// cuMemAlloc returns 256-byte aligned memory; blocks carved from a chunk keep that (ALLOC-11).
inline constexpr std::size_t kDriverAlignment = 256;

// `n` rounded up to a multiple of `multiple`; SIZE_MAX when that does not fit, so that an
// absurd request reaches the driver as one it must refuse with CUDA_ERROR_OUT_OF_MEMORY
// (ALLOC-3) instead of wrapping round to a small one.
constexpr std::size_t round_up(std::size_t n, std::size_t multiple) noexcept {
  const std::size_t remainder = n % multiple;
  if (remainder == 0) return n;
  if (n > std::numeric_limits<std::size_t>::max() - (multiple - remainder)) {
    return std::numeric_limits<std::size_t>::max();
  }
  return n + (multiple - remainder);
}

// cuMemFree on every block; when some fail, the others are still freed and the first error is
// rethrown afterwards (reset() must release everything it can, LIFE-7).
inline void free_device_blocks(Driver& driver, const std::vector<CUdeviceptr>& blocks) {
  std::exception_ptr first_error;
  for (const CUdeviceptr block : blocks) {
    try {
      driver.mem_free(block);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace emm::known_good
