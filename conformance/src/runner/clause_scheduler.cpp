#include "emm/conformance/clause_scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>

#include "emm/conformance/backend.hpp"
#include "emm/conformance/backend_descriptor.hpp"
#include "emm/conformance/check_registry.hpp"
#include "emm/conformance/child_process.hpp"
#include "emm/conformance/report.hpp"
#include "emm/conformance/result_codec.hpp"
#include "process/crash_stack.hpp"
#include "process/interruption.hpp"
#include "runner/field_codec.hpp"
#include "runner/thread_sanitizer.hpp"

namespace emm::conformance {
namespace {

using namespace field_codec;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kCommandMagic = "EMMRUN1\n";

// What the parent asks a child to run.
struct Command {
  std::string nonce;
  const Clause* clause = nullptr;
  BackendKind backend = BackendKind::fake;
};

std::string encode_command(const Command& command) {
  std::string out(kCommandMagic);
  put(out, command.nonce);
  put(out, command.clause->id);
  put(out, to_string(command.backend));
  return out;
}

std::optional<Command> decode_command(std::string_view in) {
  if (!in.starts_with(kCommandMagic)) return std::nullopt;
  in.remove_prefix(kCommandMagic.size());
  Command command;
  std::string id, backend;
  if (!take(in, command.nonce) || !take(in, id) || !take(in, backend) || !in.empty()) {
    return std::nullopt;
  }
  command.clause = catalogue().find(id);
  const std::optional<BackendKind> kind = parse_backend(backend);
  if (command.clause == nullptr || !kind) return std::nullopt;
  command.backend = *kind;
  return command;
}

std::string fresh_nonce() {
  static std::mt19937_64 generator{std::random_device{}()};
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(generator()));
  return text;
}

// --- the child's side ---------------------------------------------------------------------------

// Every process that runs clauses loads the subject here, and installs the crash stack first.
LoadedSubject load_in_child(const SchedulerSettings& settings) {
  install_crash_stack_from_environment();
  return settings.load_subject();
}

// Sends `answer` after flushing what the clause printed, so that the parent finds the clause's
// output in the pipe before the answer.
void send_answer(const ChildAnswer& answer) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  send_result_frame(encode_answer(answer));
}

// Runs `command` and answers it; returns whether this process may run another clause (not when
// the device is unusable). A subject this child could not load is answered as such (a typed
// answer carrying the nonce), never with an exit status: the plugin may exit() with any.
bool answer(const LoadedSubject& subject, const Command& command, const BackendSettings& settings) {
  if (!subject.evaluate) {
    send_answer(ChildAnswer::not_loaded(command.nonce, subject.failure));
    return false;
  }
  bool reusable = true;
  ClauseResult result = subject.evaluate(*command.clause, command.backend, settings, reusable);
  ChildAnswer reply = ChildAnswer::loaded(command.nonce, std::move(result));
  reply.reusable = reusable;
  send_answer(reply);
  return reusable;
}

// A worker of `backend`: loads the subject, readies the backend (prepare_process(): on the
// gpu, CUDA's start and, when one of its clauses imports, the importing process), then answers
// commands until the channel closes.
int worker_main(const SchedulerSettings& settings, BackendKind backend, bool will_import) {
  const LoadedSubject subject = load_in_child(settings);
  // At most half a clause's time, so that the first clause's deadline still holds.
  if (subject.evaluate) prepare_process(backend, will_import, settings.timeout / 2);
  while (const std::optional<std::string> frame = read_command_frame()) {
    const std::optional<Command> command = decode_command(*frame);
    if (!command) {
      std::fprintf(stderr, "emm-certify worker: a command it cannot read\n");
      return EXIT_FAILURE;
    }
    if (!answer(subject, *command, settings.backend)) break;  // the parent replaces this worker
  }
  return 0;
}

// --- the parent's side --------------------------------------------------------------------------

// The jobs of `backend` in the order they run: the order given, except that clauses which
// destroy the process's contexts run last (stably), so that on the gpu one worker serves every
// other clause instead of a second one paying a new CUDA start. Fixed for a given job list, so a
// crash is reproducible.
std::vector<std::size_t> run_order(const std::vector<ClauseJob>& jobs, BackendKind backend) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].backend == backend) order.push_back(i);
  }
  std::stable_partition(order.begin(), order.end(),
                        [&jobs](std::size_t i) { return !jobs[i].clause->destroys_contexts; });
  return order;
}

