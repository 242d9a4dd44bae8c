// Proves an installed emmkit is usable: a Runtime over the installed FakeDriver, one allocation
// and one free through the default manager (NumbaCUDAMemoryManager), and nothing left behind.
#include <cstdio>
#include <exception>
#include <memory>
#include <string_view>

#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"
#include "emm/version.hpp"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "emmkit_consumer: %s\n", what);
  return 1;
}

int run() {
  // The installed emm/version.hpp and the package find_package() found are one version.
  if (std::string_view(emm::kKitVersion) != EMMKIT_PACKAGE_VERSION) {
    return fail("emm/version.hpp's kKitVersion differs from the emmkit package version");
  }
  auto driver = std::make_shared<emm::FakeDriver>();
  {
    // An empty environment: EMM_CUDA_MEMORY_MANAGER in the caller's must not pick the manager.
    emm::Runtime runtime(driver, emm::RuntimeOptions::hermetic());
    emm::Context& context = runtime.get_context(0);
    if (runtime.memory_manager_source() != "default") {
      return fail("expected the default memory manager");
    }
    auto memory = context.memalloc(4096);
    if (!memory || memory->size() != 4096 || memory->device_pointer() == 0) {
      return fail("memalloc(4096) did not return a 4096-byte device allocation");
    }
    if (driver->device_bytes_in_use() < 4096) {
      return fail("the fake device does not account for the allocation");
    }
    memory->memset(0xAB);
    memory->free();
    memory.reset();
    runtime.close();  // flushes the deferred deallocations (spec 2.4)
  }
  if (driver->device_bytes_in_use() != 0) {
    return fail("device memory is still in use after free() and close()");
  }
  std::printf("emmkit_consumer: OK (driver %s)\n", driver->implementation_name().c_str());
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "emmkit_consumer: unexpected exception: %s\n", error.what());
    return 1;
  }
}
