#include "emm/python/object_ref.hpp"

#include "emm/python/gil.hpp"

namespace emm::python {

pybind11::object ObjectRef::get() const {
  PyObject* object = object_.load();
  if (object == nullptr) return pybind11::none();
  return pybind11::reinterpret_borrow<pybind11::object>(object);
}

void ObjectRef::release() noexcept {
  PyObject* object = object_.exchange(nullptr);
  if (object == nullptr || Py_IsInitialized() == 0) return;
  Gil gil;
  Py_DECREF(object);
}

}  // namespace emm::python