std::string last_output(const std::string& output) {
  std::string tail = output.size() > 600 ? "..." + output.substr(output.size() - 600) : output;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  return tail.empty() ? "" : "; last output: " + tail;
}

// "the plugin", or "the handler" for a NEP 49 clause (whose subject is always a handler).
std::string the_subject(const ClauseJob& job) {
  return "the " + std::string(subject_noun(subject_of(*job.clause)));
}

// The one place a result gets its clause, backend and level: from the job, never the child.
void stamp(ClauseResult& result, const ClauseJob& job) {
  stamp_result(result, *job.clause, job.backend, job.level);
}

ClauseResult failure(const ClauseJob& job, Outcome outcome, const std::string& what,
                     std::string output, double duration_ms) {
  ClauseResult result;
  stamp(result, job);
  result.outcome = outcome;
  result.message = job.clause->tag(what + last_output(output));
  result.duration_ms = duration_ms;
  result.output = std::move(output);
  return result;
}

// Fresh workers in a row that hang on their first clause before the rest of a backend is given
// up (spec §8: a plugin that hangs while loading or initializing does not make every clause
// wait for its own timeout).
constexpr int kFreshHangsToGiveUp = 2;
// The time each clause gets once a clause of the backend hung: a quarter of the timeout, at
// least 5 s. A plugin whose loading or initialize() hangs then gets its verdict in under two
// timeouts (spec §8: one whole timeout, then a few short ones until two fresh processes in a row
// hung); a plugin that hung in one clause has failed already, and its other clauses rarely need
// more than seconds (a slower one is reported as a timeout, saying the limit was shortened).
std::chrono::milliseconds after_a_hang(std::chrono::milliseconds timeout) {
  return std::min(timeout, std::max(std::chrono::milliseconds(5000), timeout / 4));
}

// A job the run did not finish: a signal interrupted it (interruption.hpp).
ClauseResult interrupted(const ClauseJob& job, int signal, std::string output = {},
                         double duration_ms = 0.0) {
  return failure(job, Outcome::not_run, interruption_text(signal), std::move(output), duration_ms);
}

// The answer in `payload` if it is one to trust for `job`, else nullopt with `problem` set.
std::optional<ChildAnswer> accept(std::string_view payload, const ClauseJob& job,
                                  const std::string& nonce, std::string& problem) {
  std::optional<ChildAnswer> answer = decode_answer(payload);
  if (!answer) {
    problem = "an answer that cannot be read (not a well-formed answer of a clause process)";
    return std::nullopt;
  }
  if (answer->nonce != nonce) {
    problem = "an answer to a question it was not asked (wrong nonce: a forged or stale result)";
    return std::nullopt;
  }
  // The clause, the backend and the level are the parent's (the level from the declaration it
  // read): the answer carries none of them.
  if (answer->kind == ChildAnswer::Kind::result) stamp(answer->result, job);
  return answer;
}

// The job's result from a trusted answer.
ClauseResult from_answer(const ClauseJob& job, ChildAnswer answer, std::string output,
                         double duration_ms) {
  if (answer.kind == ChildAnswer::Kind::load_failure) {
    return failure(
        job, Outcome::crash,
        "the process running " + the_subject(job) +
            " could not load it, although the probe before the clauses did: " + answer.load_failure,
        std::move(output), duration_ms);
  }
  answer.result.output = std::move(output);
  return std::move(answer.result);
}

// "60 s"; "7.5 s" for a limit that is no whole number of seconds (after_a_hang).
std::string seconds_text(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  std::string tenths = std::to_string((ms % 1000) / 100);
  return std::to_string(ms / 1000) + "." + tenths + " s";
}

ChildOptions child_options(const SchedulerSettings& settings, bool worker) {
  ChildOptions options;
  options.result_channel = true;
  options.command_channel = worker;
  options.memory_limit_bytes = settings.memory_limit_bytes;
  return options;
}

