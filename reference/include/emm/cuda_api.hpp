// emm/cuda_api.hpp — the CUDA driver API's *types*, and nothing else.
//
// The kit includes the CUDA Toolkit's <cuda.h> only for its type and enum definitions
// (CUresult, CUdeviceptr, CUipcMemHandle, ...). No kit binary links libcuda: the real driver
// is loaded at run time by emm::CudaDriver (cuda_driver.hpp), so every binary starts on a
// machine without a GPU.
#pragma once

#include <cuda.h>

#include <string_view>

namespace emm {

// "CUDA_ERROR_OUT_OF_MEMORY" for CUDA_ERROR_OUT_OF_MEMORY; "CUresult(<n>)" when unknown.
// Works without a driver (the table is the kit's own).
std::string_view cuda_result_name(CUresult result) noexcept;

}  // namespace emm
