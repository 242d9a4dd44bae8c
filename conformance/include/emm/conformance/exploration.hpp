// emm/conformance/exploration.hpp — how a certification explores sequences of host operations
// (spec §8): the seed and the number of sequences, and the shortest failing sequence it reports.
//
// Every plugin clause that is about the plugin's behaviour is a property of every sequence of
// host calls. The engine generates sequences from the seed, runs `budget` of them for each
// clause, and shrinks the first failing one to the shortest it can find. The same seed and budget
// give the same sequences, so a certificate is reproducible and a failure replays exactly:
//
//   emm-certify --plugin libmy.so --seed 7 --budget 200    // nightly: more sequences
//   Exploration exploration{.seed = 7, .budget = 200};
//
// Plain values. exploration_from_environment() reads the environment (EMMKIT_SEED,
// EMMKIT_BUDGET): call it where nothing sets environment variables at the same time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emm::conformance {

enum class BackendKind;

// The seed a certification uses unless told otherwise, so that two certifications of the same
// plugin explore the same sequences.
inline constexpr std::uint64_t kDefaultSeed = 1;

// The largest --budget: a million sequences per clause is days of work, more is a typo.
inline constexpr int kMaxBudget = 1'000'000;

struct Exploration {
  std::uint64_t seed = kDefaultSeed;
  // Sequences per clause; 0: the backend's default (default_budget()).
  int budget = 0;
  // Each sequence in a process of its own, and nothing but the sequences: how emm-certify finds
  // the shortest sequence after a clause crashed or hung on the fake backend (a crash is then
  // a failing sequence, shrunk like any other). Off by default: a fork per sequence costs.
  bool sequences_in_children = false;
};

// The sequences per clause a certification runs unless told otherwise: enough that a defect
// needing a particular size or order shows, few enough that a whole certification stays within
// its time goal (fake: 0.5 s on 2 cores; gpu: 2 s).
[[nodiscard]] int default_budget(BackendKind backend) noexcept;

// `base` with what the environment says: EMMKIT_SEED (a whole number) and EMMKIT_BUDGET (1 to
// kMaxBudget sequences per clause), for the in-process flavours (GoogleTest, Boost.Test), whose
// command line is the test runner's: a nightly job raises the budget without a rebuild. Throws
// emm::InvalidArgumentError naming the variable when a value is not a number in range.
[[nodiscard]] Exploration exploration_from_environment(Exploration base = {});

// The shortest failing sequence of host calls the engine found for a clause.
struct Reproducer {
  std::uint64_t seed = 0;  // the --seed that replays it
  int budget = 0;          // the --budget it was found with
  int sequences = 0;       // sequences run until the first failing one (that one included)
  int shrinks = 0;         // shorter failing sequences found while shrinking it
  // One C++ statement (or a comment for what the harness checked) per call, in order.
  std::vector<std::string> calls;
  // The same sequence as a GoogleTest body to paste into a plugin's own tests, and as a Python
  // snippet for a numba-cuda plugin class.
  std::string gtest;
  std::string python;
  // The plugin is a Python class (emm-certify --python): `python` is the form to show.
  bool for_python = false;
};

// The reproducer as a test runner prints it under a failure: the numbered calls, the seed and
// budget that replay them, and the code to paste.
[[nodiscard]] std::string describe(const Reproducer& reproducer);

}  // namespace emm::conformance
