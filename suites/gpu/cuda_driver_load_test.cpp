// CudaDriver's loader and error translation, on every machine (spec §2.1): a missing library,
// a library that is not a CUDA driver, and a stub driver library (stub_cuda_driver.hpp) that
// checks what CudaDriver asks cuGetProcAddress for and fails on demand.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "gpu_test_support.hpp"
#include "stub_cuda_driver.hpp"

namespace emm {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kFakeBackendAdvice = "Use the fake backend (--backend fake)";

TEST(CudaDriverLoad, MissingLibraryIsDriverUnavailableError) {
  RecordProperty("spec", "2.1");
  EMM_EXPECT_THROW(
      DriverUnavailableError, CudaDriver::load("libdoes-not-exist.so"),
      AllOf(StartsWith("libdoes-not-exist.so could not be loaded ("),
            HasSubstr("could not be loaded"), ContainsRegex("could not be loaded \\(.+\\): "),
            EndsWith("): no NVIDIA driver on this machine. Use the fake backend (--backend fake), "
                     "or install the NVIDIA driver.")));
}

TEST(CudaDriverLoad, UnavailableReasonIsTheLoadMessage) {
  RecordProperty("spec", "2.1");
  auto error = EMM_EXPECT_THROW(DriverUnavailableError, CudaDriver::load("libdoes-not-exist.so"),
                                StartsWith("libdoes-not-exist.so could not be loaded"));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(CudaDriver::unavailable_reason("libdoes-not-exist.so"), error->what());
}

TEST(CudaDriverLoad, LibraryWithoutCuGetProcAddressIsRejected) {
  RecordProperty("spec", "2.1");
  // libm is on every glibc system and exports no CUDA symbol.
  EMM_EXPECT_THROW(
      DriverUnavailableError, CudaDriver::load("libm.so.6"),
      Eq(std::string("libm.so.6 is not a usable CUDA driver: it has no cuGetProcAddress (an "
                     "NVIDIA driver older than CUDA 11.3, or not the CUDA driver at all). ") +
         kFakeBackendAdvice + ", or install a current NVIDIA driver."));
}

// --- the process's driver (CudaDriver::probe) ---------------------------------------------------

TEST(CudaDriverProbe, OneResultPerProcessFromEveryThread) {
  RecordProperty("spec", "2.1");
  std::vector<const CudaDriverProbe*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &CudaDriver::probe(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const CudaDriverProbe* probe : seen) EXPECT_EQ(probe, &CudaDriver::probe());
}

TEST(CudaDriverProbe, HoldsTheDriverOrTheReasonLoadGives) {
  RecordProperty("spec", "2.1");
  const CudaDriverProbe& probe = CudaDriver::probe();
  // Exactly one of the two is set, and the reason is the one load() would throw here.
  EXPECT_EQ(probe.driver == nullptr, !probe.reason.empty()) << probe.reason;
  EXPECT_EQ(probe.reason, CudaDriver::unavailable_reason());
  if (probe.driver != nullptr) {
    EXPECT_EQ(probe.driver->implementation_name(), "cuda");
    EXPECT_GE(probe.driver->device_get_count(), 1);
  }
}

// --- the stub driver ----------------------------------------------------------------------------

class StubCudaDriver : public ::testing::Test {
 protected:
  static constexpr const char* kPath = EMM_STUB_CUDA_DRIVER;

