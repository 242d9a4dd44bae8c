#include "nep49/engine/model.hpp"

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

std::string block_name(int id) { return "p" + std::to_string(id); }
std::string handler_name(int number) {
  return number == 1 ? "handler" : "handler" + std::to_string(number);
}
std::string ctx_name(int number) { return number == 1 ? "ctx" : "ctx" + std::to_string(number); }

}  // namespace emm::conformance::nep49_engine
