// NEP49-13 as a property of sequences: sustained contention — many threads inside the handler
// at once for the whole command, realloc without the GIL and malloc, calloc and free one at a
// time under it, blocks passed between threads.
#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine::properties {
namespace {

class ThreadsWithoutGil final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::contention, 1}};
  }
  // Each contention command makes thousands of calls on 4 to 16 threads: a quarter of the
  // budget's sequences, each short, contend for longer than the budget's worth of short ones.
  int sequences(int budget) const override { return std::max(2, budget / 4); }
  int longest() const override { return 3; }
  void contended(Session& session, const ContentionReport& report) const override {
    if (report.failure.empty()) return;
    session.fail(str("with ", report.threads, " threads inside the handler at once (",
                     report.realloc_threads, " calling realloc without the GIL), after ",
                     report.calls, " handler calls: ", report.failure));
  }
};

}  // namespace

const Property& nep49_13() { return the<ThreadsWithoutGil>(); }

}  // namespace emm::conformance::nep49_engine::properties
