// nep49/engine/commands.hpp — the handler calls a generated sequence is made of.
//
// Each CommandKind of property.hpp is one RapidCheck command (rc::state::Command over the Model
// and the Session): its constructor draws its arguments (sizes, which block, which wrong size,
// which handler), checkPreconditions() keeps it meaningful for the model at that point (a free
// names a live block), apply() updates the model, and run() makes the call through the session,
// records it in the trace and reports what happened to the running clause's property.
// Arguments that depend on a block (a realloc's new size, a free's wrong size) are kept relative
// to it ("twice its size", "its size before the last realloc"), so that every shrunk sequence
// stays meaningful.
//
// To add a command: add its kind to CommandKind (property.hpp), a class in commands.cpp and a
// case in generator_for(); then list it in the commands() of the properties it serves.
//
// Stateless apart from their arguments; RapidCheck shares them between sequences.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <memory>
#include <vector>

#include "nep49/src/engine/model.hpp"
#include "nep49/src/engine/property.hpp"
#include "nep49/src/engine/session.hpp"

namespace emm::conformance::nep49_engine {

using Command = rc::state::Command<Model, Session>;
using CommandPtr = std::shared_ptr<const Command>;

// A generator of one command drawn from `mix` (by weight) for the state `model`.
rc::Gen<CommandPtr> make_command_generator(const Model& model, const std::vector<Weighted>& mix,
                                           const Plan& plan);

}  // namespace emm::conformance::nep49_engine
