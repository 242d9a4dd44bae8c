// emm/python/unraisable_diagnostics.hpp — Python's "Exception ignored in ..." reports as the
// kit's ignored-exception diagnostics.
//
// A Python plugin's finalizer (weakref.finalize, __del__) that raises cannot raise to anyone:
// Python reports it through sys.unraisablehook and carries on, as the kit does for C++
// finalizers through emm::Diagnostics. Routing one to the other lets FIN-6 and LIFE-8 judge
// Python finalizers as they judge C++ ones:
//
//   emm::python::route_unraisable_to_diagnostics();   // GIL held; once per process is enough
//
// The event's `where` is "Python finalizer (<repr of the object>)"; its message is the
// exception's type, message and traceback. Replaces any hook installed before.
#pragma once

namespace emm::python {

// Needs the GIL. Idempotent.
void route_unraisable_to_diagnostics();

}  // namespace emm::python
