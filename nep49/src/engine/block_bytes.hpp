// nep49/engine/block_bytes.hpp — the bytes the harness writes into a handler's blocks and reads
// back, without crashing on memory that is no longer mapped.
//
// Every block gets a pattern of its own (its seed is the block's number): byte i of pattern s
// is tile((i + 4099 s) mod 65536), with tile(k) = (131 k + 7 (k >> 8) + 7) mod 256, so a byte
// moved by any distance short of 64 KiB shows, and a reproducer can write the same bytes with a
// one-line loop. Small ranges are written whole, large ones at their head, middle and tail
// (where a short block or a wrong copy shows). Reads and writes go through process_vm_readv and
// process_vm_writev on this process, so a block the handler has already unmapped (freed behind
// NumPy's back) is reported as such instead of ending the clause with SIGSEGV.
//
//   const std::vector<Range> ranges = windows(0, 4097);
//   if (!write_pattern(p, ranges, 3)) ...;                 // not writable
//   if (std::string damage = pattern_damage(p, ranges, 3); !damage.empty()) ...
//
// Thread-safe (the scratch memory is per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace emm::conformance::nep49_engine {

struct Range {
  std::size_t offset = 0;
  std::size_t size = 0;
};

// Byte `offset` of pattern `seed`.
unsigned char pattern_byte(unsigned seed, std::size_t offset) noexcept;

// Where the harness writes [offset, offset + size): all of it up to 64 KiB, else three 4 KiB
// windows at its head, middle and tail.
std::vector<Range> windows(std::size_t offset, std::size_t size);
// `ranges` cut to [0, limit).
std::vector<Range> clipped(const std::vector<Range>& ranges, std::size_t limit);

// Writes pattern `seed` over `ranges` of the block at `p`; "" when done, else what failed
// ("byte 4096 cannot be written: the memory is not mapped").
std::string write_pattern(void* p, const std::vector<Range>& ranges, unsigned seed);
// "" when `ranges` of `p` hold pattern `seed`; else the first difference ("byte 17 is 0x00,
// expected 0x5c") or that the memory cannot be read.
std::string pattern_damage(const void* p, const std::vector<Range>& ranges, unsigned seed);
// "" when the block of `size` bytes at `p` reads as zero (all of it up to 256 KiB; beyond, 64
// KiB at its head, middle and tail and 256 bytes every 256 KiB); else the first byte that is not.
std::string zero_damage(const void* p, std::size_t size);

// Fast in-process forms for the contention workload (its blocks are small and live): fills
// `size` bytes with pattern `seed`, and returns the first offset that differs or `size`.
void fill_direct(void* p, std::size_t size, unsigned seed) noexcept;
std::size_t first_difference_direct(const void* p, std::size_t size, unsigned seed) noexcept;

}  // namespace emm::conformance::nep49_engine
