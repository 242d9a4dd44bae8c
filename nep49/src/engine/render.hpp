// nep49/engine/render.hpp — a failing sequence of handler calls as code a handler's author
// pastes and runs.
//
// render_gtest() writes a GoogleTest TEST that gets the handler as NumPy does (the library's
// entry point, or the module's capsule through the Python C API), defines the certifier's
// pattern helpers (fill, first_difference, first_nonzero, overlap) and the contention workload
// when the sequence has one, makes the calls of the trace in order, and ends with what was
// expected and seen, as an assertion where a plain statement shows it. render_python() writes
// the same sequence in Python: ctypes over the capsule (or the library), calling malloc, calloc
// and free with the GIL and realloc without it, as NumPy does, with the NumPy operation that makes
// each call beside it. Both name the emm-certify command that replays the sequence.
//
// Pure functions of their arguments.
#pragma once

#include <string>
#include <string_view>

#include "emm/conformance/exploration.hpp"
#include "emm/conformance/nep49_run.hpp"
#include "nep49/src/engine/session.hpp"

namespace emm::conformance::nep49_engine {

std::string render_gtest(const Nep49Run& run, const Trace& trace, std::string_view failure,
                         const Reproducer& reproducer);
std::string render_python(const Nep49Run& run, const Trace& trace, std::string_view failure,
                          const Reproducer& reproducer);

}  // namespace emm::conformance::nep49_engine