// The result of a child that ended, or was killed, without a trustworthy answer.
// `why_shorter`: why the clause had less than settings.timeout ("" when it had all of it).
ClauseResult ended_without_answer(const ClauseJob& job, const ChildEnd& end, std::string output,
                                  const SchedulerSettings& settings,
                                  std::chrono::milliseconds timeout = {},
                                  const std::string& why_shorter = "") {
  switch (end.kind) {
    case ChildEnd::Kind::timed_out:
      return failure(
          job, Outcome::timeout,
          "no answer within " + seconds_text(timeout.count() > 0 ? timeout : settings.timeout) +
              why_shorter + ": " + the_subject(job) + " hangs (its process group was killed)",
          std::move(output), end.duration_ms);
    case ChildEnd::Kind::signaled:
      return failure(job, Outcome::crash,
                     the_subject(job) + " crashed the process: " + describe_signal(end.signal),
                     std::move(output), end.duration_ms);
    case ChildEnd::Kind::exited:
      // Any status may be the plugin's own exit(); the child's own news comes as an answer.
      // kExitChannelLost is the one status the child uses itself, when it has no channel left
      // to answer on: named as a likely cause, not as a fact.
      if (end.exit_status == kExitChannelLost) {
        return failure(job, Outcome::crash,
                       "the process ended (exit status " + std::to_string(end.exit_status) +
                           ") without reporting a result; it gives up with that status when " +
                           the_subject(job) + " closed or replaced the process's result channel",
                       std::move(output), end.duration_ms);
      }
      return failure(job, Outcome::crash,
                     "the process ended (exit status " + std::to_string(end.exit_status) +
                         ") without reporting a result",
                     std::move(output), end.duration_ms);
    case ChildEnd::Kind::killed:
    case ChildEnd::Kind::lost:
      break;
  }
  return failure(job, Outcome::crash, "the process " + end.describe(), std::move(output),
                 end.duration_ms);
}

// The library's file name, for a ThreadSanitizer report to name when its stacks run through it.
std::string plugin_file(const SchedulerSettings& settings) {
  const std::size_t slash = settings.plugin_path.rfind('/');
  return slash == std::string::npos ? settings.plugin_path : settings.plugin_path.substr(slash + 1);
}

// --- backend isolation: workers that each answer clause after clause --------------------------

// A worker, the clauses it answers one after another and the one it is answering. Several lanes
// run side by side on the fake backend (SchedulerSettings::parallel_fake); the gpu has one, since
// its memory figures are device-wide. The first lane gets the clauses that run threads
// (the catalogue trait `threads`: ALLOC-10 and LIFE-8, the longest on the fake, which keep a core
// busy beside their own), the others share the rest in turn; each lane keeps the run order. Which
// clauses share a process never depends on timing, so a crash that needs an earlier clause's
// leftovers in the plugin's process is reproducible.
struct Lane {
  std::vector<std::size_t> queue;  // job indices, in run order
  std::size_t next = 0;            // the position in queue of the next clause to hand out
  std::optional<ChildProcess> worker;
  bool answered = false;  // the current worker answered a clause
  // Fail fast: fresh workers of this lane in a row that hung before answering any clause (a
  // plugin whose loading or initialize() never returns hangs in every one), and where.
  int fresh_hangs = 0;
  std::string hung_in;
  std::optional<std::size_t> job;
  std::string nonce;
  Clock::time_point started;
  Clock::time_point deadline;
  std::chrono::milliseconds limit{};
  std::string why_shorter;
};

// One thread serves every lane (ChildProcess::fork() must be called from a single-threaded
// process): it hands each idle lane the next clause, waits for whichever answers first
// (wait_any_frame) and judges that answer. Results are published in the run order, whichever
// lane finished first, so the console reads the same in every run.
class WorkerLanes {
 public:
  WorkerLanes(const std::vector<ClauseJob>& jobs, const SchedulerSettings& settings,
              const std::vector<std::size_t>& order, std::size_t lanes,
              std::vector<ClauseResult>& results,
              const std::function<void(const ClauseResult&)>& on_result)
      : jobs_(jobs),
        settings_(settings),
        order_(order),
        lanes_(std::max<std::size_t>(lanes, 1)),
        results_(results),
        on_result_(on_result),
        backend_(jobs[order.front()].backend),
        position_(jobs.size(), 0),
        ready_(order.size(), false) {
    std::size_t turn = 0;  // among the lanes after the first (or the only one)
    for (std::size_t i = 0; i < order.size(); ++i) {
      position_[order[i]] = i;
      const std::size_t others = lanes_.size() - 1;
      const std::size_t lane =
          others == 0 || jobs[order[i]].clause->runs_threads ? 0 : 1 + turn++ % others;
      lanes_[lane].queue.push_back(order[i]);
    }
  }