  void SetUp() override {
    RecordProperty("spec", "2.1");
    // The same path as CudaDriver::load() gets, so both reach one loaded copy.
    void* library = dlopen(kPath, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    configure_ = reinterpret_cast<EmmStubConfigureFn>(dlsym(library, "emm_stub_configure"));
    state_ = reinterpret_cast<EmmStubStateFn>(dlsym(library, "emm_stub_state"));
    ASSERT_NE(configure_, nullptr);
    ASSERT_NE(state_, nullptr);
    configure(EmmStubConfig{});
  }

  void TearDown() override {
    if (driver_ != nullptr) driver_->ctx_set_current(nullptr);
  }

  void configure(const EmmStubConfig& config) { configure_(&config); }
  EmmStubState state() const { return state_(); }

  // Loads the stub with a current context, as a Context would set it up.
  CudaDriver& load_with_context() {
    driver_ = CudaDriver::load(kPath);
    driver_->ctx_set_current(driver_->primary_ctx_retain(0));
    return *driver_;
  }

  EmmStubConfigureFn configure_ = nullptr;
  EmmStubStateFn state_ = nullptr;
  std::shared_ptr<CudaDriver> driver_;
};

TEST_F(StubCudaDriver, ResolvesEveryCallByBaseNameForCuda12WithLegacyStreams) {
  auto driver = CudaDriver::load(kPath);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->implementation_name(), "cuda");
  const EmmStubState seen = state();
  EXPECT_EQ(seen.unknown_lookups, 0) << "CudaDriver asked for " << seen.last_unknown
                                     << ", which is not a base name of the driver API";
  // One entry point per emm::Driver call.
  EXPECT_EQ(seen.lookups, static_cast<int>(kDriverCallCount));
  EXPECT_EQ(seen.lowest_requested_version, 12000);
  EXPECT_EQ(seen.highest_requested_version, 12000);
  EXPECT_EQ(seen.flags_seen, std::uint64_t{CU_GET_PROC_ADDRESS_LEGACY_STREAM});
  EXPECT_EQ(seen.init_calls, 1);
  EXPECT_EQ(CudaDriver::unavailable_reason(kPath), "");
}

TEST_F(StubCudaDriver, AsksAnOlderDriverForItsOwnVersion) {
  EmmStubConfig config;
  config.driver_version = 11080;
  configure(config);
  auto driver = CudaDriver::load(kPath);
  EXPECT_EQ(state().lowest_requested_version, 11080);
  EXPECT_EQ(state().highest_requested_version, 11080);
  EXPECT_EQ(driver->driver_get_version(), 11080);
}

TEST_F(StubCudaDriver, MissingEntryPointIsDriverUnavailableError) {
  EmmStubConfig config;
  config.missing_entry_point = "cuMemFreeAsync";
  configure(config);
  EMM_EXPECT_THROW(
      DriverUnavailableError, CudaDriver::load(kPath),
      Eq(std::string(kPath) +
         " does not provide the CUDA driver entry point cuMemFreeAsync for CUDA 12.0 "
         "(cuGetProcAddress: symbol not found). " +
         kFakeBackendAdvice + ", or install an NVIDIA driver for CUDA 12.0 or newer."));
  EXPECT_EQ(state().init_calls, 0) << "cuInit ran although an entry point was missing";
}

TEST_F(StubCudaDriver, CuInitFailureIsDriverUnavailableErrorNamingTheResult) {
  EmmStubConfig config;
  config.init_result = CUDA_ERROR_NO_DEVICE;
  configure(config);
  const std::string expected = std::string("cuInit(0) failed with CUDA_ERROR_NO_DEVICE (") + kPath +
                               ", CUDA driver 13.0): the NVIDIA driver is installed but sees no "
                               "GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES). " +
                               kFakeBackendAdvice + ".";
  EMM_EXPECT_THROW(DriverUnavailableError, CudaDriver::load(kPath), Eq(expected));
  EXPECT_EQ(CudaDriver::unavailable_reason(kPath), expected);

  config.init_result = CUDA_ERROR_STUB_LIBRARY;
  configure(config);
  EMM_EXPECT_THROW(DriverUnavailableError, CudaDriver::load(kPath),
                   AllOf(StartsWith("cuInit(0) failed with CUDA_ERROR_STUB_LIBRARY"),
                         HasSubstr("the CUDA Toolkit's stub library, not the NVIDIA driver"),
                         EndsWith(kFakeBackendAdvice + std::string("."))));
}

TEST_F(StubCudaDriver, NoDeviceIsDriverUnavailableError) {
  EmmStubConfig config;
  config.device_count = 0;
  configure(config);
  EMM_EXPECT_THROW(DriverUnavailableError, CudaDriver::load(kPath),
                   Eq(std::string("the CUDA driver (") + kPath +
                      ", CUDA 13.0) reports no CUDA device (check nvidia-smi and "
                      "CUDA_VISIBLE_DEVICES). " +
                      kFakeBackendAdvice + "."));
}

TEST_F(StubCudaDriver, FailingCallThrowsCudaDriverErrorWithResultAndCall) {
  CudaDriver& driver = load_with_context();
  const std::size_t two_gib = std::size_t{2} << 30;  // over the stub's 1 GiB limit
  auto oom = EMM_EXPECT_THROW(CudaDriverError, driver.mem_alloc(two_gib),
                              AllOf(StartsWith("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"),
                                    HasSubstr("2147483648 bytes")));
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(oom->call(), "cuMemAlloc");
  EXPECT_EQ(oom->code_name(), "CUDA_ERROR_OUT_OF_MEMORY");

  auto bad_device = EMM_EXPECT_THROW(
      CudaDriverError, driver.device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 5),
      AllOf(StartsWith("cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_DEVICE"),
            HasSubstr("device 5")));
  ASSERT_TRUE(bad_device.has_value());
  EXPECT_EQ(bad_device->code(), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(bad_device->call(), "cuDeviceGetAttribute");

  driver.ctx_set_current(nullptr);
  auto no_context = EMM_EXPECT_THROW(CudaDriverError, driver.mem_alloc(256),
                                     StartsWith("cuMemAlloc failed: CUDA_ERROR_INVALID_CONTEXT"));
  ASSERT_TRUE(no_context.has_value());
  EXPECT_EQ(no_context->code(), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(StubCudaDriver, ForwardsArgumentsAndResults) {
  CudaDriver& driver = load_with_context();
  EXPECT_EQ(driver.device_get_count(), 1);
  EXPECT_EQ(driver.device_get_name(0), "emm stub device");
  EXPECT_EQ(driver.device_identity(0), (DeviceIdentity{1, 0x41, 3}));
  EXPECT_TRUE(driver.can_map_host_memory(0));
  EXPECT_EQ(driver.ctx_get_device(), 0);
  EXPECT_EQ(driver.ctx_get_current(), driver.primary_ctx_retain(0));

  const MemoryInfo before = driver.mem_get_info();
  const CUdeviceptr base = driver.mem_alloc(4096);
  ASSERT_NE(base, CUdeviceptr{0});
  EXPECT_EQ(driver.mem_get_info().free, before.free - 4096);

  const AddressRange range = driver.mem_get_address_range(base + 100);
  EXPECT_EQ(range.base, base);
  EXPECT_EQ(range.size, 4096u);

  std::vector<std::uint8_t> written(4096), read(4096);
  for (std::size_t i = 0; i < written.size(); ++i) written[i] = gpu_test::pattern_byte(i, 1);
  driver.memcpy_htod(base, written.data(), written.size());
  driver.memset_d8(base + 10, 0xee, 5);
  driver.memcpy_dtod(base + 2048, base, 16);
  driver.memcpy_dtoh(read.data(), base, read.size());
  for (std::size_t i = 10; i < 15; ++i) written[i] = 0xee;
  for (std::size_t i = 0; i < 16; ++i) written[2048 + i] = written[i];
  EXPECT_EQ(read, written);

  const CUipcMemHandle handle = driver.ipc_get_mem_handle(base + 100);
  EXPECT_EQ(driver.ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), base);
  EXPECT_EQ(state().last_ipc_open_flags, unsigned{CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS});
  driver.ipc_close_mem_handle(base);

  const CUstream stream = driver.stream_create(CU_STREAM_NON_BLOCKING);
  const CUevent event = driver.event_create(CU_EVENT_DISABLE_TIMING);
  driver.event_record(event, stream);
  driver.event_synchronize(event);
  driver.stream_synchronize(stream);
  driver.event_destroy(event);
  driver.stream_destroy(stream);

  driver.mem_free(base);
  EXPECT_EQ(state().live_bytes, 0u);
  std::ostringstream hex;
  hex << std::hex << base;
  auto double_free =
      EMM_EXPECT_THROW(CudaDriverError, driver.mem_free(base),
                       Eq("cuMemFree failed: CUDA_ERROR_INVALID_VALUE: pointer 0x" + hex.str()));
  ASSERT_TRUE(double_free.has_value());
  EXPECT_EQ(double_free->call(), "cuMemFree");
}

TEST_F(StubCudaDriver, PointerAttributesAreReadAsTheirCTypes) {
  CudaDriver& driver = load_with_context();
  const CUdeviceptr base = driver.mem_alloc(4096);
  // The stub writes each attribute's own C type (a boolean as one byte): a wrong width or a
  // truncated address would show here.
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + 7),
            std::uint64_t{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, base + 7), base + 7);
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, base), 0u);
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_MAPPED, base), 1u);
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, base), 0u);
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, base + 7), base);
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, base + 7), 4096u);
  EXPECT_EQ(state().pointer_attribute_calls, 7);

  std::ostringstream hex;
  hex << std::hex << base;
  auto no_host = EMM_EXPECT_THROW(
      CudaDriverError, driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, base),
      Eq("cuPointerGetAttribute failed: CUDA_ERROR_INVALID_VALUE: "
         "CU_POINTER_ATTRIBUTE_HOST_POINTER of pointer 0x" +
         hex.str()));
  ASSERT_TRUE(no_host.has_value());
  EXPECT_EQ(no_host->call(), "cuPointerGetAttribute");

  // An attribute whose C type the kit does not know never reaches the driver.
  EMM_EXPECT_THROW(InvalidArgumentError,
                   driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_BUFFER_ID, base),
                   StartsWith("CudaDriver::pointer_get_attribute: attribute 7 is not one the kit "
                              "reads; ask for one of CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "));
  EXPECT_EQ(state().pointer_attribute_calls, 8);
  driver.mem_free(base);
}

