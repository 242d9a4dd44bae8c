// emm/conformance/result_codec.hpp — what a clause child sends its parent: a ClauseResult, or
// the news that it could not load the plugin, inside an answer carrying the parent's nonce.
//
// The text is a magic line followed by length-prefixed fields ("<len>:<bytes>"), so any byte can
// travel in a message and a truncated, padded or foreign payload is refused rather than misread.
// A result alone carries its clause (as its id, back as a pointer into catalogue()), backend and
// level. An answer carries only what the child observed (outcome, message, notes, figures,
// reproducer): the parent knows the clause, the backend and the level from its command and
// stamps them once (stamp_result), so a child can neither answer for another clause nor promote
// or demote its own. An id the catalogue does not have, an unknown backend, level, outcome or
// answer kind, or trailing bytes make the decoders return nullopt.
//
//   std::string payload = encode_result(result);                // a result alone
//   std::optional<ClauseResult> back = decode_result(payload);
//
//   send_result_frame(encode_answer(ChildAnswer::loaded(nonce, result)));      // in the child
//   send_result_frame(encode_answer(ChildAnswer::not_loaded(nonce, why)));
//   std::optional<ChildAnswer> answer = decode_answer(payload);                // in the parent
//   if (answer && answer->nonce == nonce) stamp_result(answer->result, clause, backend, level);
//
// A child reports a load failure in an answer, never through its exit status: any status a
// child exits with may be the plugin's own exit() call, but only the child holding the nonce
// can answer (clause_scheduler.hpp).
//
// Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

[[nodiscard]] std::string encode_result(const ClauseResult& result);
[[nodiscard]] std::optional<ClauseResult> decode_result(std::string_view payload);

// Gives `result` the clause, backend and level of the command it answers: the parent's, never
// the child's.
void stamp_result(ClauseResult& result, const Clause& clause, BackendKind backend, Level level);

// One answer of a clause child to one command of its parent.
struct ChildAnswer {
  enum class Kind {
    result,       // the clause ran: `result`
    load_failure  // the child could not load the plugin: `load_failure` says why
  };
  Kind kind = Kind::result;
  std::string nonce;    // the nonce of the command it answers
  ClauseResult result;  // decoded without clause, backend and level: see stamp_result
  std::string load_failure;
  // Whether the process that sent it may run another clause (a worker that could not load the
  // plugin, or whose device a clause left unusable, is replaced).
  bool reusable = true;

  static ChildAnswer loaded(std::string nonce, ClauseResult result);
  static ChildAnswer not_loaded(std::string nonce, std::string why);
};

[[nodiscard]] std::string encode_answer(const ChildAnswer& answer);
[[nodiscard]] std::optional<ChildAnswer> decode_answer(std::string_view payload);

}  // namespace emm::conformance