  void run() {
    for (;;) {
      if (const int signal = interrupting_signal()) {
        interrupt(signal);
        return;
      }
      give_up_if_hanging();
      for (Lane& lane : lanes_) {
        while (!lane.job && lane.next < lane.queue.size() &&
               lane.fresh_hangs < kFreshHangsToGiveUp) {
          start(lane, lane.queue[lane.next++]);
        }
      }
      std::vector<ChildProcess*> busy;
      Clock::time_point earliest = Clock::time_point::max();
      for (Lane& lane : lanes_) {
        if (!lane.job) continue;
        busy.push_back(&*lane.worker);
        earliest = std::min(earliest, lane.deadline);
      }
      if (busy.empty()) break;
      wait_any_frame(busy, earliest);
      if (interrupting_signal() != 0) continue;
      const auto now = Clock::now();
      for (Lane& lane : lanes_) {
        if (lane.job && (lane.worker->has_answer() || now >= lane.deadline)) settle(lane);
      }
    }
    for (Lane& lane : lanes_) {
      if (!lane.worker) continue;
      lane.worker->close_command_channel();
      lane.worker->wait(settings_.timeout);
      retire(lane);
    }
  }

 private:
  void publish(std::size_t index) {
    ready_[position_[index]] = true;
    for (; published_ < order_.size() && ready_[published_]; ++published_) {
      if (on_result_) on_result_(results_[order_[published_]]);
    }
  }

  void retire(Lane& lane) {
    if (lane.worker) lane.worker->kill();
    lane.worker.reset();
    kill_stray_children();
  }

  // Fail fast: a lane whose fresh workers hung kFreshHangsToGiveUp times in a row runs none of
  // its clauses not started (each lane on its own: its clauses' hangs are its own evidence).
  void give_up_if_hanging() {
    for (Lane& lane : lanes_) {
      if (lane.fresh_hangs < kFreshHangsToGiveUp) continue;
      for (; lane.next < lane.queue.size(); ++lane.next) {
        const std::size_t index = lane.queue[lane.next];
        results_[index] = failure(
            jobs_[index], Outcome::not_run,
            "not run: " + std::to_string(lane.fresh_hangs) +
                " fresh processes in a row hung before answering any clause (" + lane.hung_in +
                "), so loading " + the_subject(jobs_[index]) +
                " or its initialize() does not return; the clauses "
                "left to that worker of the " +
                std::string(to_string(backend_)) + " backend were not run (fix the hang first)",
            "", 0.0);
        publish(index);
      }
    }
  }

  void interrupt(int signal) {
    for (Lane& lane : lanes_) {
      if (lane.job) {
        const double elapsed =
            std::chrono::duration<double, std::milli>(Clock::now() - lane.started).count();
        results_[*lane.job] =
            interrupted(jobs_[*lane.job], signal, lane.worker->take_output().text(), elapsed);
        publish(*lane.job);
        lane.job.reset();
      }
      retire(lane);
    }
    for (Lane& lane : lanes_) {
      for (; lane.next < lane.queue.size(); ++lane.next) {
        results_[lane.queue[lane.next]] = interrupted(jobs_[lane.queue[lane.next]], signal);
        publish(lane.queue[lane.next]);
      }
    }
  }

  // Gives the lane clause `index`, with a fresh worker if it has none.
  void start(Lane& lane, std::size_t index) {
    const ClauseJob& job = jobs_[index];
    if (!lane.worker) {
      lane.answered = false;
      try {
        // Whether a clause left for this worker imports in another process.
        const bool will_import =
            job.clause->imports_elsewhere ||
            std::any_of(lane.queue.begin() + static_cast<std::ptrdiff_t>(lane.next),
                        lane.queue.end(),
                        [this](std::size_t i) { return jobs_[i].clause->imports_elsewhere; });
        const SchedulerSettings& settings = settings_;
        const BackendKind backend = backend_;
        lane.worker.emplace(ChildProcess::fork(
            [&settings, backend, will_import] {
              return worker_main(settings, backend, will_import);
            },
            child_options(settings_, true)));
      } catch (const std::exception& error) {
        results_[index] =
            failure(job, Outcome::crash,
                    std::string("no worker process could be started: ") + error.what(), "", 0.0);
        publish(index);
        return;
      }
    }
    lane.job = index;
    lane.nonce = fresh_nonce();
    lane.started = Clock::now();
    lane.limit = first_hang_.empty() ? settings_.timeout : after_a_hang(settings_.timeout);
    lane.why_shorter =
        lane.limit < settings_.timeout ? " (shortened: " + first_hang_ + " hung before)" : "";
    lane.deadline = lane.started + lane.limit;
    lane.worker->send_command(encode_command({lane.nonce, job.clause, job.backend}));
  }

