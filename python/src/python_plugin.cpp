#include "emm/python/python_plugin.hpp"

#include <optional>
#include <string>

#include "emm/python/numba_api.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

// runs_on_fake_driver and host_only_derived are facts about the adapter, not declarations.
void add_capability(Capabilities& capabilities, std::string_view name, std::string_view where) {
  const CapabilityField* field = find_capability(name);
  std::string known;
  for (const CapabilityField& each : kCapabilityFields) {
    if (each.name == "runs_on_fake_driver" || each.name == "host_only_derived") continue;
    known += (known.empty() ? "" : ", ") + std::string(each.name);
  }
  if (field == nullptr) {
    throw PythonPluginError(std::string(where) + " names '" + std::string(name) +
                            "', which is not a capability; use some of: " + known);
  }
  if (field->name == "runs_on_fake_driver" || field->name == "host_only_derived") {
    throw PythonPluginError(
        std::string(where) + " names '" + std::string(name) +
        "', which a Python plugin cannot declare: it calls the real driver through numba, and "
        "host_only_derived is read from the class (derived from numba's "
        "HostOnlyCUDAMemoryManager or not); use some of: " +
        known);
  }
  capabilities.*field->flag = true;
}

Capabilities base_capabilities() {
  Capabilities capabilities;
  capabilities.runs_on_fake_driver = false;
  return capabilities;
}

// A function whose body is only `raise NotImplementedError(...)`, read from its bytecode (no
// source needed). numba's BaseCUDAMemoryManager makes get_memory_info and get_ipc_handle
// abstract, so a class without them must still write them: RMM's get_memory_info is such a
// stub, and it says "not provided" as numba's default would.
bool only_raises_not_implemented(py::handle method) {
  py::object function = py::reinterpret_borrow<py::object>(method);
  if (py::hasattr(function, "__func__")) function = function.attr("__func__");
  if (!py::hasattr(function, "__code__")) return false;
  // Bookkeeping the interpreter adds around a call (3.8 to 3.13).
  const auto bookkeeping = [](const std::string& op) {
    return op == "RESUME" || op == "NOP" || op == "CACHE" || op == "EXTENDED_ARG" ||
           op == "PUSH_NULL" || op == "PRECALL" || op == "KW_NAMES" || op == "COPY_FREE_VARS" ||
           op == "MAKE_CELL";
  };
  const auto starts = [](const std::string& op, std::string_view prefix) {
    return op.compare(0, prefix.size(), prefix) == 0;
  };
  bool loaded = false;
  for (const py::handle instruction :
       py::module_::import("dis").attr("get_instructions")(function)) {
    const std::string op = instruction.attr("opname").cast<std::string>();
    if (bookkeeping(op)) continue;
    if (!loaded) {
      const py::object value = instruction.attr("argval");
      loaded =
          starts(op, "LOAD_") &&
          (value.ptr() == PyExc_NotImplementedError ||
           (py::isinstance<py::str>(value) && value.cast<std::string>() == "NotImplementedError"));
      if (!loaded) return false;
    } else if (op == "RAISE_VARARGS") {
      return true;
    } else if (!starts(op, "LOAD_") && !starts(op, "CALL") && !starts(op, "BUILD_") &&
               !starts(op, "FORMAT_") && op != "CONVERT_VALUE") {
      return false;  // the message's arguments may be computed; anything else does work
    }
  }
  return false;
}

// What `name` resolves to on `cls`: numba's abstract method (nullopt: nothing to infer), or the
// class in the MRO that defines it and the raw attribute there.
struct Resolved {
  py::object owner;
  py::object attribute;
};
std::optional<Resolved> resolve(const py::object& cls, const char* name, const NumbaApi& numba) {
  for (const py::handle klass : cls.attr("__mro__")) {
    const py::object namespace_ = klass.attr("__dict__");
    if (!namespace_.contains(name)) continue;
    if (numba.is_abstract_base(klass)) return std::nullopt;
    return Resolved{py::reinterpret_borrow<py::object>(klass), namespace_[name]};
  }
  return std::nullopt;
}

// Spec §8: a class that declares nothing has memory_info and ipc inferred from what it
// overrides; the rest (thread_safe, pooling, no_caching, ...) are promises only the class can
// make. The reasons say why, for the certificate.
struct Inferred {
  Capabilities capabilities;
  std::string reasons;  // "get_memory_info overridden, GetIpcHandleMixin"
};
Inferred infer_capabilities(const py::object& cls, const NumbaApi& numba) {
  Inferred inferred{base_capabilities(), {}};
  const auto add = [&inferred](const std::string& reason) {
    inferred.reasons += (inferred.reasons.empty() ? "" : ", ") + reason;
  };
  const auto infer = [&](const char* name, bool Capabilities::*flag) {
    const std::optional<Resolved> resolved = resolve(cls, name, numba);
    if (!resolved) return;
    if (numba.is_ipc_handle_mixin(resolved->owner)) {
      inferred.capabilities.*flag = true;
      add("GetIpcHandleMixin");
    } else if (only_raises_not_implemented(resolved->attribute)) {
      add(std::string(name) + " raises NotImplementedError");
    } else {
      inferred.capabilities.*flag = true;
      add(std::string(name) + " overridden");
    }
  };
  infer("get_memory_info", &Capabilities::memory_info);
  infer("get_ipc_handle", &Capabilities::ipc);
  if (inferred.reasons.empty()) inferred.reasons = "nothing overridden";
  return inferred;
}

