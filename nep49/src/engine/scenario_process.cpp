#include "nep49/src/engine/scenario_process.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "emm/conformance/child_process.hpp"
#include "nep49/src/engine/explore.hpp"
#include "nep49/src/engine/sequence_process.hpp"

namespace emm::conformance::nep49_engine {
namespace {

// Fields as "<length>:<bytes>", one after another.
void put(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

std::optional<std::vector<std::string>> fields(const std::string& payload) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < payload.size()) {
    const std::size_t colon = payload.find(':', at);
    if (colon == std::string::npos) return std::nullopt;
    std::size_t length = 0;
    try {
      length = std::stoul(payload.substr(at, colon - at));
    } catch (...) {
      return std::nullopt;
    }
    if (colon + 1 + length > payload.size()) return std::nullopt;
    out.push_back(payload.substr(colon + 1, length));
    at = colon + 1 + length;
  }
  return out;
}

}  // namespace

void run_scenario(Nep49Run& run, ScenarioBody body) {
  if (!runs_in_children(run)) {
    body(run);  // its verdict is thrown from here as it is
    return;
  }
  const std::size_t notes_before = run.notes().size();
  const std::size_t properties_before = run.properties().size();
  ChildOptions options;
  options.result_channel = true;
  options.output_keep_bytes = 4096;
  ChildProcess child = ChildProcess::fork(
      [&] {
        std::string verdict = "pass";
        std::string message;
        try {
          body(run);
        } catch (const ClauseFailure& failure) {
          verdict = "fail";
          message = failure.what();
        } catch (const ClauseNotSupported& unsupported) {
          verdict = "not_supported";
          message = unsupported.what();
        } catch (...) {
          verdict = "fail";
          message = run.clause().tag("unexpected exception from the handler or the kit: " +
                                     describe_current_exception());
        }
        std::string payload;
        put(payload, verdict);
        put(payload, message);
        put(payload, std::to_string(run.notes().size() - notes_before));
        for (std::size_t i = notes_before; i < run.notes().size(); ++i)
          put(payload, run.notes()[i]);
        for (std::size_t i = properties_before; i < run.properties().size(); ++i) {
          put(payload, run.properties()[i].first);
          put(payload, run.properties()[i].second);
        }
        send_result_frame(payload);
        return 0;
      },
      options);
  // No deadline of its own: a hang is the clause's, which the scheduler's timeout ends.
  const ChildEnd end = child.wait(ChildProcess::Clock::now() + std::chrono::hours(24));
  std::string problem;
  const std::optional<std::string> payload = decode_frame(child.result_bytes(), problem);
  const std::optional<std::vector<std::string>> parts =
      payload ? fields(*payload) : std::optional<std::vector<std::string>>();
  if (end.kind != ChildEnd::Kind::exited || !parts || parts->size() < 3) {
    std::string output = child.output().tail(600);
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    const std::string printed = output.empty() ? "" : "; it printed: " + output;
    if (end.kind == ChildEnd::Kind::signaled) {
      throw SequenceEnded(
          str("[", run.id(), "] the fixed scenario: the handler crashed the process: ",
              describe_signal(end.signal), printed),
          Outcome::crash);
    }
    throw SequenceEnded(str("[", run.id(), "] the fixed scenario: the process running it ",
                            end.describe(), printed),
                        Outcome::crash);
  }
  const std::vector<std::string>& f = *parts;
  std::size_t at = 3;
  const std::size_t notes = std::stoul(f[2]);
  for (std::size_t i = 0; i < notes && at < f.size(); ++i) run.note(f[at++]);
  for (; at + 1 < f.size(); at += 2) run.record(f[at], f[at + 1]);
  if (f[0] == "fail") throw ClauseFailure(f[1]);
  if (f[0] == "not_supported") throw ClauseNotSupported(f[1]);
}

}  // namespace emm::conformance::nep49_engine