  // Judges the lane's answer (or its end, or its deadline) and frees the lane.
  void settle(Lane& lane) {
    const std::size_t index = *lane.job;
    lane.job.reset();
    const ClauseJob& job = jobs_[index];
    ChildProcess& worker = *lane.worker;
    const FrameWait wait = worker.wait_for_frame(lane.deadline);
    const double elapsed =
        std::chrono::duration<double, std::milli>(Clock::now() - lane.started).count();
    std::string output = worker.take_output().text();
    std::string problem;
    switch (wait.status) {
      case FrameWait::Status::frame:
        if (std::optional<ChildAnswer> answer = accept(wait.payload, job, lane.nonce, problem)) {
          const bool reusable = answer->reusable;
          results_[index] = from_answer(job, std::move(*answer), std::move(output), elapsed);
          lane.answered = true;
          lane.fresh_hangs = 0;
          lane.hung_in.clear();
          // A worker that cannot go on (it could not load the plugin, or its device is unusable)
          // is replaced: the next clause gets a new one.
          if (!reusable) retire(lane);
          break;
        }
        results_[index] = failure(job, Outcome::crash,
                                  "the process running " + the_subject(job) + " sent " + problem +
                                      " (the worker was replaced)",
                                  std::move(output), elapsed);
        retire(lane);
        break;
      case FrameWait::Status::garbage:
        results_[index] = failure(job, Outcome::crash,
                                  "the process running " + the_subject(job) +
                                      " wrote garbage on its result channel (" + wait.problem + ")",
                                  std::move(output), elapsed);
        retire(lane);
        break;
      case FrameWait::Status::child_ended:
        results_[index] = ended_without_answer(job, *worker.end(), std::move(output), settings_);
        retire(lane);
        break;
      case FrameWait::Status::deadline: {
        if (first_hang_.empty()) first_hang_ = job.clause->id;
        if (!lane.answered) {
          ++lane.fresh_hangs;
          lane.hung_in += (lane.hung_in.empty() ? "" : ", ") + job.clause->id;
        }
        worker.kill();
        ChildEnd end = *worker.end();
        end.kind = ChildEnd::Kind::timed_out;
        end.duration_ms = elapsed;
        results_[index] = ended_without_answer(job, end, std::move(output), settings_, lane.limit,
                                               lane.why_shorter);
        retire(lane);
        break;
      }
    }
    // A race ThreadSanitizer reported while the clause ran (a plugin built with it) fails the
    // clause, whatever its process concluded or however it ended.
    fail_on_thread_sanitizer_reports(results_[index], plugin_file(settings_));
    publish(index);
  }

  const std::vector<ClauseJob>& jobs_;
  const SchedulerSettings& settings_;
  const std::vector<std::size_t>& order_;
  std::vector<Lane> lanes_;
  std::vector<ClauseResult>& results_;
  const std::function<void(const ClauseResult&)>& on_result_;
  const BackendKind backend_;
  std::string first_hang_;             // the first clause of the backend that hung (after_a_hang)
  std::vector<std::size_t> position_;  // by job index: its position in order_
  std::vector<bool> ready_;            // by position: the result is known
  std::size_t published_ = 0;          // positions published so far
};

// --- clause isolation: one process per job
// -------------------------------------------------------

struct Running {
  std::size_t index;
  std::string nonce;
  Clock::time_point deadline;
  ChildProcess child;
};

