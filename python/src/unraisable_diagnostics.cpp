#include "emm/python/unraisable_diagnostics.hpp"

#include <pybind11/pybind11.h>

#include <string>

#include "emm/diagnostics.hpp"
#include "emm/python/python_error.hpp"

namespace emm::python {
namespace py = pybind11;

void route_unraisable_to_diagnostics() {
  py::module_::import("sys").attr("unraisablehook") = py::cpp_function([](py::handle report) {
    std::string where = "Python finalizer";
    try {
      const py::object object = report.attr("object");
      if (!object.is_none()) where += " (" + py::repr(object).cast<std::string>() + ")";
    } catch (py::error_already_set&) {
      // The object's repr raised too: the location stays generic.
    }
    const py::object exception = report.attr("exc_value");
    Diagnostics::ignored_exception(
        where, exception.is_none() ? "an exception was ignored"
                                   : make_python_error(exception, "a Python finalizer").what());
  });
}

}  // namespace emm::python