TEST_F(StubCudaDriver, MemHostGetFlagsFailureNamesThePointer) {
  CudaDriver& driver = load_with_context();
  int not_pinned = 0;
  std::ostringstream hex;
  hex << std::hex << reinterpret_cast<std::uintptr_t>(&not_pinned);
  auto error = EMM_EXPECT_THROW(
      CudaDriverError, driver.mem_host_get_flags(&not_pinned),
      Eq("cuMemHostGetFlags failed: CUDA_ERROR_INVALID_VALUE: pointer 0x" + hex.str()));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), CUDA_ERROR_INVALID_VALUE);
}

TEST(StubCudaDriverV1, FallsBackToTheCuda11CuGetProcAddress) {
  RecordProperty("spec", "2.1");
  void* library = dlopen(EMM_STUB_CUDA_DRIVER_V1, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  ASSERT_EQ(dlsym(library, "cuGetProcAddress_v2"), nullptr);
  auto configure = reinterpret_cast<EmmStubConfigureFn>(dlsym(library, "emm_stub_configure"));
  auto state = reinterpret_cast<EmmStubStateFn>(dlsym(library, "emm_stub_state"));
  ASSERT_NE(configure, nullptr);
  ASSERT_NE(state, nullptr);
  const EmmStubConfig defaults;
  configure(&defaults);
  auto driver = CudaDriver::load(EMM_STUB_CUDA_DRIVER_V1);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(state().lookups, static_cast<int>(kDriverCallCount));
  EXPECT_EQ(state().unknown_lookups, 0);
  EXPECT_EQ(driver->device_get_count(), 1);
}

}  // namespace
}  // namespace emm