std::string first_paragraph(std::string text) {
  const std::size_t start = text.find_first_not_of(" \n\t");
  if (start == std::string::npos) return {};
  text = text.substr(start);
  text = text.substr(0, text.find("\n\n"));
  std::string line;
  bool space = false;
  for (const char c : text) {
    const bool blank = c == ' ' || c == '\n' || c == '\t';
    if (blank && !space && !line.empty()) line += ' ';
    if (!blank) line += c;
    space = blank;
  }
  return line;
}

}  // namespace

PluginDeclaration PythonPlugin::declaration() const {
  return PluginDeclaration{name.c_str(), capabilities, defer_cleanup_behaviour.c_str()};
}

Capabilities parse_capability_list(std::string_view text) {
  Capabilities capabilities = base_capabilities();
  if (text.empty() || text == "none") return capabilities;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view name = text.substr(start, comma - start);
    if (!name.empty()) add_capability(capabilities, name, "--capabilities");
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return capabilities;
}

PythonPlugin load_python_plugin(std::string_view target_text,
                                const std::optional<std::string>& capabilities_override) {
  PythonPlugin plugin;
  plugin.target = ImportTarget::parse(target_text, kDefaultPluginAttribute);
  const NumbaApi& numba = NumbaApi::get();
  plugin.cls = import_target(plugin.target);
  const std::string shown = plugin.target.str();
  if (!numba.is_manager_class(plugin.cls)) {
    const std::string what =
        PyType_Check(plugin.cls.ptr()) != 0
            ? "the class " + py::repr(plugin.cls).cast<std::string>()
            : "a " + qualified_type_name(py::type::handle_of(plugin.cls)) + " object";
    throw PythonPluginError(shown + " is " + what +
                            ", not a subclass of numba.cuda.cudadrv.driver."
                            "BaseCUDAMemoryManager; name the EMM plugin class (NBEP 7)");
  }
  // REG-1, as Numba's set_memory_manager does it: a throw-away instance with no context.
  py::object probe;
  try {
    probe = plugin.cls(py::arg("context") = py::none());
  } catch (py::error_already_set& error) {
    throw PythonPluginError(
        std::string(make_python_error(error, shown + "(context=None)").what()) +
        "\nNumba builds this instance to read interface_version (REG-2): the constructor must "
        "accept context=None and do no CUDA work");
  }
  py::object version;
  try {
    version = probe.attr("interface_version");
  } catch (py::error_already_set& error) {
    throw PythonPluginError(make_python_error(error, "reading interface_version").what());
  }
  if (!py::isinstance<py::int_>(version) || version.cast<long long>() != 1) {
    const std::string seen = py::isinstance<py::int_>(version)
                                 ? std::to_string(version.cast<long long>())
                                 : "a " + qualified_type_name(py::type::handle_of(version)) + " (" +
                                       py::repr(version).cast<std::string>() + ")";
    throw PythonPluginError("EMM Plugin interface has version " + seen + " - version 1 required (" +
                            shown + ".interface_version must be a property returning the int 1)");
  }
  probe = py::none();

  if (capabilities_override) {
    plugin.capabilities = parse_capability_list(*capabilities_override);
    plugin.capabilities_source = "--capabilities";
  } else if (py::hasattr(plugin.cls, std::string(kCapabilitiesAttribute).c_str())) {
    plugin.capabilities = base_capabilities();
    const std::string where = shown + "." + std::string(kCapabilitiesAttribute);
    py::object declared = plugin.cls.attr(std::string(kCapabilitiesAttribute).c_str());
    if (py::isinstance<py::str>(declared)) {
      throw PythonPluginError(where +
                              " is a str; make it a tuple of names, e.g. (\"ipc\", "
                              "\"memory_info\")");
    }
    try {
      for (py::handle name : declared) {
        add_capability(plugin.capabilities, py::str(name).cast<std::string>(), where);
      }
    } catch (py::error_already_set& error) {
      throw PythonPluginError(make_python_error(error, "reading " + where).what());
    }
    plugin.capabilities_source = "class attribute " + std::string(kCapabilitiesAttribute);
  } else {
    try {
      const Inferred inferred = infer_capabilities(plugin.cls, numba);
      plugin.capabilities = inferred.capabilities;
      plugin.capabilities_source = "inferred: " + inferred.reasons;
    } catch (py::error_already_set& error) {
      throw PythonPluginError(
          std::string(make_python_error(error, "inferring the capabilities of " + shown).what()) +
          "\nDeclare them instead: " + shown + "." + std::string(kCapabilitiesAttribute) +
          " = (\"ipc\", \"memory_info\", ...)");
    }
  }
  // A fact about the class, never a declaration (as for a C++ plugin, from its type): the
  // HostOnly clauses then read numba's allocations table and deallocations queue.
  plugin.capabilities.host_only_derived = numba.is_host_only_class(plugin.cls);
  plugin.name = "python " + shown + " (capabilities: " + plugin.capabilities_source + ")";

  if (py::hasattr(plugin.cls, std::string(kDeferCleanupAttribute).c_str())) {
    plugin.defer_cleanup_behaviour =
        py::str(plugin.cls.attr(std::string(kDeferCleanupAttribute).c_str())).cast<std::string>();
  } else {
    const py::object doc = plugin.cls.attr("defer_cleanup").attr("__doc__");
    if (!doc.is_none()) plugin.defer_cleanup_behaviour = first_paragraph(doc.cast<std::string>());
  }
  return plugin;
}

}  // namespace emm::python
