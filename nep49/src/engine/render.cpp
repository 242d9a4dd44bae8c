#include "nep49/src/engine/render.hpp"

#include <sstream>

#include "engine/render.hpp"
#include "nep49/src/engine/contention.hpp"

namespace emm::conformance::nep49_engine {
namespace {

bool is_module(const Nep49Run& run) {
  return run.subject().spec().kind == Nep49SubjectSpec::Kind::module;
}

// NumPy's own default handler, which is no Python attribute (nep49_subject.hpp).
bool numpy_default(const Nep49SubjectSpec& spec) {
  return spec.location == "numpy" && spec.symbol == "PyDataMem_DefaultHandler";
}

std::string replay_command(const Nep49Run& run, const Reproducer& reproducer) {
  const Nep49SubjectSpec& spec = run.subject().spec();
  return str("emm-certify ", is_module(run) ? "--nep49 " : "--nep49-library ", spec.text(),
             " --backend ", run.backend().name(), " --only ", run.id(), " --seed ", reproducer.seed,
             " --budget ", reproducer.budget);
}

constexpr const char* kCppHelpers = R"(namespace {
// The certifier's pattern: byte i of block s (its number).
unsigned char pattern(std::size_t i, unsigned s) {
  const std::size_t k = (i + 4099u * s) % 65536u;
  return static_cast<unsigned char>(k * 131u + (k >> 8) * 7u + 7u);
}
[[maybe_unused]] void fill(void* p, std::size_t from, std::size_t to, unsigned s) {
  for (std::size_t i = from; p != nullptr && i < to; ++i) {
    static_cast<unsigned char*>(p)[i] = pattern(i, s);
  }
}
// The first byte of [from, to) that does not hold the pattern, or `to`.
[[maybe_unused]] std::size_t first_difference(const void* p, std::size_t from, std::size_t to, unsigned s) {
  for (std::size_t i = from; i < to; ++i) {
    if (static_cast<const unsigned char*>(p)[i] != pattern(i, s)) return i;
  }
  return to;
}
[[maybe_unused]] std::size_t first_nonzero(const void* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<const unsigned char*>(p)[i] != 0) return i;
  }
  return n;
}
[[maybe_unused]] bool overlap(const void* a, std::size_t n, const void* b, std::size_t m) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + m && y < x + n;
}
)";

constexpr const char* kPythonHelpers = R"(import ctypes

_GIL, _NOGIL = ctypes.PYFUNCTYPE, ctypes.CFUNCTYPE  # NumPy calls realloc without the GIL
_vp, _sz = ctypes.c_void_p, ctypes.c_size_t


class Allocator(ctypes.Structure):
    _fields_ = [("ctx", _vp), ("malloc", _GIL(_vp, _vp, _sz)),
                ("calloc", _GIL(_vp, _vp, _sz, _sz)), ("realloc", _NOGIL(_vp, _vp, _vp, _sz)),
                ("free", _GIL(None, _vp, _vp, _sz))]


class Handler(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8),
                ("allocator", Allocator)]


_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype, _api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = _vp
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def handler_of(capsule_or_address):
    """The allocator of a "mem_handler" capsule (or of a PyDataMem_Handler's address)."""
    address = capsule_or_address
    if not isinstance(address, int):
        address = _api.PyCapsule_GetPointer(address, _api.PyCapsule_GetName(address))
    return Handler.from_address(address).allocator


def pattern(i, s):
    k = (i + 4099 * s) % 65536
    return (k * 131 + (k >> 8) * 7 + 7) & 0xFF


def fill(p, start, stop, s):
    if p:
        ctypes.memmove(p + start, bytes(pattern(i, s) for i in range(start, stop)), stop - start)


def first_difference(p, start, stop, s):
    data = ctypes.string_at(p + start, stop - start)
    return next((start + j for j, b in enumerate(data) if b != pattern(start + j, s)), stop)


def overlap(a, n, b, m):
    return a < b + m and b < a + n

)";

}  // namespace

