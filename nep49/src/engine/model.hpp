// nep49/engine/model.hpp — the model of a NEP 49 handler that generated sequences run against.
//
// The model is what NumPy knows without asking the handler: the blocks it holds (their sizes,
// and the size each had before its last realloc, which is what NumPy passes to free after a
// resize), which handler made each one (an array frees and reallocs through its own handler),
// the handlers it was given (the subject's, and those its factory gave when asked again), and
// the sizes asked for lately (a cache's next customer asks for one again). Commands
// (commands.hpp) read it to choose their arguments and keep a sequence meaningful, and update it
// in apply(); the Session (session.hpp) keeps the real pointers in the same order.
//
// Plain value type: RapidCheck copies it while it generates and shrinks sequences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace emm::conformance::nep49_engine {

// The call that made a block.
enum class Origin : std::uint8_t { malloc, calloc, realloc };

struct ModelBlock {
  int id = 0;                      // 1, 2, ... in order of creation: "p3" in a reproducer
  std::size_t size = 0;            // bytes it has now
  std::size_t before_realloc = 0;  // its size before its last realloc; 0: never reallocated
  int handler = 1;                 // the name number (Model::handlers) of the handler that made it
  Origin origin = Origin::malloc;
};

struct Model {
  std::vector<ModelBlock> blocks;  // live, oldest first
  // The handlers blocks may come from, by name number: 1 is the subject's ("handler"), k > 1 the
  // (k-1)-th answer of its factory asked again ("handler<k>") that is still held.
  std::vector<int> handlers{1};
  int asked = 1;  // handlers obtained so far (the subject's included), for the next name
  int next_block = 1;
  // The last sizes asked for (and free hints given), newest last.
  std::vector<std::size_t> recent_sizes;

  // Remembers `size` among the recent sizes.
  void asked_for(std::size_t size);
  // Adds a block; returns its id.
  int add_block(std::size_t size, int handler, Origin origin);
};

// "p3"; "handler", "handler2"; "ctx", "ctx2".
std::string block_name(int id);
std::string handler_name(int number);
std::string ctx_name(int number);

}  // namespace emm::conformance::nep49_engine
