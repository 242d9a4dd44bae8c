// emm/python/python_pointer.hpp — a numba MemoryPointer (or MappedMemory) seen from C++.
//
// The adapter hands the kit a PythonMemoryPointer for every pointer a Python plugin returns.
// It holds the Python object: while any C++ reference (copies, own(), views) lives, so does the
// Python object; when the last one goes, the Python reference is dropped under the GIL and the
// plugin's own finalizer runs as Python runs it. refct() reads the Python object's refct, so a
// plugin that hands out a bare AutoFreePointer (refct 0) is seen as one (ALLOC-5); own() takes
// a Python own() beside the C++ one.
//
//   auto memory = std::make_shared<PythonMemoryPointer>(context, dptr, size, std::move(ref));
//   memory->python_object();   // the ObjectRef, for calls that need the Python pointer
//
// Thread-safety: as MemoryPointer; refct() and own() take the GIL.
#pragma once

#include <memory>

#include "emm/memory_pointer.hpp"
#include "emm/python/object_ref.hpp"

namespace emm::python {

class PythonMemoryPointer : public MemoryPointer {
 public:
  PythonMemoryPointer(Context* context, CUdeviceptr pointer, std::size_t size,
                      std::shared_ptr<ObjectRef> object);

  const std::shared_ptr<ObjectRef>& python_object() const noexcept { return object_; }
  // The Python pointer's refct (NBEP 7); the C++ count when it cannot be read.
  long refct() const noexcept override;
  std::shared_ptr<OwnedPointer> own() override;

 private:
  std::shared_ptr<ObjectRef> object_;
};

// A finalizer that drops `object` under the GIL: the C++ pointer types' finalizer for memory a
// Python object owns.
Finalizer release_on_finalize(std::shared_ptr<ObjectRef> object);

}  // namespace emm::python
