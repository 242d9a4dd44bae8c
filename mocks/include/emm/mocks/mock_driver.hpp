// emm/mocks/mock_driver.hpp — MockDriver: GoogleMock over emm::Driver.
//
// Every method delegates to a FakeDriver by default, so expectations layer on working
// behaviour:
//
//   auto mock = std::make_shared<testing::StrictMock<emm::MockDriver>>();
//   mock->allow_all_except({emm::DriverCall::cuMemAlloc, emm::DriverCall::cuMemFree});
//   EXPECT_CALL(*mock, mem_alloc).Times(0);     // CTX-2
//   emm::Runtime runtime(mock);
//
// Thread-safety: as GoogleMock (expectations set before use; calls from many threads are fine).
#pragma once

#include <gmock/gmock.h>

#include <initializer_list>
#include <memory>

#include "emm/driver.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm {

class MockDriver : public Driver {
 public:
  // Delegates to `fake` (a new one-device FakeDriver by default).
  explicit MockDriver(std::shared_ptr<FakeDriver> fake = std::make_shared<FakeDriver>());
  ~MockDriver() override;

  FakeDriver& fake() const noexcept { return *fake_; }
  const std::shared_ptr<FakeDriver>& shared_fake() const noexcept { return fake_; }

  // For StrictMock: EXPECT_CALL(...).Times(AnyNumber()) on every entry point except `calls`.
  void allow_all_except(std::initializer_list<DriverCall> calls);

  MOCK_METHOD(std::string, implementation_name, (), (const, override));
  // One MOCK_METHOD per Driver method of driver_calls.hpp.
#define EMM_MOCK_DRIVER_METHOD(cuda_name, abi_version, return_type, method, parameters) \
  MOCK_METHOD(return_type, method, parameters, (override));
  EMM_DRIVER_METHODS(EMM_MOCK_DRIVER_METHOD)
#undef EMM_MOCK_DRIVER_METHOD

 private:
  std::shared_ptr<FakeDriver> fake_;
};

}  // namespace emm
