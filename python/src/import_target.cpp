#include "emm/python/import_target.hpp"

#include <utility>

#include "emm/python/dotted_name.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

// True when `missing` (ModuleNotFoundError.name) is the target module or one of its parents:
// the module is absent. A ModuleNotFoundError for anything else came from inside the module.
bool names_target(const std::string& missing, const std::string& module) {
  return missing == module || module.starts_with(missing + ".");
}

std::string search_path() {
  try {
    return py::repr(py::module_::import("sys").attr("path")).cast<std::string>();
  } catch (py::error_already_set&) {
    return "(sys.path unreadable)";
  }
}

}  // namespace

ImportTarget ImportTarget::parse(std::string_view text, std::string_view default_attribute) {
  const std::size_t colon = text.find(':');
  ImportTarget target;
  target.module = std::string(text.substr(0, colon));
  target.attribute = colon == std::string_view::npos ? std::string(default_attribute)
                                                     : std::string(text.substr(colon + 1));
  if (!is_dotted_name(target.module) || !is_dotted_name(target.attribute)) {
    throw InvalidArgumentError("'" + std::string(text) +
                               "' is not MODULE[:ATTR] (a dotted Python module name, then "
                               "optionally a colon and an attribute name), e.g. "
                               "rmm.allocators.numba:RMMNumbaManager");
  }
  return target;
}

std::string ImportTarget::str() const { return module + ":" + attribute; }

PythonImportError::PythonImportError(Reason reason, const ImportTarget& target,
                                     std::string explanation, const PythonError& cause)
    : PythonError(cause.traceback().empty() ? explanation : explanation + "\n" + cause.traceback(),
                  cause),
      reason_(reason),
      target_(target) {}

py::object import_target(const ImportTarget& target) {
  py::object module;
  try {
    module = py::module_::import(target.module.c_str());
  } catch (py::error_already_set& error) {
    const PythonError cause = make_python_error(error, "importing " + target.module);
    if (error.matches(PyExc_ModuleNotFoundError)) {
      const py::object missing = py::getattr(error.value(), "name", py::none());
      if (!missing.is_none() && names_target(py::str(missing).cast<std::string>(), target.module)) {
        throw PythonImportError(PythonImportError::Reason::module_not_found, target,
                                "cannot import " + target.module + ": " + cause.message() +
                                    " on this interpreter's path (" + search_path() +
                                    "); install it there or add its directory to PYTHONPATH",
                                PythonError(cause.doing(), cause.type_name(), cause.message(), ""));
      }
    }
    throw PythonImportError(PythonImportError::Reason::import_raised, target,
                            "importing " + target.module + " raised " + cause.type_name() +
                                (cause.message().empty() ? "" : ": " + cause.message()) +
                                "; fix the module (its traceback follows)",
                            cause);
  }
  py::object object = module;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = target.attribute.find('.', start);
    const std::string part = target.attribute.substr(start, dot - start);
    try {
      object = object.attr(part.c_str());
    } catch (py::error_already_set& error) {
      const PythonError cause = make_python_error(error, "reading " + target.str());
      std::string file = "a module without a file";
      if (py::hasattr(module, "__file__") && !module.attr("__file__").is_none()) {
        file = py::str(module.attr("__file__")).cast<std::string>();
      }
      const bool missing = error.matches(PyExc_AttributeError);
      throw PythonImportError(
          missing ? PythonImportError::Reason::attribute_missing
                  : PythonImportError::Reason::import_raised,
          target,
          missing ? "module " + target.module + " (" + file + ") has no attribute '" +
                        target.attribute + "'; name one it defines as " + target.module + ":ATTR"
                  : "reading " + target.str() + " raised " + cause.type_name() + ": " +
                        cause.message() + "; fix the module (its traceback follows)",
          missing ? PythonError(cause.doing(), cause.type_name(), cause.message(), "") : cause);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return object;
}

}  // namespace emm::python
