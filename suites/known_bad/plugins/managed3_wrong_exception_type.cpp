// MANAGED-3 — declares no managed memory, but memallocmanaged throws emm::UnsupportedError
// instead of emm::NotImplementedError.
#include "baseline_pool.hpp"
#include "emm/errors.hpp"

namespace {

class Plugin : public emm::zoo::BaselineNoOptional {
 public:
  using BaselineNoOptional::BaselineNoOptional;
  std::shared_ptr<emm::MemoryPointer> memallocmanaged(std::size_t,
                                                      bool /*attach_global*/ = true) override {
    throw emm::UnsupportedError("memallocmanaged: managed memory is not supported by this plugin");
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::no_optional_declaration("known-bad MANAGED-3 wrong exception type"))
