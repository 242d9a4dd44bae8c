// emm/diagnostics.hpp — where the EMM system reports what it cannot throw.
//
// Finalizers run from destructors and must not throw (spec 2.2). When one does anyway, or a
// deferred deallocation fails during a flush triggered from a destructor, or an environment
// variable cannot be parsed, the host reports it here and carries on — the C++ counterpart of
// Python printing "Exception ignored in ...".
//
// This is the kit's one process-wide sink besides the default runtime: finalizers can run after
// their context and runtime are gone, so they cannot be handed a sink by argument. Tests read
// it through a Diagnostics::Capture scope.
//
// Thread-safety: all members are safe to call concurrently.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace emm {

struct DiagnosticEvent {
  enum class Kind { warning, ignored_exception };
  Kind kind;
  std::string where;    // e.g. "MemoryPointer finalizer", "EMM_CUDA_MAX_PENDING_DEALLOCS_RATIO"
  std::string message;  // what happened and what to do
};

class Diagnostics {
 public:
  static void warn(std::string where, std::string message);
  static void ignored_exception(std::string where, std::string message);

  // Records every event reported while alive (besides printing them to stderr unless quiet).
  // Captures nest; each sees the events reported during its own lifetime.
  class Capture {
   public:
    explicit Capture(bool quiet = true);
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;
    std::vector<DiagnosticEvent> events() const;
    std::size_t count(DiagnosticEvent::Kind kind) const;

   private:
    friend class Diagnostics;
    std::size_t id_;
  };
};

}  // namespace emm
