// emm/python/import_target.hpp — "MODULE[:ATTR]": naming a Python object to import.
//
// The form NUMBA_CUDA_MEMORY_MANAGER and entry points use: a dotted module name, optionally a
// colon and an attribute (dotted attributes walk nested objects). The attribute defaults to
// what the caller says (libemm_python: "_numba_memory_manager"):
//
//   ImportTarget target = ImportTarget::parse("rmm.allocators.numba", "_numba_memory_manager");
//   pybind11::object cls = import_target(target);  // GIL held; throws PythonImportError
//
// Each way an import can fail is its own PythonImportError::Reason with a message that says
// what to do: the module is not on the interpreter's path, importing it raised (the traceback
// is shown), or it has no such attribute.
//
// ImportTarget is a plain value. import_target() needs the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "emm/python/python_error.hpp"

namespace emm::python {

struct ImportTarget {
  std::string module;     // "package.module"
  std::string attribute;  // "Name" or "outer.Inner"

  // Throws emm::InvalidArgumentError when `text` is not MODULE[:ATTR] with dotted Python
  // identifiers. An absent ATTR is `default_attribute`.
  static ImportTarget parse(std::string_view text, std::string_view default_attribute);
  // "module:attribute"
  std::string str() const;
};

class PythonImportError : public PythonError {
 public:
  enum class Reason {
    module_not_found,   // ModuleNotFoundError for the module itself or a parent package
    import_raised,      // the module was found; running it raised (any exception)
    attribute_missing,  // imported, but the attribute is not there
  };
  PythonImportError(Reason reason, const ImportTarget& target, std::string explanation,
                    const PythonError& cause);
  Reason reason() const noexcept { return reason_; }
  const ImportTarget& target() const noexcept { return target_; }

 private:
  Reason reason_;
  ImportTarget target_;
};

// Imports target.module and returns target.attribute from it. Needs the GIL.
pybind11::object import_target(const ImportTarget& target);

}  // namespace emm::python
