#include "nep49/src/engine/block_bytes.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

#include "emm/conformance/clause_run.hpp"

namespace emm::conformance::nep49_engine {
namespace {

constexpr std::size_t kPeriod = 65536;
constexpr std::size_t kSeedStride = 4099;
constexpr std::size_t kWholeUpTo = 64 * 1024;
constexpr std::size_t kWindow = 4096;
constexpr std::size_t kZeroWholeUpTo = 256 * 1024;
constexpr std::size_t kZeroWindow = 64 * 1024;
constexpr std::size_t kZeroProbeEvery = 256 * 1024;
constexpr std::size_t kZeroProbe = 256;

// Two periods back to back, so that any period-long run of the pattern is one slice of it.
const std::array<unsigned char, 2 * kPeriod>& tile() {
  static const auto bytes = [] {
    std::array<unsigned char, 2 * kPeriod> t{};
    for (std::size_t k = 0; k < t.size(); ++k) {
      const std::size_t i = k % kPeriod;
      t[k] = static_cast<unsigned char>((i * 131u + (i >> 8) * 7u + 7u) & 0xffu);
    }
    return t;
  }();
  return bytes;
}

std::size_t phase(unsigned seed, std::size_t offset) {
  return (offset + kSeedStride * seed) % kPeriod;
}

// Whether process_vm_readv/writev on this process work here (a seccomp profile may forbid them);
// without them the harness reads and writes directly.
bool guarded_access() {
  static const bool works = [] {
    unsigned char from = 1;
    unsigned char to = 0;
    iovec local{&to, 1};
    iovec remote{&from, 1};
    return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == 1 && to == 1;
  }();
  return works;
}

// Copies `size` bytes between this process's `local` and `remote`; returns the bytes moved
// before the first that could not be (all of them when none failed).
std::size_t transfer(void* local, void* remote, std::size_t size, bool write) {
  if (!guarded_access()) {
    if (write) {
      std::memcpy(remote, local, size);
    } else {
      std::memcpy(local, remote, size);
    }
    return size;
  }
  std::size_t done = 0;
  while (done < size) {
    iovec l{static_cast<unsigned char*>(local) + done, size - done};
    iovec r{static_cast<unsigned char*>(remote) + done, size - done};
    const ssize_t n = write ? ::process_vm_writev(::getpid(), &l, 1, &r, 1, 0)
                            : ::process_vm_readv(::getpid(), &l, 1, &r, 1, 0);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::vector<unsigned char>& scratch(std::size_t size) {
  thread_local std::vector<unsigned char> buffer;
  if (buffer.size() < size) buffer.resize(size);
  return buffer;
}

std::string byte_text(unsigned value) {
  static const char* digits = "0123456789abcdef";
  std::string text = "0x";
  text += digits[(value >> 4) & 0xf];
  text += digits[value & 0xf];
  return text;
}

}  // namespace

unsigned char pattern_byte(unsigned seed, std::size_t offset) noexcept {
  return tile()[phase(seed, offset)];
}

std::vector<Range> windows(std::size_t offset, std::size_t size) {
  if (size <= kWholeUpTo) return {{offset, size}};
  return {{offset, kWindow},
          {offset + size / 2 - kWindow / 2, kWindow},
          {offset + size - kWindow, kWindow}};
}

std::vector<Range> clipped(const std::vector<Range>& ranges, std::size_t limit) {
  std::vector<Range> kept;
  for (const Range& range : ranges) {
    if (range.offset >= limit) continue;
    kept.push_back({range.offset, std::min(range.size, limit - range.offset)});
  }
  return kept;
}

std::string write_pattern(void* p, const std::vector<Range>& ranges, unsigned seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (const Range& range : ranges) {
    std::size_t done = 0;
    while (done < range.size) {
      const std::size_t at = range.offset + done;
      const std::size_t chunk = std::min(range.size - done, kPeriod);
      auto* source = const_cast<unsigned char*>(tile().data() + phase(seed, at));
      const std::size_t moved = transfer(source, bytes + at, chunk, true);
      if (moved != chunk) {
        return str("byte ", at + moved,
                   " cannot be written: the memory there is not mapped (NumPy writes every byte "
                   "of a block it was given)");
      }
      done += chunk;
    }
  }
  return "";
}

std::string pattern_damage(const void* p, const std::vector<Range>& ranges, unsigned seed) {
  auto* bytes = const_cast<unsigned char*>(static_cast<const unsigned char*>(p));
  for (const Range& range : ranges) {
    std::size_t done = 0;
    while (done < range.size) {
      const std::size_t at = range.offset + done;
      const std::size_t chunk = std::min(range.size - done, kPeriod);
      std::vector<unsigned char>& buffer = scratch(chunk);
      const std::size_t moved = transfer(buffer.data(), bytes + at, chunk, false);
      const unsigned char* expected = tile().data() + phase(seed, at);
      if (std::memcmp(buffer.data(), expected, moved) != 0) {
        for (std::size_t i = 0; i < moved; ++i) {
          if (buffer[i] != expected[i]) {
            return str("byte ", at + i, " is ", byte_text(buffer[i]), ", expected ",
                       byte_text(expected[i]));
          }
        }
      }
      if (moved != chunk) {
        return str("byte ", at + moved,
                   " cannot be read any more: the memory there is no longer mapped");
      }
      done += chunk;
    }
  }
  return "";
}

std::string zero_damage(const void* p, std::size_t size) {
  std::vector<Range> ranges;
  if (size <= kZeroWholeUpTo) {
    ranges.push_back({0, size});
  } else {
    ranges.push_back({0, kZeroWindow});
    ranges.push_back({size / 2 - kZeroWindow / 2, kZeroWindow});
    ranges.push_back({size - kZeroWindow, kZeroWindow});
    for (std::size_t at = kZeroProbeEvery; at + kZeroProbe <= size; at += kZeroProbeEvery) {
      ranges.push_back({at, kZeroProbe});
    }
  }
  auto* bytes = const_cast<unsigned char*>(static_cast<const unsigned char*>(p));
  static const std::array<unsigned char, kZeroWindow> zeros{};
  for (const Range& range : ranges) {
    std::vector<unsigned char>& buffer = scratch(range.size);
    const std::size_t moved = transfer(buffer.data(), bytes + range.offset, range.size, false);
    // A whole small block can be longer than the zero window: compare it a window at a time.
    bool zero = true;
    for (std::size_t at = 0; zero && at < moved; at += zeros.size()) {
      zero = std::memcmp(buffer.data() + at, zeros.data(), std::min(zeros.size(), moved - at)) == 0;
    }
    if (!zero) {
      for (std::size_t i = 0; i < moved; ++i) {
        if (buffer[i] != 0) {
          return str("byte ", range.offset + i, " is ", byte_text(buffer[i]), ", expected 0x00");
        }
      }
    }
    if (moved != range.size) {
      return str("byte ", range.offset + moved, " cannot be read: the memory is not mapped");
    }
  }
  return "";
}

void fill_direct(void* p, std::size_t size, unsigned seed) noexcept {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t done = 0; done < size;) {
    const std::size_t chunk = std::min(size - done, kPeriod);
    std::memcpy(bytes + done, tile().data() + phase(seed, done), chunk);
    done += chunk;
  }
}

std::size_t first_difference_direct(const void* p, std::size_t size, unsigned seed) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t done = 0; done < size;) {
    const std::size_t chunk = std::min(size - done, kPeriod);
    const unsigned char* expected = tile().data() + phase(seed, done);
    if (std::memcmp(bytes + done, expected, chunk) != 0) {
      for (std::size_t i = 0; i < chunk; ++i) {
        if (bytes[done + i] != expected[i]) return done + i;
      }
    }
    done += chunk;
  }
  return size;
}

}  // namespace emm::conformance::nep49_engine
