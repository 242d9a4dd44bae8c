#include "emm/python/python_error.hpp"

#include <utility>

namespace emm::python {
namespace py = pybind11;
namespace {

std::string rendered(std::string_view doing, const std::string& type_name,
                     const std::string& message, const std::string& traceback) {
  std::string text = std::string(doing) + " raised " + type_name;
  if (!message.empty()) text += ": " + message;
  if (!traceback.empty()) text += "\n" + traceback;
  return text;
}

// str(value), or a note when str() itself raises (a plugin's exception may be that broken).
std::string safe_str(py::handle value) {
  try {
    return py::str(value).cast<std::string>();
  } catch (py::error_already_set&) {
    return "<str() of the exception raised too>";
  }
}

std::string format_traceback(py::handle type, py::handle value, py::handle trace) {
  if (trace.is_none() || !trace) return {};
  try {
    py::object lines =
        py::module_::import("traceback").attr("format_exception")(type, value, trace);
    std::string text;
    for (py::handle line : lines) text += line.cast<std::string>();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  } catch (py::error_already_set&) {
    return "(the traceback could not be formatted)";
  }
}

}  // namespace

PythonError::PythonError(std::string doing, std::string type_name, std::string message,
                         std::string traceback)
    : Error(rendered(doing, type_name, message, traceback)),
      doing_(std::move(doing)),
      type_name_(std::move(type_name)),
      message_(std::move(message)),
      traceback_(std::move(traceback)) {}

PythonError::PythonError(const std::string& what, const PythonError& cause)
    : Error(what),
      doing_(cause.doing_),
      type_name_(cause.type_name_),
      message_(cause.message_),
      traceback_(cause.traceback_) {}

std::string qualified_type_name(py::handle type) {
  try {
    const std::string name = py::getattr(type, "__qualname__").cast<std::string>();
    const std::string module = py::getattr(type, "__module__").cast<std::string>();
    return module == "builtins" ? name : module + "." + name;
  } catch (py::error_already_set&) {
    return "<an exception type without a name>";
  }
}

PythonError make_python_error(const py::error_already_set& error, std::string_view doing) {
  const py::handle type = error.type();
  const py::handle value = error.value();
  return PythonError(std::string(doing), qualified_type_name(type), safe_str(value),
                     format_traceback(type, value, error.trace()));
}

PythonError make_python_error(py::handle exception, std::string_view doing) {
  const py::handle type = py::type::handle_of(exception);
  const py::object trace = py::getattr(exception, "__traceback__", py::none());
  return PythonError(std::string(doing), qualified_type_name(type), safe_str(exception),
                     format_traceback(type, exception, trace));
}

}  // namespace emm::python
