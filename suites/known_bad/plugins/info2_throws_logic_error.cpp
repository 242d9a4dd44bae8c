// INFO-2 — declares no memory info, but get_memory_info throws std::logic_error instead of
// emm::NotImplementedError.
#include <stdexcept>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselineNoOptional {
 public:
  using BaselineNoOptional::BaselineNoOptional;
  emm::MemoryInfo get_memory_info() override {
    throw std::logic_error("get_memory_info is not implemented");
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::no_optional_declaration("known-bad INFO-2 throws std::logic_error"))
