// nep49/engine/property.hpp — a NEP 49 handler clause as a property of every sequence of the
// handler's calls (spec §8): the commands its sequences are made of, and the postconditions it
// checks after them.
//
// Each behavioural handler clause (NEP49-5 to NEP49-14) has one Property
// (properties/*.cpp, listed in property.cpp). The engine (explore.hpp) generates sequences from
// the property's commands, runs each in a fresh Session, and calls the property's hooks after
// the calls that concern them; a hook that finds a violation calls session.fail(), which names
// the clause and the call. Hooks run only for the clause being certified, so a property judges
// its own rule and nothing else: a handler whose calloc does not clear fails NEP49-6 and
// nothing else, even though the sequences of other clauses call calloc too.
//
//   class Alignment final : public Property {
//     std::vector<Weighted> commands(const Plan&) const override {
//       return {{CommandKind::malloc, 5}, {CommandKind::free, 3}};
//     }
//     void returned(Session& session, const Request& request, const Block* made) const override {
//       if (made && !aligned(made->pointer)) session.fail(...);
//     }
//   };
//
// Immutable; one instance per clause for the whole process.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "emm/conformance/nep49_clauses.hpp"
#include "nep49/src/engine/session.hpp"

namespace emm::conformance::nep49_engine {

// Every operation a sequence can contain (commands.hpp).
enum class CommandKind {
  malloc,           // malloc(n), n from a byte to several MiB (1, odd, 2^k, 2^k +- 1, pages)
  calloc,           // calloc(n, 1), the form NumPy uses
  calloc_elements,  // calloc(nelem, elsize) with a product that fits
  calloc_overflow,  // calloc(nelem, elsize) whose product overflows size_t
  realloc,          // realloc(p, n): grow, shrink, the same size
  realloc_fail,     // realloc(p, n) for more than any machine has
  free,             // free(p, size of p)
  free_hint,        // free(p, a smaller size): 1, the size before a growing realloc, others
  free_null,        // free(NULL, n)
  impossible,       // malloc/calloc/realloc of SIZE_MAX and 2^62
  ask_again,        // the handler's factory asked again (a second import, a second call)
  contention,       // many threads inside the handler at once for the whole command
};

struct Weighted {
  CommandKind kind;
  int weight;
};

// What a property can tell about the run when it picks its commands.
struct Plan {
  // The handler's functions that are set (a NULL one is NEP49-3's; other clauses do without).
  bool has_calloc = true;
  bool has_realloc = true;
  // The subject is a Python module (its factory is asked through CPython).
  bool module = false;
  // Extra weight of large blocks (256 KiB to 8 MiB, pages and powers of two) among fresh sizes,
  // against 6 for the usual mix (Property::large_blocks).
  int large_blocks = 0;
};

// The largest size an ordinary request asks for: "several MiB" (spec §8), well below what a
// budgeted handler may refuse (NEP49-5's fixed scenario asks 64 MiB).
inline constexpr std::size_t kLargestRequest = std::size_t{8} << 20;

class Property {
 public:
  virtual ~Property() = default;

  // --- what its sequences are made of ---------------------------------------------------------
  virtual std::vector<Weighted> commands(const Plan& plan) const = 0;
  // Sequences out of the run's budget (NEP49-13's each cost thousands of calls).
  virtual int sequences(int budget) const { return budget; }
  // The longest sequence.
  virtual int longest() const { return 20; }
  // Plan::large_blocks: for a rule whose defects live where handlers treat large blocks apart
  // (page mappings, madvise), more of them.
  virtual int large_blocks() const { return 0; }

  // --- postconditions -------------------------------------------------------------------------
  // A request returned `result`: `made` is the live block it became (null when the result is
  // NULL or the request was not one a block is kept for: impossible sizes, an overflowing
  // calloc, a realloc expected to fail). Called before the harness writes the block's pattern,
  // so that calloc's zeros and realloc's kept bytes are still there to see; `made->ranges` are
  // the parts already holding the block's pattern (a realloc's kept bytes).
  virtual void returned(Session&, const Request&, void* /*result*/, const Block* /*made*/) const {}
  // free(ptr, hint) returned; `request.block` is the block as it was.
  virtual void freed(Session&, const Request&) const {}
  // The factory was asked again; `kept` whether the answer is held and used from now on.
  virtual void asked_again(Session&, int /*handler_number*/, bool /*kept*/) const {}
  virtual void contended(Session&, const ContentionReport&) const {}
  // After every command.
  virtual void step(Session&, CommandKind) const {}
};

// The property of a NEP 49 clause; null for the clauses judged only by their fixed scenario
// (the struct declarations NEP49-1..3, and the NumPy scenarios).
const Property* property_for(Nep49Clause clause) noexcept;

// "malloc", "free with a wrong size", ... for notes.
const char* to_string(CommandKind kind) noexcept;

}  // namespace emm::conformance::nep49_engine
