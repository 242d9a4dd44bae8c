#include "emm/python/python_plugin.hpp"

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
        "the HostOnly clauses read the C++ base class's queue; use some of: " +
        known);
  }
  capabilities.*field->flag = true;
}

Capabilities base_capabilities() {
  Capabilities capabilities;
  capabilities.runs_on_fake_driver = false;
  return capabilities;
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
    plugin.capabilities = base_capabilities();
    plugin.capabilities_source = "nothing declared";
  }
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
