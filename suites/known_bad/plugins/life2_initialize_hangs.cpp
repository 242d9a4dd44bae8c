// LIFE-2 (timeout) — initialize() waits for a readiness flag that nothing ever sets, so it never
// returns. emm-certify must report `timeout` (run with --timeout-s 2) and still complete the
// report.
#include <atomic>
#include <chrono>
#include <thread>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  void initialize() override {
    BaselinePool::initialize();
    while (!device_ready_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

 private:
  std::atomic<bool> device_ready_{false};
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad timeout: initialize hangs"))