ClauseResult finish(const ClauseJob& job, Running& running, const SchedulerSettings& settings) {
  const ChildEnd end = running.child.wait(running.deadline);
  std::string output = running.child.output().text();
  if (end.kind == ChildEnd::Kind::exited && end.exit_status == 0) {
    std::string problem;
    if (const std::optional<std::string> payload =
            decode_frame(running.child.result_bytes(), problem)) {
      if (std::optional<ChildAnswer> answer = accept(*payload, job, running.nonce, problem)) {
        return from_answer(job, std::move(*answer), std::move(output), end.duration_ms);
      }
    }
    return failure(job, Outcome::crash,
                   "the process running " + the_subject(job) +
                       " did not send exactly one result (" + problem + ")",
                   std::move(output), end.duration_ms);
  }
  return ended_without_answer(job, end, std::move(output), settings);
}

void run_one_per_clause(const std::vector<ClauseJob>& jobs, const SchedulerSettings& settings,
                        const std::vector<std::size_t>& order, std::size_t parallel,
                        std::vector<ClauseResult>& results,
                        const std::function<void(const ClauseResult&)>& on_result) {
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < order.size() || !running.empty()) {
    if (const int signal = interrupting_signal()) {
      for (Running& r : running) {
        r.child.kill();
        results[r.index] = interrupted(jobs[r.index], signal, r.child.output().text());
        if (on_result) on_result(results[r.index]);
      }
      running.clear();
      kill_stray_children();
      for (; next < order.size(); ++next) {
        results[order[next]] = interrupted(jobs[order[next]], signal);
        if (on_result) on_result(results[order[next]]);
      }
      return;
    }
    while (next < order.size() && running.size() < parallel) {
      const std::size_t index = order[next++];
      const ClauseJob job = jobs[index];
      const std::string nonce = fresh_nonce();
      try {
        ChildProcess child = ChildProcess::fork(
            [&settings, job, nonce] {
              answer(load_in_child(settings), Command{nonce, job.clause, job.backend},
                     settings.backend);
              return 0;
            },
            child_options(settings, false));
        running.push_back({index, nonce, Clock::now() + settings.timeout, std::move(child)});
      } catch (const std::exception& error) {
        results[index] =
            failure(job, Outcome::crash,
                    std::string("no process could be started: ") + error.what(), "", 0.0);
        if (on_result) on_result(results[index]);
      }
    }
    if (running.empty()) continue;
    Clock::time_point earliest = running.front().deadline;
    std::vector<ChildProcess*> children;
    for (Running& r : running) {
      children.push_back(&r.child);
      earliest = std::min(earliest, r.deadline);
    }
    wait_any(children, earliest);
    const auto now = Clock::now();
    for (auto it = running.begin(); it != running.end();) {
      if (it->child.running() && now < it->deadline) {
        ++it;
        continue;
      }
      results[it->index] = finish(jobs[it->index], *it, settings);
      fail_on_thread_sanitizer_reports(results[it->index], plugin_file(settings));
      if (on_result) on_result(results[it->index]);
      it = running.erase(it);
      kill_stray_children();
    }
  }
}

// --- the shortest sequence that crashes or hangs
// ---------------------------------------------------

// A plugin clause that crashed or hung on the fake backend is explored once more in a child whose
// sequences each run in a process of their own (Exploration::sequences_in_children), so that the
// crash becomes a failing sequence RapidCheck shrinks; its reproducer joins the result. Only the
// fake: a process must not fork after CUDA started. Costs nothing when nothing crashed.
// The timeouts of a backend that get a reproducer (reproduce_crash), the first ones.
constexpr std::size_t kHangsReproduced = 3;

void reproduce_crash(const ClauseJob& job, const SchedulerSettings& settings,
                     ClauseResult& result) {
  SchedulerSettings reproducing = settings;
  reproducing.backend.exploration.sequences_in_children = true;
  const std::string nonce = fresh_nonce();
  std::optional<ChildProcess> child;
  try {
    child.emplace(ChildProcess::fork(
        [&reproducing, job, nonce] {
          answer(load_in_child(reproducing), Command{nonce, job.clause, job.backend},
                 reproducing.backend);
          return 0;
        },
        child_options(reproducing, false)));
  } catch (const std::exception&) {
    return;  // the crash stands as reported
  }
  // Shrinking a sequence that hangs takes a while: each try waits for the hang.
  const auto limit =
      std::max<std::chrono::milliseconds>(settings.timeout, std::chrono::seconds(30));
  const ChildEnd end = child->wait(Clock::now() + limit);
  kill_stray_children();
  if (end.kind != ChildEnd::Kind::exited || end.exit_status != 0) return;
  std::string problem;
  const std::optional<std::string> payload = decode_frame(child->result_bytes(), problem);
  if (!payload) return;
  std::optional<ChildAnswer> found = accept(*payload, job, nonce, problem);
  if (!found || found->kind != ChildAnswer::Kind::result || !found->result.reproducer) return;
  result.reproducer = std::move(found->result.reproducer);
  result.notes.push_back(
      "the generated sequences, each run in a process of its own, reproduce "
      "it: " +
      found->result.message);
}

