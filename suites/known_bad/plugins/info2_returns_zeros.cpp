// INFO-2 — declares no memory info, but get_memory_info returns garbage ({0, 0}) instead of
// throwing emm::NotImplementedError.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselineNoOptional {
 public:
  using BaselineNoOptional::BaselineNoOptional;
  emm::MemoryInfo get_memory_info() override { return emm::MemoryInfo{}; }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::no_optional_declaration("known-bad INFO-2 returns zeros"))
