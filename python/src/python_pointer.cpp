#include "emm/python/python_pointer.hpp"

#include "emm/python/gil.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

// An own() that holds the Python pointer's own() too, so that Python's refct counts it.
class PythonOwnedPointer final : public OwnedPointer {
 public:
  PythonOwnedPointer(std::shared_ptr<MemoryPointer> memory, std::shared_ptr<ObjectRef> owned)
      : OwnedPointer(std::move(memory)), owned_(std::move(owned)) {}

 private:
  std::shared_ptr<ObjectRef> owned_;
};

}  // namespace

Finalizer release_on_finalize(std::shared_ptr<ObjectRef> object) {
  return [object = std::move(object)] { object->release(); };
}

PythonMemoryPointer::PythonMemoryPointer(Context* context, CUdeviceptr pointer, std::size_t size,
                                         std::shared_ptr<ObjectRef> object)
    : MemoryPointer(context, pointer, size, nullptr, release_on_finalize(object)),
      object_(std::move(object)) {}

long PythonMemoryPointer::refct() const noexcept {
  if (object_->released()) return MemoryPointer::refct();
  Gil gil;
  try {
    return py::int_(object_->get().attr("refct")).cast<long>();
  } catch (...) {  // no refct, or not an int: this is noexcept, so the C++ count stands in
    return MemoryPointer::refct();
  }
}

std::shared_ptr<OwnedPointer> PythonMemoryPointer::own() {
  std::shared_ptr<ObjectRef> owned;
  if (!object_->released()) {
    Gil gil;
    try {
      py::object object = object_->get();
      if (py::hasattr(object, "own")) owned = std::make_shared<ObjectRef>(object.attr("own")());
    } catch (py::error_already_set&) {
      // No Python own(): the C++ reference alone keeps the pointer.
    }
  }
  if (weak_from_this().expired()) return MemoryPointer::own();  // throws the make_shared hint
  return std::make_shared<PythonOwnedPointer>(shared_from_this(), std::move(owned));
}

}  // namespace emm::python
