#include "emm/mocks/mock_driver.hpp"

#include <algorithm>
#include <utility>

#include "emm/errors.hpp"

namespace emm {

using ::testing::AnyNumber;

MockDriver::MockDriver(std::shared_ptr<FakeDriver> fake)
    : fake_(fake ? std::move(fake)
                 : throw InvalidArgumentError("MockDriver needs a FakeDriver to delegate to, "
                                              "got null")) {
  // GoogleMock's "delegating calls to a fake" recipe: every call reaches the fake unless a test
  // says otherwise.
  FakeDriver* f = fake_.get();
  ON_CALL(*this, implementation_name()).WillByDefault([] { return std::string("mock"); });
#define EMM_DELEGATE_TO_FAKE(cuda_name, abi_version, return_type, method, parameters) \
  ON_CALL(*this, method).WillByDefault(::testing::Invoke(f, &FakeDriver::method));
  EMM_DRIVER_METHODS(EMM_DELEGATE_TO_FAKE)
#undef EMM_DELEGATE_TO_FAKE
}

MockDriver::~MockDriver() = default;

void MockDriver::allow_all_except(std::initializer_list<DriverCall> calls) {
  auto allowed = [&calls](DriverCall call) {
    return std::find(calls.begin(), calls.end(), call) == calls.end();
  };
  // implementation_name is no driver call: naming the driver in a log is always allowed.
  EXPECT_CALL(*this, implementation_name()).Times(AnyNumber());
#define EMM_ALLOW(cuda_name, abi_version, return_type, method, parameters) \
  if (allowed(DriverCall::cuda_name)) {                                    \
    EXPECT_CALL(*this, method).Times(AnyNumber());                         \
  }
  EMM_DRIVER_METHODS(EMM_ALLOW)
#undef EMM_ALLOW
}

}  // namespace emm
