// NEP49-14 as a property of sequences: requests no machine can satisfy (SIZE_MAX, 2^62, through
// malloc, calloc and realloc) among ordinary ones return NULL; no C++ exception leaves a handler
// function (every call goes through Nep49Run, which fails the clause when one does).
#include "nep49/src/engine/properties/expectations.hpp"
#include "nep49/src/engine/properties/registry.hpp"

namespace emm::conformance::nep49_engine::properties {
namespace {

class NoExceptionEscapes final : public Property {
 public:
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::impossible, 4},
            {CommandKind::malloc, 3},
            {CommandKind::free, 2},
            {CommandKind::calloc, 1},
            {CommandKind::realloc, 1}};
  }
  void returned(Session& session, const Request& request, void* result,
                const Block*) const override {
    if (request.kind != CommandKind::impossible) return;
    expect_null(session, request, result,
                "no machine has that many bytes; a handler reports failure by returning NULL");
  }
};

}  // namespace

const Property& nep49_14() { return the<NoExceptionEscapes>(); }

}  // namespace emm::conformance::nep49_engine::properties
