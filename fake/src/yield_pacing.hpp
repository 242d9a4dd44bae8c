// fake/src/yield_pacing.hpp — how often FakeDriver::yield_in_calls() yields on a busy machine.
//
// A yield hands the core to another thread of the clause and comes back within microseconds
// where the machine has a core to spare. On a machine busy with other processes each yield can
// wait out a scheduler slice of theirs (milliseconds): ALLOC-10 on a 2-core machine beside a
// compiler took 27 s instead of 2.5 s (user 0.9 s, system 1.7 s: the process mostly waited), and
// a correct plugin could reach the clause's timeout. So the driver looks at its process once a
// second of wall time (at most every kReviewEvery calls): when the process's threads together got
// less than a quarter of a core in that second, it yields at every other call, then every
// fourth, ... (kMaxStride at most), so that a starved clause still finishes in a time that grows
// with the logarithm of its calls. A machine with a core to spare never thins its yields (a
// clause's threads keep more than a core busy); neither does a slow build (Debug, sanitizers),
// which is slow on the CPU, not starved of it.
//
//   std::uint32_t stride = next_yield_stride(stride, wall_ns, cpu_ns);
//
// Pure function; FakeDriver::Process holds the state (fake_process.hpp).
#pragma once

#include <cstdint>

namespace emm::fake_detail {

// How many yielding calls pass between two looks at the process's share of the CPU.
inline constexpr std::uint64_t kReviewEvery = 256;
// The shortest wall time a look judges (1 s), and the share below which the process is starved.
inline constexpr std::int64_t kReviewWindowNs = 1'000'000'000;
inline constexpr double kStarvedShare = 0.25;
// Yield at every kMaxStride-th call at the least.
inline constexpr std::uint32_t kMaxStride = 4096;

// The stride after a window of `wall_ns` in which the process used `cpu_ns` of CPU time (every
// thread's, user and system): doubled when it got less than kStarvedShare of one core, else
// unchanged. A window shorter than kReviewWindowNs changes nothing.
[[nodiscard]] constexpr std::uint32_t next_yield_stride(std::uint32_t stride, std::int64_t wall_ns,
                                                        std::int64_t cpu_ns) noexcept {
  if (stride == 0) return 1;
  if (wall_ns < kReviewWindowNs || stride >= kMaxStride) return stride;
  const bool starved = static_cast<double>(cpu_ns) < kStarvedShare * static_cast<double>(wall_ns);
  return starved ? stride * 2 : stride;
}

}  // namespace emm::fake_detail
