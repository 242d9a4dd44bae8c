// emm/memory_info.hpp — (free, total) bytes, as returned by get_memory_info().
#pragma once

#include <cstddef>

namespace emm {

// NBEP 7's MemoryInfo namedtuple. Plain value type.
struct MemoryInfo {
  std::size_t free = 0;
  std::size_t total = 0;
  friend bool operator==(const MemoryInfo&, const MemoryInfo&) = default;
};

}  // namespace emm
