// fuzz_result_codec — decode_result (result_codec.hpp) on arbitrary payloads: what emm-certify
// reads from a child that ran a plugin's clause, which a broken plugin can garble. decode_result
// returns a result or nullopt, nothing else.
//
// Findings (abort): an exception; an accepted payload whose result does not survive the codec
// (encode, decode again, encode again: the same bytes), or whose clause is not a catalogue entry.
//
// Seeds (EMM_FUZZ_WRITE_SEEDS, fuzz_support.hpp): encoded results of every outcome, with notes,
// unobserved parts and properties.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/clause_result.hpp"
#include "emm/conformance/result_codec.hpp"
#include "fuzz_support.hpp"

namespace emm::fuzz {
namespace {

using conformance::BackendKind;
using conformance::ClauseResult;
using conformance::Outcome;

void write_seeds(const std::string& directory) {
  const auto& catalogue = conformance::catalogue();
  ClauseResult pass;
  pass.clause = catalogue.find("LIFE-2");
  pass.outcome = Outcome::pass;
  pass.duration_ms = 1.25;
  write_seed(directory, "pass", conformance::encode_result(pass));

  ClauseResult fail;
  fail.clause = catalogue.find("IPC-1");
  fail.backend = BackendKind::gpu;
  fail.outcome = Outcome::fail;
  fail.message = "[IPC-1] get_ipc_handle(view(1)) returned offset 0, expected 1";
  fail.notes = {"no block was shared: not a pool"};
  fail.unobserved = {"host-free deferral"};
  fail.properties = {{"seed", "3100"}, {"bytes", "12805"}};
  fail.duration_ms = 17.5;
  write_seed(directory, "fail", conformance::encode_result(fail));
  conformance::Reproducer reproducer;
  reproducer.seed = 7;
  reproducer.budget = 24;
  reproducer.sequences = 3;
  reproducer.shrinks = 5;
  reproducer.calls = {"auto m1 = context().memalloc(4097);", "m1.reset();"};
  reproducer.gtest = "TEST(EmmReproducer, IPC_1) {}\n";
  reproducer.python = "m1 = ctx.memalloc(4097)\ndel m1\n";
  fail.reproducer = reproducer;
  write_seed(directory, "fail_with_reproducer", conformance::encode_result(fail));

  ClauseResult optional;
  optional.clause = catalogue.find("ALLOC-10");
  optional.level = conformance::Level::should;
  optional.outcome = Outcome::not_supported;
  optional.message = "[ALLOC-10] the plugin declares thread_safe = false";
  write_seed(directory, "not_supported", conformance::encode_result(optional));

  ClauseResult perf;
  perf.clause = catalogue.find("PERF-1");
  perf.level = conformance::Level::info;
  perf.outcome = Outcome::pass;
  perf.properties = {{"memalloc_256B_median_ns", "812"}, {"memalloc_1MiB_median_ns", "2301"}};
  write_seed(directory, "perf", conformance::encode_result(perf));
}

}  // namespace
}  // namespace emm::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const auto directory = emm::fuzz::seed_directory()) {
    emm::fuzz::write_seeds(*directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using emm::conformance::decode_result;
  using emm::conformance::encode_result;
  const std::optional<emm::conformance::ClauseResult> result =
      decode_result(emm::fuzz::as_text(data, size));
  if (!result) return 0;
  if (result->clause == nullptr ||
      emm::conformance::catalogue().find(result->clause->id) != result->clause) {
    emm::fuzz::finding("a decoded result's clause is not an entry of catalogue()");
  }
  const std::string once = encode_result(*result);
  const std::optional<emm::conformance::ClauseResult> again = decode_result(once);
  if (!again) emm::fuzz::finding("decode_result refuses what encode_result wrote: " + once);
  const std::string twice = encode_result(*again);
  if (twice != once) {
    emm::fuzz::finding("the codec does not keep a result: encoded once\n" + once +
                       "\nencoded after another round trip\n" + twice);
  }
  return 0;
}
