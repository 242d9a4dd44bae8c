// The hostile plugin: the zoo's correct BaselinePool, with an attack (hostile_action.hpp) at
// every place plugin code runs — a static initialiser, the entry point, the constructor, and
// initialize(), memalloc() and reset(). With no attack configured it is the baseline and must
// be CERTIFIED.
#include "baseline_pool.hpp"
#include "hostile_action.hpp"

namespace {

using emm::hostile::Site;
using emm::hostile::strike;

class HostilePool : public emm::zoo::BaselinePool {
 public:
  explicit HostilePool(emm::Context* context) : BaselinePool(context) {
    // Only for a real context: the null-context instance is how a host reads
    // interface_version() (REG-2), and the clauses that use it are the ones left unaffected.
    if (context != nullptr) strike(Site::constructor);
  }
  void initialize() override {
    strike(Site::initialize);
    BaselinePool::initialize();
  }
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    strike(Site::memalloc);
    return BaselinePool::memalloc(size);
  }
  void reset() override {
    strike(Site::reset);
    BaselinePool::reset();
  }
};

// Runs while the dynamic loader maps the library (dlopen), before any entry point is looked up.
[[maybe_unused]] const bool g_struck_at_load = (strike(Site::load), true);

}  // namespace

// declaration() strikes at Site::entry: it is evaluated the first time the entry point runs.
EMM_EXPORT_MEMORY_MANAGER(HostilePool, emm::hostile::declaration())
