#include "emm/conformance/isolation.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <exception>

#include "emm/conformance/result_codec.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

constexpr std::size_t kTailBytes = 4096;

using Clock = ChildProcess::Clock;

// The child: runs the work and sends its payload; ChildProcess leaves with _exit(), so no
// destructor or atexit handler of the plugin's runs in the child (they belong to the parent's
// copy of the state).
int child_main(const std::function<std::string()>& work) {
  std::string payload;
  try {
    payload = work();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "emm-certify child: the work threw: %s\n", error.what());
    return 3;
  } catch (...) {
    std::fprintf(stderr, "emm-certify child: the work threw a non-standard exception\n");
    return 3;
  }
  send_result_frame(payload);
  return 0;
}

struct Running {
  std::size_t index;
  ChildProcess child;
  Clock::time_point deadline;
};

ChildReport report_of(const ChildProcess& child, const ChildEnd& end) {
  ChildReport report;
  report.duration_ms = end.duration_ms;
  report.output_tail = child.output().tail(kTailBytes);
  std::string problem;
  std::optional<std::string> payload;
  switch (end.kind) {
    case ChildEnd::Kind::timed_out:
    case ChildEnd::Kind::killed:
      report.kind = ChildReport::Kind::timed_out;
      break;
    case ChildEnd::Kind::signaled:
      report.kind = ChildReport::Kind::crashed;
      report.signal = end.signal;
      break;
    case ChildEnd::Kind::exited:
      if (end.exit_status == 0) payload = decode_frame(child.result_bytes(), problem);
      if (payload) {
        report.kind = ChildReport::Kind::finished;
        report.payload = std::move(*payload);
      } else {
        report.kind = ChildReport::Kind::crashed;
        report.exit_status = end.exit_status;
      }
      break;
    case ChildEnd::Kind::lost:
      report.kind = ChildReport::Kind::crashed;
      report.exit_status = -1;
      break;
  }
  return report;
}

}  // namespace

std::vector<ChildReport> run_in_children(
    const std::vector<std::function<std::string()>>& work, std::size_t parallel,
    std::chrono::milliseconds timeout,
    const std::function<void(std::size_t, const ChildReport&)>& on_done) {
  std::vector<ChildReport> reports(work.size());
  std::deque<std::size_t> pending;
  for (std::size_t i = 0; i < work.size(); ++i) pending.push_back(i);
  std::vector<Running> running;
  parallel = std::max<std::size_t>(parallel, 1);
  ChildOptions options;
  options.result_channel = true;
  options.output_keep_bytes = kTailBytes;

  while (!pending.empty() || !running.empty()) {
    while (!pending.empty() && running.size() < parallel) {
      const std::size_t index = pending.front();
      pending.pop_front();
      const auto started = Clock::now();
      running.push_back(
          {index, ChildProcess::fork([&work, index] { return child_main(work[index]); }, options),
           started + timeout});
    }
    std::vector<ChildProcess*> children;
    Clock::time_point deadline = Clock::time_point::max();
    for (Running& child : running) {
      children.push_back(&child.child);
      deadline = std::min(deadline, child.deadline);
    }
    wait_any(children, deadline);
    const auto now = Clock::now();
    for (auto it = running.begin(); it != running.end();) {
      if (it->child.running() && now < it->deadline) {
        ++it;
        continue;
      }
      const ChildEnd end = it->child.wait(it->deadline);  // reaped, or killed: it is past due
      reports[it->index] = report_of(it->child, end);
      if (on_done) on_done(it->index, reports[it->index]);
      it = running.erase(it);
    }
  }
  return reports;
}

ClauseResult result_from_child(const ChildReport& report, const Clause& clause, BackendKind backend,
                               Level level, int timeout_s) {
  ClauseResult result;
  result.clause = &clause;
  result.backend = backend;
  result.level = level;
  result.duration_ms = report.duration_ms;
  std::string tail = report.output_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  const std::string output = tail.empty() ? "" : "; last output: " + tail;
  const std::string id = "[" + clause.id + "] ";
  switch (report.kind) {
    case ChildReport::Kind::finished: {
      std::optional<ClauseResult> decoded = decode_result(report.payload);
      if (decoded && decoded->clause == &clause && decoded->backend == backend) return *decoded;
      result.outcome = Outcome::crash;
      result.message = decoded ? id + "the run reported a result for " + decoded->clause->id +
                                     " on " + std::string(to_string(decoded->backend)) +
                                     ", not for this clause and backend"
                               : id + "the run reported a result the kit cannot read";
      break;
    }
    case ChildReport::Kind::timed_out:
      result.outcome = Outcome::timeout;
      result.message = id + "no answer within " + std::to_string(timeout_s) +
                       " s: the plugin hangs (the run was killed)" + output;
      break;
    case ChildReport::Kind::crashed:
      result.outcome = Outcome::crash;
      result.message =
          report.signal != 0
              ? id + "the plugin crashed the process: " + describe_signal(report.signal) + output
              : id + "the process ended (exit status " + std::to_string(report.exit_status) +
                    ") without reporting a result" + output;
      break;
  }
  return result;
}

}  // namespace emm::conformance
