#include "emm/conformance/nep49_subject.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "emm/errors.hpp"
#include "emm/python/dotted_name.hpp"
#include "nep49/src/numpy_bridge_abi.hpp"

namespace emm::conformance {
namespace {

using nep49_bridge::BridgeApi;

std::string dl_error() {
  const char* text = ::dlerror();
  return text != nullptr ? text : "unknown dlerror";
}

std::string running_program_dir() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return "";
  const std::string path(buffer, static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// $EMM_NEP49_NUMPY_BRIDGE, beside the running program, the build tree, the install tree.
std::vector<std::string> bridge_candidates() {
  std::vector<std::string> places;
  if (const char* env = std::getenv("EMM_NEP49_NUMPY_BRIDGE"); env != nullptr && *env != '\0') {
    places.emplace_back(env);
  }
  if (const std::string dir = running_program_dir(); !dir.empty()) {
    places.push_back(dir + "/" + nep49_bridge::kBridgeLibraryName);
  }
#ifdef EMM_NEP49_BRIDGE_BUILD_PATH
  places.emplace_back(EMM_NEP49_BRIDGE_BUILD_PATH);
#endif
#ifdef EMM_NEP49_BRIDGE_INSTALL_PATH
  places.emplace_back(EMM_NEP49_BRIDGE_INSTALL_PATH);
#endif
  return places;
}

// The bridge, loaded once per process; null with `why_not` when it cannot be.
const BridgeApi* load_bridge(std::string& why_not) {
  static const BridgeApi* api = nullptr;
  static std::string problem;
  static bool tried = false;
  if (!tried) {
    tried = true;
    std::string seen;
    for (const std::string& place : bridge_candidates()) {
      if (::access(place.c_str(), R_OK) != 0) continue;
      void* library = ::dlopen(place.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (library == nullptr) {
        seen += "; " + place + ": " + dl_error();
        continue;
      }
      const auto entry = reinterpret_cast<nep49_bridge::BridgeEntryPoint>(
          ::dlsym(library, nep49_bridge::kBridgeEntryPoint));
      const BridgeApi* candidate = entry != nullptr ? entry() : nullptr;
      if (candidate == nullptr || candidate->abi_version != nep49_bridge::kBridgeAbiVersion) {
        seen += "; " + place + ": not a NumPy bridge of this kit's version";
        continue;
      }
      if (std::string why = candidate->start(); !why.empty()) {
        problem = "NumPy could not be started: " + why;
        break;
      }
      api = candidate;
      break;
    }
    if (api == nullptr && problem.empty()) {
      problem = std::string("no NumPy bridge (") + nep49_bridge::kBridgeLibraryName +
                ", built when CPython's and NumPy's headers are found; set "
                "EMM_NEP49_NUMPY_BRIDGE to its path)" +
                seen;
    }
  }
  why_not = problem;
  return api;
}

class LoadedSubject final : public Nep49Subject {
 public:
  explicit LoadedSubject(Nep49SubjectSpec spec) : Nep49Subject(std::move(spec)) {}
  ~LoadedSubject() override {
    // The library stays mapped: arrays NumPy still holds, and its threads, may use the handler
    // until the process ends (NEP 49: handlers are in practice immortal).
  }

  void load() {
    if (spec_.kind == Nep49SubjectSpec::Kind::library) {
      library_ = ::dlopen(spec_.location.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library_ == nullptr) throw Error("cannot load " + spec_.location + ": " + dl_error());
      const auto entry =
          reinterpret_cast<nep49::HandlerEntryPoint>(::dlsym(library_, spec_.symbol.c_str()));
      if (entry == nullptr) {
        throw Error(spec_.location + " exports no " + spec_.symbol +
                    " (expected extern \"C\" emm::nep49::Handler* " + spec_.symbol +
                    "(); name another entry point with PATH:SYMBOL)");
      }
      handler_ = entry();
      if (handler_ == nullptr) throw Error(spec_.symbol + "() returned NULL instead of a handler");
      entry_ = entry;
      bind_driver_ =
          reinterpret_cast<nep49::BindDriverHook>(::dlsym(library_, nep49::kBindDriverHook));
      return;
    }
    std::string why;
    bridge_ = load_bridge(why);
    if (bridge_ == nullptr) throw Error("cannot import " + spec_.text() + ": " + why);
    void* pointer = nullptr;
    std::string module_file;
    if (std::string problem =
            bridge_->load_capsule(spec_.location, spec_.symbol, &pointer, &module_file, &called_);
        !problem.empty()) {
      throw Error("cannot read the handler " + spec_.text() + ": " + problem);
    }
    handler_ = static_cast<nep49::Handler*>(pointer);
    adopted_ = true;
    if (!module_file.empty()) {
      if (void* module = ::dlopen(module_file.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
        bind_driver_ =
            reinterpret_cast<nep49::BindDriverHook>(::dlsym(module, nep49::kBindDriverHook));
      }
    }
  }

  void with_gil(const std::function<void()>& call) override {
    if (bridge_ == nullptr) {
      call();
      return;
    }
    struct Held {
      const BridgeApi* api;
      int state;
      ~Held() { api->gil_release(state); }
    } held{bridge_, bridge_->gil_ensure()};
    call();
  }

  void attach_thread() override {
    if (bridge_ != nullptr) attached_ = bridge_->thread_attach();
  }
  void detach_thread() override {
    if (bridge_ != nullptr && attached_ != nullptr) bridge_->thread_detach(attached_);
    attached_ = nullptr;
  }

  AskedAgain ask_again() override {
    AskedAgain again;
    if (spec_.kind == Nep49SubjectSpec::Kind::library) {
      again.handler = entry_();
      if (again.handler == nullptr) {
        throw Error(spec_.symbol + "() returned NULL when asked for the handler again");
      }
      return again;
    }
    void* pointer = nullptr;
    void* capsule = nullptr;
    bool called = false;
    if (std::string problem =
            bridge_->capsule_again(spec_.location, spec_.symbol, &pointer, &capsule, &called);
        !problem.empty()) {
      throw Error("cannot read the handler " + spec_.text() + " again: " + problem);
    }
    called_ = called;
    again.handler = static_cast<nep49::Handler*>(pointer);
    again.token = next_token_++;
    capsules_.emplace_back(again.token, capsule);
    return again;
  }

  void release_again(int token) override {
    for (auto it = capsules_.begin(); it != capsules_.end(); ++it) {
      if (it->first != token) continue;
      void* capsule = it->second;
      capsules_.erase(it);
      bridge_->release_capsule(capsule);
      return;
    }
  }

  std::string factory_call() const override {
    if (spec_.kind == Nep49SubjectSpec::Kind::library) return spec_.symbol + "()";
    return spec_.location + "." + spec_.symbol + (called_ ? "()" : "");
  }

  NumpyBridge* numpy(std::string& why_not) override {
    if (bridge_ == nullptr) bridge_ = load_bridge(why_not);
    if (bridge_ == nullptr) return nullptr;
    if (!adopted_) {
      if (std::string problem = bridge_->adopt_handler(handler_); !problem.empty()) {
        why_not = "NumPy could not take the handler: " + problem;
        return nullptr;
      }
      adopted_ = true;
    }
    adapter_.api = bridge_;
    return &adapter_;
  }

 private:
  struct Adapter final : NumpyBridge {
    const nep49_bridge::BridgeApi* api = nullptr;
    std::string versions() const override { return api->versions(); }
    std::string run(const Clause& clause, std::vector<std::string>& notes) override {
      return api->run(clause.id, &notes);
    }
  };

  void* library_ = nullptr;
  nep49::HandlerEntryPoint entry_ = nullptr;
  const BridgeApi* bridge_ = nullptr;
  // The capsules ask_again() returned and release_again() has not given back, by token.
  std::vector<std::pair<int, void*>> capsules_;
  int next_token_ = 1;
  bool called_ = false;                 // MODULE.ATTR is a function
  static thread_local void* attached_;  // the calling thread's attach_thread() token
  bool adopted_ = false;
  Adapter adapter_;
};

thread_local void* LoadedSubject::attached_ = nullptr;

}  // namespace

Nep49SubjectSpec Nep49SubjectSpec::library(std::string_view text) {
  Nep49SubjectSpec spec;
  spec.kind = Kind::library;
  const std::size_t slash = text.rfind('/');
  const std::size_t colon = text.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    spec.location = std::string(text.substr(0, colon));
    spec.symbol = std::string(text.substr(colon + 1));
    if (spec.symbol.empty()) {
      throw std::invalid_argument("--nep49-library " + std::string(text) +
                                  ": no symbol after ':' (PATH or PATH:SYMBOL)");
    }
  } else {
    spec.location = std::string(text);
    spec.symbol = nep49::kHandlerEntryPoint;
  }
  if (spec.location.empty()) {
    throw std::invalid_argument("--nep49-library needs a library path (PATH or PATH:SYMBOL)");
  }
  if (spec.location.find('/') == std::string::npos) spec.location = "./" + spec.location;
  return spec;
}

Nep49SubjectSpec Nep49SubjectSpec::module(std::string_view text) {
  Nep49SubjectSpec spec;
  spec.kind = Kind::module;
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size() ||
      text.find(':', colon + 1) != std::string_view::npos) {
    throw std::invalid_argument(
        "--nep49 needs MODULE:ATTR, e.g. emm_nep49_pinned:handler or "
        "numpy:PyDataMem_DefaultHandler (got '" +
        visible_text(text) + "')");
  }
  spec.location = std::string(text.substr(0, colon));
  spec.symbol = std::string(text.substr(colon + 1));
  if (!python::is_dotted_name(spec.location) || !python::is_dotted_name(spec.symbol)) {
    throw std::invalid_argument(
        "--nep49 needs MODULE:ATTR with dotted Python names (letters, digits, '_' and '.'), "
        "e.g. emm_nep49_pinned:handler (got '" +
        visible_text(text) + "')");
  }
  return spec;
}

std::string Nep49SubjectSpec::text() const { return location + ":" + symbol; }

std::unique_ptr<Nep49Subject> Nep49Subject::load(const Nep49SubjectSpec& spec) {
  auto subject = std::make_unique<LoadedSubject>(spec);
  subject->load();
  return subject;
}

}  // namespace emm::conformance