// --- in-process
// ----------------------------------------------------------------------------------

void run_in_this_process(const std::vector<ClauseJob>& jobs, const SchedulerSettings& settings,
                         std::vector<ClauseResult>& results,
                         const std::function<void(const ClauseResult&)>& on_result) {
  const LoadedSubject subject = load_in_child(settings);
  std::vector<std::size_t> order;
  for (const BackendKind backend : kBackendKinds) {
    const std::vector<std::size_t> part = run_order(jobs, backend);
    order.insert(order.end(), part.begin(), part.end());
  }
  for (const std::size_t index : order) {
    const ClauseJob& job = jobs[index];
    if (const int signal = interrupting_signal()) {
      results[index] = interrupted(job, signal);
    } else if (!subject.evaluate) {
      results[index] = failure(job, Outcome::crash, "could not load: " + subject.failure, "", 0.0);
    } else {
      bool reusable = true;  // one process: an unusable device shows in the next results too
      results[index] = subject.evaluate(*job.clause, job.backend, settings.backend, reusable);
      stamp(results[index], job);
    }
    if (on_result) on_result(results[index]);
  }
}

}  // namespace

std::vector<ClauseResult> run_clause_jobs(
    const std::vector<ClauseJob>& jobs, const SchedulerSettings& settings,
    const std::function<void(const ClauseResult&)>& on_result) {
  std::vector<ClauseResult> results(jobs.size());
  if (settings.isolation == Isolation::in_process) {
    run_in_this_process(jobs, settings, results, on_result);
    return results;
  }
  // One backend after the other: GPU memory figures are device-wide, and the fake's clauses are
  // fast enough not to need the GPU's company.
  for (const BackendKind backend : kBackendKinds) {
    const std::vector<std::size_t> order = run_order(jobs, backend);
    if (order.empty()) continue;
    const BackendDescriptor& descriptor = backend_descriptor(backend);
    if (settings.isolation == Isolation::backend) {
      const std::size_t lanes = descriptor.side_by_side ? settings.parallel_fake : 1;
      WorkerLanes(jobs, settings, order, lanes, results, on_result).run();
    } else {
      const std::size_t parallel =
          descriptor.side_by_side ? std::max<std::size_t>(settings.parallel_fake, 1) : 1;
      run_one_per_clause(jobs, settings, order, parallel, results, on_result);
    }
    // Reproducers are sought in forked children: plugin clauses on a fork-safe backend only; an
    // interrupted run ends as soon as it can.
    if (!descriptor.fork_safe || settings.load_subject || interrupting_signal() != 0) continue;
    // Each try of a hanging sequence waits for the hang: a plugin that hangs in many clauses
    // gets reproducers for its first few, and one whose backend was given up (fail fast: it
    // hangs while loading or initializing) none, so that its verdict still comes in under two
    // timeouts.
    const bool given_up = std::any_of(order.begin(), order.end(), [&results](std::size_t i) {
      return results[i].outcome == Outcome::not_run;
    });
    std::size_t hangs_left = given_up ? 0 : kHangsReproduced;
    for (const std::size_t index : order) {
      ClauseResult& result = results[index];
      if (result.outcome == Outcome::crash) {
        reproduce_crash(jobs[index], settings, result);
      } else if (result.outcome == Outcome::timeout) {
        if (hangs_left == 0) {
          result.notes.push_back(given_up ? "no reproducer sought: the backend was given up"
                                          : "no reproducer sought: only the first " +
                                                std::to_string(kHangsReproduced) +
                                                " hangs of a backend are reproduced");
          continue;
        }
        --hangs_left;
        reproduce_crash(jobs[index], settings, result);
      }
    }
  }
  return results;
}

}  // namespace emm::conformance
