#include "emm/conformance/isolation.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <exception>

namespace emm::conformance {
namespace {

constexpr std::string_view kMagic = "EMMR1\n";
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

// Length-prefixed fields: "<len>:<bytes>".
void put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out.append(field);
}

bool take(std::string_view& in, std::string& field) {
  const std::size_t colon = in.find(':');
  if (colon == std::string_view::npos) return false;
  std::size_t length = 0;
  const auto [end, error] = std::from_chars(in.data(), in.data() + colon, length);
  if (error != std::errc() || end != in.data() + colon) return false;
  if (in.size() - colon - 1 < length) return false;
  field.assign(in.substr(colon + 1, length));
  in.remove_prefix(colon + 1 + length);
  return true;
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

std::string encode_result(const ClauseResult& result) {
  std::string out(kMagic);
  put(out, result.clause);
  put(out, result.backend);
  put(out, to_string(result.level));
  put(out, to_string(result.outcome));
  put(out, result.message);
  char duration[64];
  std::snprintf(duration, sizeof duration, "%.6f", result.duration_ms);
  put(out, duration);
  put(out, std::to_string(result.properties.size()));
  for (const auto& [key, value] : result.properties) {
    put(out, key);
    put(out, value);
  }
  return out;
}

std::optional<ClauseResult> decode_result(std::string_view payload) {
  if (!payload.starts_with(kMagic)) return std::nullopt;
  payload.remove_prefix(kMagic.size());
  ClauseResult result;
  std::string level, outcome, duration, count;
  if (!take(payload, result.clause) || !take(payload, result.backend) || !take(payload, level) ||
      !take(payload, outcome) || !take(payload, result.message) || !take(payload, duration) ||
      !take(payload, count)) {
    return std::nullopt;
  }
  const auto parsed_level = parse_level(level);
  const auto parsed_outcome = parse_outcome(outcome);
  if (!parsed_level || !parsed_outcome) return std::nullopt;
  result.level = *parsed_level;
  result.outcome = *parsed_outcome;
  try {
    result.duration_ms = std::stod(duration);
  } catch (...) {
    return std::nullopt;
  }
  std::size_t n = 0;
  const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), n);
  if (error != std::errc() || end != count.data() + count.size()) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i) {
    std::string key, value;
    if (!take(payload, key) || !take(payload, value)) return std::nullopt;
    result.properties.emplace_back(std::move(key), std::move(value));
  }
  if (!payload.empty()) return std::nullopt;
  return result;
}

ClauseResult result_from_child(const ChildReport& report, const std::string& clause,
                               const std::string& backend, Level level, int timeout_s) {
  if (report.kind == ChildReport::Kind::finished) {
    if (auto decoded = decode_result(report.payload)) return *decoded;
  }
  ClauseResult result;
  result.clause = clause;
  result.backend = backend;
  result.level = level;
  result.duration_ms = report.duration_ms;
  std::string tail = report.output_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  const std::string output = tail.empty() ? "" : "; last output: " + tail;
  switch (report.kind) {
    case ChildReport::Kind::timed_out:
      result.outcome = Outcome::timeout;
      result.message = "[" + clause + "] no answer within " + std::to_string(timeout_s) +
                       " s: the plugin hangs (the run was killed)" + output;
      break;
    case ChildReport::Kind::crashed:
      result.outcome = Outcome::crash;
      result.message =
          report.signal != 0
              ? "[" + clause +
                    "] the plugin crashed the process: " + describe_signal(report.signal) + output
              : "[" + clause + "] the process ended (exit status " +
                    std::to_string(report.exit_status) + ") without reporting a result" + output;
      break;
    case ChildReport::Kind::finished:
      result.outcome = Outcome::crash;
      result.message = "[" + clause + "] the run reported a result the kit cannot read";
      break;
  }
  return result;
}

}  // namespace emm::conformance
