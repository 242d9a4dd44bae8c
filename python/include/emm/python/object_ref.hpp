// emm/python/object_ref.hpp — a strong reference to a Python object that C++ may drop from any
// thread, with or without the GIL.
//
// C++ objects that wrap Python objects (the adapter's pointers, guards, capsules) outlive the
// call that made them and are released wherever their last shared_ptr goes — often a thread
// that does not hold the GIL. ObjectRef takes the GIL to drop its reference, so that the Python
// object's own finalizers run then, under the GIL, as Python would run them:
//
//   auto ref = std::make_shared<ObjectRef>(pybind11::object(result));   // GIL held here
//   ...
//   ref->release();        // any thread: takes the GIL, drops the reference (idempotent)
//
// get() and borrow() need the GIL. release() and the destructor take it themselves.
// Thread-safety: release() may race with itself (exactly one drops the reference); get() must
// not race with release().
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>

namespace emm::python {

class ObjectRef {
 public:
  // Takes over `object`'s reference; needs the GIL.
  explicit ObjectRef(pybind11::object object) noexcept : object_(object.release().ptr()) {}
  ~ObjectRef() { release(); }
  ObjectRef(const ObjectRef&) = delete;
  ObjectRef& operator=(const ObjectRef&) = delete;

  // A new reference (GIL held); None once released.
  pybind11::object get() const;
  // Drops the reference under the GIL; the object's finalizers may run now.
  void release() noexcept;
  bool released() const noexcept { return object_.load() == nullptr; }

 private:
  std::atomic<PyObject*> object_;
};

}  // namespace emm::python