std::string render_gtest(const Nep49Run& run, const Trace& trace, std::string_view failure,
                         const Reproducer& reproducer) {
  const Nep49SubjectSpec& spec = run.subject().spec();
  const bool module = is_module(run);
  std::ostringstream out;
  out << "// " << run.id() << ": the shortest failing sequence found (" << trace.calls.size()
      << " calls). `" << replay_command(run, reproducer) << "` replays it.\n"
      << "// Needs <emm/nep49/handler.hpp>, <gtest/gtest.h>, <cstddef>, <cstdint>"
      << (trace.contention
              ? ", <atomic>, <mutex>, <optional>, <string>, <thread>, <tuple>, <vector>"
              : "")
      << (module ? ", <Python.h> (CPython started, NumPy imported)" : "; link the handler library")
      << ".\n";
  if (!module) out << "extern \"C\" emm::nep49::Handler* " << spec.symbol << "();\n";
  out << kCppHelpers;
  if (module) {
    out << "[[maybe_unused]] emm::nep49::Allocator* allocator_of(PyObject* capsule) {\n"
        << "  return &static_cast<emm::nep49::Handler*>(\n"
        << "              PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule)))->allocator;\n"
        << "}\n";
  }
  if (trace.contention) out << contention_cpp_helper();
  out << "}  // namespace\n\n"
      << "TEST(Nep49Reproducer, " << run.clause().key() << ") {\n";
  if (module && numpy_default(spec)) {
    out << "  // <numpy/arrayobject.h>, after import_array().\n"
        << "  PyObject* handler_capsule = PyDataMem_DefaultHandler;\n"
        << "  emm::nep49::Allocator* handler = allocator_of(handler_capsule);\n";
  } else if (module) {
    const std::string read = str("PyObject_GetAttrString(PyImport_ImportModule(\"", spec.location,
                                 "\"), \"", spec.symbol, "\")");
    const bool called = run.subject().factory_call().ends_with("()");
    out << "  PyObject* handler_capsule = "
        << (called ? str("PyObject_CallNoArgs(", read, ")") : read) << ";\n"
        << "  emm::nep49::Allocator* handler = allocator_of(handler_capsule);\n";
  } else {
    out << "  // NumPy calls handler->malloc(handler->ctx, n), and so on.\n"
        << "  emm::nep49::Allocator* handler = &" << spec.symbol << "()->allocator;\n";
  }
  out << "  [[maybe_unused]] void* ctx = handler->ctx;\n";
  for (const Call& call : trace.calls) {
    out << engine::indent_lines(call.cpp, "  ");
    if (call.then_done && !call.cpp_then.empty()) out << engine::indent_lines(call.cpp_then, "  ");
  }
  out << engine::indent_lines(str("The call above fails the clause: ", failure), "  // ");
  if (!trace.assertion_cpp.empty()) out << engine::indent_lines(trace.assertion_cpp, "  ");
  out << "}\n";
  return out.str();
}

std::string render_python(const Nep49Run& run, const Trace& trace, std::string_view failure,
                          const Reproducer& reproducer) {
  const Nep49SubjectSpec& spec = run.subject().spec();
  const bool module = is_module(run);
  std::ostringstream out;
  out << "# " << run.id() << ": the shortest failing sequence found (" << trace.calls.size()
      << " calls).\n# `" << replay_command(run, reproducer) << "` replays it.\n"
      << "# The handler's functions are called directly, as NumPy calls them (the NumPy operation "
         "that makes\n# each call is beside it).\n"
      << kPythonHelpers;
  if (trace.contention) out << contention_python_helper() << "\n";
  if (module && numpy_default(spec)) {
    out << "import numpy as np\n\n"
        << "# NumPy's default handler is no Python attribute: slot 306 of NumPy's C API table "
           "holds\n"
        << "# the address of PyDataMem_DefaultHandler.\n"
        << "_table = ctypes.cast(_api.PyCapsule_GetPointer(np.core._multiarray_umath._ARRAY_API, "
           "None),\n"
        << "                     ctypes.POINTER(ctypes.c_void_p))\n"
        << "handler_capsule = ctypes.cast(_table[306], "
           "ctypes.POINTER(ctypes.py_object)).contents.value\n"
        << "handler = handler_of(handler_capsule)\n";
  } else if (module) {
    out << "import numpy as np  # noqa: F401 (NumPy first, as a handler module expects)\n"
        << "import " << spec.location << "\n\n"
        << "handler_capsule = " << spec.location << "." << spec.symbol
        << (run.subject().factory_call().ends_with("()") ? "()" : "") << "\n"
        << "handler = handler_of(handler_capsule)\n";
  } else {
    out << "lib = ctypes.CDLL(\"" << spec.location << "\")\n"
        << "lib." << spec.symbol << ".restype = ctypes.c_void_p\n"
        << "handler = handler_of(lib." << spec.symbol << "())\n";
  }
  out << "ctx = handler.ctx\n";
  for (const Call& call : trace.calls) {
    out << call.python << "\n";
    if (call.then_done && !call.python_then.empty()) out << call.python_then << "\n";
  }
  out << engine::indent_lines(str("The call above fails the clause: ", failure), "# ");
  if (!trace.assertion_python.empty()) out << trace.assertion_python << "\n";
  return out.str();
}

}  // namespace emm::conformance::nep49_engine
