#include "emm/diagnostics.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

namespace emm {
namespace {

struct Sink {
  std::mutex mutex;
  std::size_t next_id = 0;
  struct Listener {
    bool quiet;
    std::vector<DiagnosticEvent> events;
  };
  std::map<std::size_t, Listener> listeners;
};

// Leaked on purpose: finalizers may report during static destruction.
Sink& sink() {
  static Sink* instance = new Sink;
  return *instance;
}

void report(DiagnosticEvent event) {
  Sink& s = sink();
  bool print = true;
  {
    std::lock_guard lock(s.mutex);
    for (auto& [id, listener] : s.listeners) {
      listener.events.push_back(event);
      if (listener.quiet) print = false;
    }
  }
  if (print) {
    const char* label =
        event.kind == DiagnosticEvent::Kind::warning ? "warning" : "exception ignored";
    std::fprintf(stderr, "emm %s in %s: %s\n", label, event.where.c_str(), event.message.c_str());
  }
}

}  // namespace

void Diagnostics::warn(std::string where, std::string message) {
  report({DiagnosticEvent::Kind::warning, std::move(where), std::move(message)});
}

void Diagnostics::ignored_exception(std::string where, std::string message) {
  report({DiagnosticEvent::Kind::ignored_exception, std::move(where), std::move(message)});
}

Diagnostics::Capture::Capture(bool quiet) {
  Sink& s = sink();
  std::lock_guard lock(s.mutex);
  id_ = s.next_id++;
  s.listeners.emplace(id_, Sink::Listener{quiet, {}});
}

Diagnostics::Capture::~Capture() {
  Sink& s = sink();
  std::lock_guard lock(s.mutex);
  s.listeners.erase(id_);
}

std::vector<DiagnosticEvent> Diagnostics::Capture::events() const {
  Sink& s = sink();
  std::lock_guard lock(s.mutex);
  return s.listeners.at(id_).events;
}

std::size_t Diagnostics::Capture::count(DiagnosticEvent::Kind kind) const {
  auto all = events();
  return static_cast<std::size_t>(
      std::count_if(all.begin(), all.end(), [kind](const auto& e) { return e.kind == kind; }));
}

}  // namespace emm
