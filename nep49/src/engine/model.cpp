#include "nep49/src/engine/model.hpp"

namespace emm::conformance::nep49_engine {
namespace {
constexpr std::size_t kRecentSizes = 8;
}  // namespace

void Model::asked_for(std::size_t size) {
  recent_sizes.push_back(size);
  if (recent_sizes.size() > kRecentSizes) recent_sizes.erase(recent_sizes.begin());
}

int Model::add_block(std::size_t size, int handler, Origin origin) {
  ModelBlock block;
  block.id = next_block++;
  block.size = size;
  block.handler = handler;
  block.origin = origin;
  blocks.push_back(block);
  asked_for(size);
  return block.id;
}

// Appended rather than `"p" + std::to_string(id)`: GCC 12 at -O3 warns (-Wrestrict) about the
// latter, a known false positive.
std::string numbered(std::string name, int number) { return name.append(std::to_string(number)); }

std::string block_name(int id) { return numbered("p", id); }
std::string handler_name(int number) {
  return number == 1 ? "handler" : numbered("handler", number);
}
std::string ctx_name(int number) { return number == 1 ? "ctx" : numbered("ctx", number); }

}  // namespace emm::conformance::nep49_engine
