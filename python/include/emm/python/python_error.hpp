// emm/python/python_error.hpp — a Python exception, carried into C++ as a typed emm error.
//
// Whatever Python raises while the kit calls it is rendered once, under the GIL, into a
// PythonError that holds the exception's type name, its message and its formatted traceback,
// so the C++ side (reports, certificates, child processes) never touches Python objects again:
//
//   try {
//     emm::python::Gil gil;
//     instance.attr("reset")();
//   } catch (pybind11::error_already_set& error) {
//     throw emm::python::make_python_error(error, "calling reset()");
//   }
//   // what(): "calling reset() raised ValueError: bad state
//   //          Traceback (most recent call last):
//   //            File "plugin.py", line 12, in reset ..."
//
// make_python_error needs the GIL (it formats the traceback with Python's traceback module);
// the PythonError it returns is a plain value, safe to copy and throw in any thread.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "emm/errors.hpp"

namespace emm::python {

// Python raised while the kit called it.
class PythonError : public emm::Error {
 public:
  // `doing` says what the kit was doing ("importing mymodule", "calling memalloc(64)").
  PythonError(std::string doing, std::string type_name, std::string message, std::string traceback);

  const std::string& doing() const noexcept { return doing_; }
  // The exception's qualified type name: "ValueError", "numba.cuda.cudadrv.driver.CudaAPIError".
  const std::string& type_name() const noexcept { return type_name_; }
  // str(exception); may be empty.
  const std::string& message() const noexcept { return message_; }
  // "Traceback (most recent call last): ..." as Python prints it, chained causes included;
  // empty when the exception carried no traceback.
  const std::string& traceback() const noexcept { return traceback_; }

 protected:
  // A subclass's own wording in front of `cause`'s traceback; the fields are `cause`'s.
  PythonError(const std::string& what, const PythonError& cause);

 private:
  std::string doing_;
  std::string type_name_;
  std::string message_;
  std::string traceback_;
};

// Renders `error` (the exception Python raised) while the GIL is held. Never throws a Python
// error of its own: a traceback that cannot be formatted is replaced by a note saying so.
PythonError make_python_error(const pybind11::error_already_set& error, std::string_view doing);

// The same for an exception object in hand (an exception a plugin returned, or one kept from an
// earlier call). Needs the GIL.
PythonError make_python_error(pybind11::handle exception, std::string_view doing);

// The qualified name of a Python type: "ValueError" for builtins, "package.module.Name" else.
// Needs the GIL.
std::string qualified_type_name(pybind11::handle type);

}  // namespace emm::python
