// emm/nep49/handler.hpp — a NumPy data-memory handler (NEP 49) as the kit sees it, without
// NumPy's headers: the PyDataMem_Handler layout, and the two symbols a handler library exports
// for `emm-certify --nep49-library`.
//
//   static emm::nep49::Handler handler{"my_allocator", 1,
//                                      {nullptr, my_malloc, my_calloc, my_realloc, my_free}};
//   extern "C" emm::nep49::Handler* emm_nep49_handler() { return &handler; }
//
// The layout is NumPy's since 1.22 (ndarraytypes.h: PyDataMemAllocator, PyDataMem_Handler);
// the NumPy bridge static_asserts that the two agree. A library may also export
// emm_nep49_bind_driver: a handler that allocates through EMM (examples/nep49_pinned) then runs
// on each backend's driver — the fake's in CI — instead of the process's real CUDA driver.
//
// Plain data; the handler and its ctx must outlive every array that uses them (NEP 49
// "Related Work": in practice the handler is immortal). Thread-safety is the handler's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace emm {
class Driver;
}

namespace emm::nep49 {

struct Allocator {
  void* ctx;
  void* (*malloc)(void* ctx, std::size_t size);
  void* (*calloc)(void* ctx, std::size_t nelem, std::size_t elsize);
  void* (*realloc)(void* ctx, void* ptr, std::size_t new_size);
  void (*free)(void* ctx, void* ptr, std::size_t size);
};

struct Handler {
  char name[127];
  std::uint8_t version;  // 1
  Allocator allocator;
};

// NumPy passes handlers around as a PyCapsule of exactly this name (NEP49-4).
inline constexpr const char* kCapsuleName = "mem_handler";
// The function a --nep49-library exports (PATH:SYMBOL names another).
inline constexpr const char* kHandlerEntryPoint = "emm_nep49_handler";
using HandlerEntryPoint = Handler* (*)();
// Optional: called before each clause with the backend's driver, and with nullptr after it.
inline constexpr const char* kBindDriverHook = "emm_nep49_bind_driver";
using BindDriverHook = void (*)(const std::shared_ptr<Driver>* driver);

}  // namespace emm::nep49
