// engine/render.hpp — a failing sequence as code a plugin author pastes and runs.
//
// render_gtest() writes a GoogleTest TEST over the fake driver with the plugin registered (the
// plugin's class is named MyPlugin: rename it), the calls of the trace in order, and at the end
// what was expected and seen, with the failing check as an assertion where a plain statement
// shows it. render_python() writes the same sequence for a numba-cuda plugin class (Plugin).
// Both name the seed and budget that replay the sequence in emm-certify.
//
// Pure functions of their arguments.
#pragma once

#include <string>
#include <string_view>

#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/exploration.hpp"
#include "engine/session.hpp"

namespace emm::conformance::engine {

// Each line of `text` prefixed with `prefix` (a reproducer's calls under a comment or a block);
// the NEP 49 engine's renderer uses it too.
std::string indent_lines(std::string_view text, std::string_view prefix);

std::string render_gtest(const ClauseRun& run, const Trace& trace, std::string_view failure,
                         const Reproducer& reproducer);
std::string render_python(const ClauseRun& run, const Trace& trace, std::string_view failure,
                          const Reproducer& reproducer);

}  // namespace emm::conformance::engine
