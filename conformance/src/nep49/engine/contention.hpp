// nep49/engine/contention.hpp — many threads inside a NEP 49 handler at once, for the whole
// command (NEP49-13).
//
// The workload NumPy puts on a handler from several threads: threads that call realloc without
// the GIL (NumPy's text reader releases it around realloc) while the others call malloc, calloc
// and free one at a time under it, every thread holding a few blocks, giving some to another
// thread (an array made in one thread and resized or freed in another) and checking its blocks'
// bytes before each call. All threads start at a barrier, and none stops before every thread has
// made its `rounds` operations, so the handler is contended from the first call to the last
// instead of by threads that happen to overlap. Every block a thread receives is checked against
// the live blocks of all threads (each thread publishes its blocks in lock-free slots) and the
// sequence's own live blocks.
//
//   ContentionReport report = contend(session, {.threads = 8, .rounds = 400, .seed = 7});
//
// The operations each thread chooses follow from the seed (xorshift32, seeded with
// seed ^ (thread + 1) * 0x9E3779B9); their interleaving is the machine's. A failure leaks the
// threads' blocks: the handler's state may be broken.
#pragma once

#include <cstdint>

#include "nep49/engine/session.hpp"

namespace emm::conformance::nep49_engine {

struct ContentionPlan {
  int threads = 8;
  int rounds = 400;          // operations each thread makes at least
  std::uint32_t seed = 1;
  int handler = 1;           // the name number of the handler every thread calls
};

// Threads [0, threads / 2) call realloc without the GIL; the others hold it (a stand-in mutex,
// and CPython's GIL when CPython is loaded) around every call.
ContentionReport contend(Session& session, const ContentionPlan& plan);

// The workload as a C++ function a GoogleTest reproducer defines (the same operations for the
// same seed), and as Python for a module's reproducer.
const char* contention_cpp_helper() noexcept;
const char* contention_python_helper() noexcept;

}  // namespace emm::conformance::nep49_engine
