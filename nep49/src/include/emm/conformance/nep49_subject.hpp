// emm/conformance/nep49_subject.hpp — the NumPy data-memory handler (NEP 49) under test.
//
// Named on emm-certify's command line in one of two ways (Nep49SubjectSpec):
//   --nep49-library PATH[:SYMBOL]  a shared library exporting `emm::nep49::Handler* SYMBOL()`
//                                  (default emm_nep49_handler); no Python is needed to load it;
//   --nep49 MODULE:ATTR            the "mem_handler" capsule MODULE.ATTR (or what ATTR() returns)
//                                  of a Python extension module; numpy:PyDataMem_DefaultHandler
//                                  is NumPy's own default handler, the known-good baseline.
// Loaded (Nep49Subject::load) only in the child processes that run clauses: CPython and NumPy
// come in through the NumPy bridge (numpy_bridge.hpp), a library emm-certify never links.
//
//   Nep49SubjectSpec spec = Nep49SubjectSpec::module("numpy:PyDataMem_DefaultHandler");
//   std::unique_ptr<Nep49Subject> subject = Nep49Subject::load(spec);   // throws emm::Error
//   const emm::nep49::Handler& h = subject->handler();
//
// Ownership: a Nep49Subject keeps its library (or module and capsule) loaded until it goes.
// Thread-safety: handler() may be read from any thread; numpy() is for one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emm/nep49/handler.hpp"

namespace emm::conformance {

struct Clause;

struct Nep49SubjectSpec {
  enum class Kind { library, module };
  Kind kind = Kind::library;
  std::string location;  // the library's path, or the module's name
  std::string symbol;    // the entry point, or the attribute

  // "PATH[:SYMBOL]" (a PATH without a slash is a file in the current directory). Throws
  // std::invalid_argument saying what is wrong.
  static Nep49SubjectSpec library(std::string_view text);
  // "MODULE:ATTR". Throws std::invalid_argument saying what is wrong.
  static Nep49SubjectSpec module(std::string_view text);
  // As given on the command line: "PATH:SYMBOL" or "MODULE:ATTR".
  std::string text() const;
};

// Real NumPy, in this process: runs a clause's scenario against the subject's capsule.
class NumpyBridge {
 public:
  virtual ~NumpyBridge() = default;
  // "1.24.2 (Python 3.11.2)".
  virtual std::string versions() const = 0;
  // Runs `clause`'s NumPy scenario with the subject installed; "" when it passed, else what was
  // expected and seen. Remarks go to `notes`.
  virtual std::string run(const Clause& clause, std::vector<std::string>& notes) = 0;
};

class Nep49Subject {
 public:
  // Throws emm::Error saying why the handler could not be loaded.
  static std::unique_ptr<Nep49Subject> load(const Nep49SubjectSpec& spec);
  virtual ~Nep49Subject() = default;

  const Nep49SubjectSpec& spec() const noexcept { return spec_; }
  emm::nep49::Handler& handler() const noexcept { return *handler_; }
  // The library's emm_nep49_bind_driver, or null.
  emm::nep49::BindDriverHook bind_driver() const noexcept { return bind_driver_; }
  // Real NumPy with this handler's capsule, loaded on first use; null when it cannot be loaded
  // here, with `why_not` saying why.
  virtual NumpyBridge* numpy(std::string& why_not) = 0;
  // Runs `call` holding the GIL when CPython is loaded in this process (NumPy calls malloc,
  // calloc and free with it held, and NumPy 1.x's default calloc releases it), else directly.
  virtual void with_gil(const std::function<void()>& call) = 0;
  // Between these, the calling thread keeps a Python thread state (when CPython is loaded), so
  // that with_gil() only takes the GIL, as for a Python thread that calls NumPy; one attach,
  // then one detach, on the same thread.
  virtual void attach_thread() = 0;
  virtual void detach_thread() = 0;

  // The handler as a program that asks for it a second time gets it: the library's entry point
  // called again, or MODULE.ATTR read again (and called, when it is a function). `handler` is
  // the struct the answer holds (often the same one); the answer (a capsule) stays referenced
  // until release_again(token). The handler a subject loaded first must keep working whatever
  // was asked again or released. Throws emm::Error saying why it cannot be asked.
  struct AskedAgain {
    emm::nep49::Handler* handler = nullptr;
    int token = 0;
  };
  virtual AskedAgain ask_again() = 0;
  // Drops the answer `token` named (a capsule's destructor may run). Throws emm::Error.
  virtual void release_again(int token) = 0;
  // The call a program makes to ask again, for reproducers: "emm_nep49_handler()",
  // "my_module.handler", "my_module.make_handler()".
  virtual std::string factory_call() const = 0;

 protected:
  explicit Nep49Subject(Nep49SubjectSpec spec) : spec_(std::move(spec)) {}
  Nep49SubjectSpec spec_;
  emm::nep49::Handler* handler_ = nullptr;
  emm::nep49::BindDriverHook bind_driver_ = nullptr;
};

}  // namespace emm::conformance
