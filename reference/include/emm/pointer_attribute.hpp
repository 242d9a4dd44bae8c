// emm/pointer_attribute.hpp — the pointer attributes emm::Driver::pointer_get_attribute answers,
// and the C type cuPointerGetAttribute writes for each.
//
// cuPointerGetAttribute writes a different C type for each attribute (cuda.h documents them);
// Driver::pointer_get_attribute (driver_calls.hpp) returns the value widened to std::uint64_t:
//
//   attribute                         C type        value
//   CU_POINTER_ATTRIBUTE_MEMORY_TYPE  unsigned int  CU_MEMORYTYPE_DEVICE (device, pool, managed and
//                                                   IPC-mapped memory) or CU_MEMORYTYPE_HOST
//                                                   (cuMemHostAlloc and registered memory)
//   .._DEVICE_POINTER                 CUdeviceptr   the address kernels of the current context use
//                                                   (needs a current context)
//   .._HOST_POINTER                   void*         the address the host uses (none for device
//                                                   memory: CUDA_ERROR_INVALID_VALUE)
//   .._IS_MANAGED                     boolean       1 for cuMemAllocManaged memory, else 0
//   .._DEVICE_ORDINAL                 int           the device it was allocated on, or (host
//                                                   memory) the device current when it was
//                                                   allocated or registered
//   .._RANGE_START_ADDR               CUdeviceptr   the start of the allocation holding the pointer
//   .._RANGE_SIZE                     size_t        that allocation's size
//   .._MAPPED                         boolean       1: the pointer lies in mapped memory
//
//   const std::uint64_t type = driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
//   if (type == CU_MEMORYTYPE_HOST) { ... }
//
// An address that CUDA did not allocate, map or register in this process (pageable host memory,
// freed memory) is CUDA_ERROR_INVALID_VALUE. Any attribute not in the table throws
// InvalidArgumentError before the driver is asked: the kit would not know what C type it gets.
//
// Constants and functions only: no state; safe from any thread.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "emm/cuda_api.hpp"
#include "emm/errors.hpp"

namespace emm {

// The C type cuPointerGetAttribute writes for an attribute.
enum class PointerAttributeType {
  unsigned_int,  // unsigned int (a CUmemorytype)
  signed_int,    // int
  boolean,       // "a boolean": CudaDriver reads any non-zero byte as 1, whatever its width
  address,       // CUdeviceptr or void*: 64 bits
  size,          // size_t
};

struct PointerAttribute {
  CUpointer_attribute attribute;
  std::string_view name;
  PointerAttributeType type;
};

inline constexpr std::array<PointerAttribute, 8> kPointerAttributes = {{
    {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "CU_POINTER_ATTRIBUTE_MEMORY_TYPE",
     PointerAttributeType::unsigned_int},
    {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "CU_POINTER_ATTRIBUTE_DEVICE_POINTER",
     PointerAttributeType::address},
    {CU_POINTER_ATTRIBUTE_HOST_POINTER, "CU_POINTER_ATTRIBUTE_HOST_POINTER",
     PointerAttributeType::address},
    {CU_POINTER_ATTRIBUTE_IS_MANAGED, "CU_POINTER_ATTRIBUTE_IS_MANAGED",
     PointerAttributeType::boolean},
    {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL",
     PointerAttributeType::signed_int},
    {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR",
     PointerAttributeType::address},
    {CU_POINTER_ATTRIBUTE_RANGE_SIZE, "CU_POINTER_ATTRIBUTE_RANGE_SIZE",
     PointerAttributeType::size},
    {CU_POINTER_ATTRIBUTE_MAPPED, "CU_POINTER_ATTRIBUTE_MAPPED", PointerAttributeType::boolean},
}};

// The table's entry for `attribute`; throws InvalidArgumentError naming the supported attributes
// when it has none. `caller` names the driver in the message ("CudaDriver", "FakeDriver").
inline const PointerAttribute& supported_pointer_attribute(CUpointer_attribute attribute,
                                                           std::string_view caller) {
  for (const PointerAttribute& entry : kPointerAttributes) {
    if (entry.attribute == attribute) return entry;
  }
  std::string supported;
  for (const PointerAttribute& entry : kPointerAttributes) {
    if (!supported.empty()) supported += ", ";
    supported += entry.name;
  }
  throw InvalidArgumentError(std::string(caller) + "::pointer_get_attribute: attribute " +
                             std::to_string(static_cast<int>(attribute)) +
                             " is not one the kit reads; ask for one of " + supported);
}

}  // namespace emm
