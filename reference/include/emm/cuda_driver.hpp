// emm/cuda_driver.hpp — CudaDriver: the real CUDA driver, loaded at run time.
//
// load() dlopens libcuda.so.1, finds cuGetProcAddress, resolves every entry point the Driver
// interface needs through it, and calls cuInit(0). Nothing links libcuda at build time, so a
// kit binary starts on any machine and says why the GPU backend cannot run:
//
//   std::string why = emm::CudaDriver::unavailable_reason();   // "" when usable
//   auto driver = emm::CudaDriver::load();   // or throws DriverUnavailableError
//
// Thread-safety: as the CUDA driver (safe from many threads).
#pragma once

#include "emm/driver.hpp"

#include <memory>
#include <string>

namespace emm {

class CudaDriver : public Driver {
 public:
  // Throws DriverUnavailableError: no libcuda.so.1, cuInit failure, or no device.
  static std::shared_ptr<CudaDriver> load(const char* library = "libcuda.so.1");
  // Why load() would fail, or "" if it would succeed (loads and initialises the driver).
  static std::string unavailable_reason(const char* library = "libcuda.so.1");

  ~CudaDriver() override;

  std::string backend_name() const override { return "cuda"; }
  int driver_get_version() override;
  int device_get_count() override;
  int device_get_attribute(CUdevice_attribute attribute, int device) override;
  std::string device_get_name(int device) override;
  bool device_can_access_peer(int device, int peer) override;
  CUcontext primary_ctx_retain(int device) override;
  void primary_ctx_release(int device) override;
  void primary_ctx_reset(int device) override;
  CUcontext ctx_get_current() override;
  void ctx_set_current(CUcontext context) override;
  int ctx_get_device() override;
  void ctx_synchronize() override;
  CUdeviceptr mem_alloc(std::size_t bytesize) override;
  void mem_free(CUdeviceptr pointer) override;
  CUdeviceptr mem_alloc_managed(std::size_t bytesize, unsigned flags) override;
  MemoryInfo mem_get_info() override;
  AddressRange mem_get_address_range(CUdeviceptr pointer) override;
  void* mem_host_alloc(std::size_t bytesize, unsigned flags) override;
  void mem_free_host(void* pointer) override;
  void mem_host_register(void* pointer, std::size_t bytesize, unsigned flags) override;
  void mem_host_unregister(void* pointer) override;
  CUdeviceptr mem_host_get_device_pointer(void* pointer, unsigned flags) override;
  CUipcMemHandle ipc_get_mem_handle(CUdeviceptr pointer) override;
  CUdeviceptr ipc_open_mem_handle(const CUipcMemHandle& handle, unsigned flags) override;
  void ipc_close_mem_handle(CUdeviceptr pointer) override;
  void memcpy_htod(CUdeviceptr dst, const void* src, std::size_t bytes) override;
  void memcpy_dtoh(void* dst, CUdeviceptr src, std::size_t bytes) override;
  void memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) override;
  void memset_d8(CUdeviceptr dst, unsigned char value, std::size_t count) override;
  CUstream stream_create(unsigned flags) override;
  void stream_destroy(CUstream stream) override;
  void stream_synchronize(CUstream stream) override;
  CUevent event_create(unsigned flags) override;
  void event_destroy(CUevent event) override;
  void event_record(CUevent event, CUstream stream) override;
  void event_synchronize(CUevent event) override;
  CUmodule module_load_data(const void* image) override;
  void module_unload(CUmodule module) override;
  CUmemoryPool mem_pool_create(const CUmemPoolProps& props) override;
  void mem_pool_destroy(CUmemoryPool pool) override;
  void mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                              void* value) override;
  void mem_pool_trim_to(CUmemoryPool pool, std::size_t min_bytes_to_keep) override;
  CUdeviceptr mem_alloc_from_pool_async(std::size_t bytesize, CUmemoryPool pool,
                                        CUstream stream) override;
  void mem_free_async(CUdeviceptr pointer, CUstream stream) override;

  struct Api;  // the resolved entry points (cuda_driver.cpp)

 private:
  CudaDriver(void* library, std::unique_ptr<Api> api);
  void* library_;
  std::unique_ptr<Api> api_;
};

}  // namespace emm
