// engine/commands.hpp — the host operations a generated sequence is made of.
//
// Each CommandKind of property.hpp is one RapidCheck command (rc::state::Command over the Model
// and the Session): its constructor draws its arguments from generators (sizes, flags, which
// reference, which guard), checkPreconditions() keeps it meaningful for the model at that point
// (a release names a held reference), apply() updates the model, and run() makes the call through
// the session, records it in the trace and reports what happened to the running clause's
// property. RapidCheck shrinks a failing sequence by dropping commands and shrinking their
// arguments; the preconditions keep every shrunk sequence valid.
//
// To add a command: add its kind to CommandKind (property.hpp), a class in commands.cpp, a case
// in make_command_generator(), and its hook in Property if the properties need a new event;
// then list it in the commands() of the properties it serves.
//
// Stateless apart from their arguments; RapidCheck shares them between sequences.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <memory>
#include <vector>

#include "engine/model.hpp"
#include "engine/property.hpp"
#include "engine/session.hpp"

namespace emm::conformance::engine {

using Command = rc::state::Command<Model, Session>;
using CommandPtr = std::shared_ptr<const Command>;

// A generator of one command drawn from `mix` (by weight) for the state `model`.
rc::Gen<CommandPtr> make_command_generator(const Model& model, const std::vector<Weighted>& mix,
                                           const Plan& plan);

// The kind of an engine command (every command make_command_generator makes is one).
CommandKind kind_of(const Command& command);

// The sizes memalloc, memallocmanaged and memhostalloc are asked for: 1, small and odd sizes,
// powers of two and 2^k +- 1 up to `largest`, page multiples, and with `now_and_then_larger`
// sometimes up to 8 times `largest`; shrinks towards 1.
rc::Gen<std::size_t> allocation_sizes(std::size_t largest, bool now_and_then_larger = false);

}  // namespace emm::conformance::engine
