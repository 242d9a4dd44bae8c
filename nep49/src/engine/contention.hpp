// nep49/engine/contention.hpp — many threads inside a NEP 49 handler at once, for the whole
// command (NEP49-13).
//
// The workload NumPy puts on a handler from several threads: threads that call realloc without
// the GIL (NumPy's text reader releases it around realloc) while the others call malloc, calloc
// and free one at a time under it, every thread holding a few blocks, giving some to another
// thread (an array made in one thread and resized or freed in another) and checking its blocks'
// bytes before each call. All threads start at a barrier, and none stops before every thread has
// made its `rounds` operations (or a quarter of a second passed, for a slow handler), so the
// handler is contended from the first call to the last
// instead of by threads that happen to overlap; and every thread is made to yield, wherever it
// is (inside the handler too), every 100 to 300 microseconds by a timer signal of its own, so that
// a race is met on a machine with two busy cores as on one with many idle ones. Every block a
// thread receives is checked against the live blocks of all threads (each thread publishes its
// blocks in lock-free slots) and the sequence's own live blocks.
//
//   ContentionReport report = contend(session, {.threads = 8, .rounds = 400, .seed = 7});
//
// The operations each thread chooses follow from the seed (xorshift32, seeded with
// seed ^ (thread + 1) * 0x9E3779B9); their interleaving is the machine's. A failure leaks the
// threads' blocks: the handler's state may be broken.
#pragma once

#include <cstdint>

#include "nep49/src/engine/session.hpp"

namespace emm::conformance::nep49_engine {

// The sizes the threads ask for: two neighbouring small size classes (17 to 64 bytes: every call
// meets the others in the same free lists), the small sizes (24 to 512 bytes), or a mix with
// pages and a few blocks up to 64 KiB. Never 16 bytes or less: sharing a tiny block between live
// ones is NEP49-5's to judge, without threads.
enum class ContentionSizes { classes, small, mixed };

struct ContentionPlan {
  int threads = 8;
  int rounds = 400;  // operations each thread makes at least
  std::uint32_t seed = 1;
  int handler = 1;  // the name number of the handler every thread calls
  ContentionSizes sizes = ContentionSizes::mixed;
  // Every new block is passed to another thread at once, which resizes and frees it (a
  // producer's arrays used by consumers); else a thread passes one now and then.
  bool handoff = false;
};

// 0, 1, 2: how a reproducer names the sizes to its contend().
int to_int(ContentionSizes sizes) noexcept;
const char* to_string(ContentionSizes sizes) noexcept;

// As NEP49-13 describes NumPy (seven threads in realloc without the GIL, an eighth under it), most
// threads — realloc_threads(threads) of them, [0, that) — call realloc without the GIL, and the
// others resize under it; every thread calls malloc, calloc and free under it (a stand-in mutex,
// and CPython's GIL when CPython is loaded).
ContentionReport contend(Session& session, const ContentionPlan& plan);
// threads - max(1, threads / 4).
int realloc_threads(int threads) noexcept;

// The workload as a C++ function a GoogleTest reproducer defines (the same operations for the
// same seed), and as Python for a module's reproducer.
const char* contention_cpp_helper() noexcept;
const char* contention_python_helper() noexcept;

}  // namespace emm::conformance::nep49_engine
