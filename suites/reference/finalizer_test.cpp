// FIN-2, FIN-3, FIN-4, FIN-6: the pointer family's lifetime rules (spec 2.2), mirroring the
// intent of Numba's test_cuda_memory (test_user_extension, test_derived_pointer).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/memory_pointer.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;

constexpr CUdeviceptr kFakeAddress = 0xDEAD0000;

struct FinalizerCounter {
  std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0);
  Finalizer finalizer() const {
    return [runs = runs] { ++*runs; };
  }
  int count() const { return runs->load(); }
};

// --- FIN-2 ---------------------------------------------------------------------------------

TEST(Finalizer, FIN_2_OwnDoesNotFreeAndTheFinalizerRunsAtDestruction) {
  EMM_CLAUSE("FIN-2");
  FinalizerCounter counter;
  auto pointer =
      std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 40, nullptr, counter.finalizer());
  EXPECT_TRUE(pointer->is_managed());
  EXPECT_EQ(pointer->refct(), 1);
  {
    auto owned = pointer->own();
    EXPECT_EQ(pointer->refct(), 2);
    EXPECT_EQ(owned->device_pointer(), kFakeAddress);
  }
  EXPECT_EQ(pointer->refct(), 1);
  EXPECT_EQ(counter.count(), 0) << "dropping an own() reference must not free";
  pointer.reset();
  EXPECT_EQ(counter.count(), 1) << "destroying the pointer runs the finalizer once";
}

TEST(Finalizer, FIN_2_ExplicitFreeRunsOnceAndSecondFreeIsFreeingDeadMemory) {
  EMM_CLAUSE("FIN-2");
  FinalizerCounter counter;
  auto pointer =
      std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 40, nullptr, counter.finalizer());
  pointer->free();
  EXPECT_EQ(counter.count(), 1);
  EXPECT_FALSE(pointer->finalizer_alive());
  EMM_EXPECT_THROW(PointerLifetimeError, pointer->free(), StrEq("Freeing dead memory"));
  EXPECT_EQ(counter.count(), 1);
  pointer.reset();
  EXPECT_EQ(counter.count(), 1) << "destruction after free() must not run it again";
}

TEST(Finalizer, FIN_2_FreeThroughAnOwnedReferenceFreesTheTarget) {
  EMM_CLAUSE("FIN-2");
  FinalizerCounter counter;
  auto pointer =
      std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 40, nullptr, counter.finalizer());
  auto owned = pointer->own();
  owned->free();
  EXPECT_EQ(counter.count(), 1);
  EMM_EXPECT_THROW(PointerLifetimeError, owned->free(), StrEq("Freeing dead memory"));
  EMM_EXPECT_THROW(PointerLifetimeError, pointer->free(), StrEq("Freeing dead memory"));
  owned.reset();
  pointer.reset();
  EXPECT_EQ(counter.count(), 1);
}

TEST(Finalizer, FIN_2_UnmanagedPointerIgnoresFree) {
  EMM_CLAUSE("FIN-2");
  auto pointer = std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 40);
  EXPECT_FALSE(pointer->is_managed());
  EXPECT_FALSE(pointer->finalizer_alive());
  EXPECT_NO_THROW(pointer->free());
  EXPECT_NO_THROW(pointer->free());
}

TEST(Finalizer, FIN_2_DefaultManagerPointerFreesOnceThroughTheDriver) {
  EMM_CLAUSE("FIN-2");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  auto memory = context.memalloc(1024);
  memory->free();
  EMM_EXPECT_THROW(PointerLifetimeError, memory->free(), StrEq("Freeing dead memory"));
  memory.reset();
  context.reset();
  EXPECT_EQ(fake->call_count(DriverCall::cuMemFree), 1u);
  EXPECT_EQ(fake->invalid_frees(), 0u);
  EXPECT_EQ(fake->device_bytes_in_use(), 0u);
}

// --- FIN-3 ---------------------------------------------------------------------------------

// Numba's test_derived_pointer, for a pointer whose refct is 1 at rest.
void check_derived_pointers(const std::shared_ptr<MemoryPointer>& memory) {
  const std::shared_ptr<MemoryPointer> base = memory->owner();
  ASSERT_EQ(memory->refct(), 1);
  for (std::size_t offset : {0u, 1u}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    auto v1 = memory->view(offset);
    EXPECT_EQ(v1->owner(), base) << "a view's owner is the base allocation";
    EXPECT_EQ(v1->owner()->handle(), memory->handle());
    EXPECT_EQ(memory->refct(), 2);
    EXPECT_EQ(v1->handle() - offset, v1->owner()->handle());
    EXPECT_EQ(v1->size(), memory->size() - offset);

    auto v2 = v1->view(offset);
    EXPECT_EQ(v2->owner(), base) << "views of views share the base owner";
    EXPECT_EQ(v2->handle() - 2 * offset, v2->owner()->handle()) << "offsets add up";
    EXPECT_EQ(v2->size(), memory->size() - 2 * offset);
    EXPECT_EQ(memory->refct(), 3);

    v2.reset();
    EXPECT_EQ(memory->refct(), 2);
    v1.reset();
    EXPECT_EQ(memory->refct(), 1);
  }
}

TEST(Finalizer, FIN_3_ViewRefcountsAndOffsetsOnAPlainMemoryPointer) {
  EMM_CLAUSE("FIN-3");
  FinalizerCounter counter;
  auto memory =
      std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 1024, nullptr, counter.finalizer());
  check_derived_pointers(memory);
  EXPECT_EQ(counter.count(), 0) << "dropping views must not free";
}

TEST(Finalizer, FIN_3_ViewRefcountsAndOffsetsOnTheDefaultManagersPointer) {
  EMM_CLAUSE("FIN-3");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  auto memory = context.memalloc(1024);
  check_derived_pointers(memory);
  EXPECT_EQ(fake->call_count(DriverCall::cuMemFree), 0u);
  EXPECT_EQ(test::host_only(context).deallocations().count(), 0u);
}

TEST(Finalizer, FIN_3_ViewRangesAndKeepAlive) {
  EMM_CLAUSE("FIN-3");
  FinalizerCounter counter;
  auto memory =
      std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 1024, nullptr, counter.finalizer());
  auto middle = memory->view(100, 300);
  EXPECT_EQ(middle->device_pointer(), kFakeAddress + 100);
  EXPECT_EQ(middle->size(), 200u);
  auto inner = middle->view(50, 60);
  EXPECT_EQ(inner->device_pointer(), kFakeAddress + 150);
  EXPECT_EQ(inner->size(), 10u);
  EXPECT_EQ(memory->refct(), 3);
  EXPECT_EQ(memory->view(1024)->size(), 0u) << "an empty view at the end is allowed";

  memory.reset();
  EXPECT_EQ(counter.count(), 0) << "a live view keeps its base allocation alive";
  middle.reset();
  EXPECT_EQ(counter.count(), 0);
  inner.reset();
  EXPECT_EQ(counter.count(), 1) << "the last view releases the base";
}

// --- FIN-4 ---------------------------------------------------------------------------------

TEST(Finalizer, FIN_4_AutoFreePointerStartsAtZeroAndFreesWhenOwnersReturnToZero) {
  EMM_CLAUSE("FIN-4");
  FinalizerCounter counter;
  auto memory =
      std::make_shared<AutoFreePointer>(nullptr, kFakeAddress, 256, nullptr, counter.finalizer());
  EXPECT_EQ(memory->refct(), 0);
  auto first = memory->own();
  auto second = memory->own();
  EXPECT_EQ(memory->refct(), 2);
  second.reset();
  EXPECT_EQ(memory->refct(), 1);
  EXPECT_EQ(counter.count(), 0);
  first.reset();
  EXPECT_EQ(memory->refct(), 0);
  EXPECT_EQ(counter.count(), 1) << "refct back to 0 runs the finalizer";
  EXPECT_FALSE(memory->finalizer_alive());
  EMM_EXPECT_THROW(PointerLifetimeError, memory->free(), StrEq("Freeing dead memory"));
  memory.reset();
  EXPECT_EQ(counter.count(), 1) << "the instance's destruction does not run it again";
}

TEST(Finalizer, FIN_4_OwnedAutoFreePointerSurvivesViews) {
  EMM_CLAUSE("FIN-4");
  // What a correct plugin returns: AutoFreePointer(...)->own().
  FinalizerCounter counter;
  std::shared_ptr<MemoryPointer> handed_out =
      std::make_shared<AutoFreePointer>(nullptr, kFakeAddress, 256, nullptr, counter.finalizer())
          ->own();
  EXPECT_EQ(handed_out->refct(), 1);
  handed_out->view(8).reset();
  EXPECT_EQ(counter.count(), 0);
  EXPECT_EQ(handed_out->refct(), 1);
  handed_out.reset();
  EXPECT_EQ(counter.count(), 1);
}

TEST(Finalizer, FIN_4_BareAutoFreePointerIsFreedWhenItsFirstViewDies) {
  EMM_CLAUSE("FIN-4");
  // The hazard ALLOC-5 exists for: a plugin that hands out a bare AutoFreePointer (refct 0)
  // loses the buffer as soon as a view taken from it is dropped, while the caller still holds
  // the pointer.
  FinalizerCounter counter;
  std::shared_ptr<MemoryPointer> bare =
      std::make_shared<AutoFreePointer>(nullptr, kFakeAddress, 256, nullptr, counter.finalizer());
  EXPECT_EQ(bare->refct(), 0);
  auto view = bare->view(0);
  EXPECT_EQ(bare->refct(), 1);
  view.reset();
  EXPECT_EQ(bare->refct(), 0);
  EXPECT_EQ(counter.count(), 1) << "freed although the caller still holds the pointer";
  EXPECT_FALSE(bare->finalizer_alive());
  bare.reset();
  EXPECT_EQ(counter.count(), 1);
}

// --- FIN-6 ---------------------------------------------------------------------------------

TEST(Finalizer, FIN_6_ThrowingFinalizerIsReportedAndOtherFreesStillHappen) {
  EMM_CLAUSE("FIN-6");
  Diagnostics::Capture capture;
  FinalizerCounter counter;
  {
    std::vector<std::shared_ptr<MemoryPointer>> pointers;
    pointers.push_back(
        std::make_shared<MemoryPointer>(nullptr, 0x1000, 8, nullptr, counter.finalizer()));
    pointers.push_back(std::make_shared<MemoryPointer>(
        nullptr, 0x2000, 8, nullptr, [] { throw std::runtime_error("finalizer exploded"); }));
    pointers.push_back(
        std::make_shared<MemoryPointer>(nullptr, 0x3000, 8, nullptr, counter.finalizer()));
    EXPECT_NO_THROW(pointers.clear());
  }
  EXPECT_EQ(counter.count(), 2) << "the other finalizers ran";
  const auto events = capture.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, DiagnosticEvent::Kind::ignored_exception);
  EXPECT_THAT(events[0].message, HasSubstr("finalizer exploded"));
}

TEST(Finalizer, FIN_6_ExplicitFreeOfAThrowingFinalizerReportsAndMarksItDead) {
  EMM_CLAUSE("FIN-6");
  Diagnostics::Capture capture;
  struct Odd {};
  auto pointer =
      std::make_shared<MemoryPointer>(nullptr, kFakeAddress, 8, nullptr, [] { throw Odd{}; });
  EXPECT_NO_THROW(pointer->free());
  EXPECT_EQ(capture.count(DiagnosticEvent::Kind::ignored_exception), 1u)
      << "non-std exceptions are reported too";
  EMM_EXPECT_THROW(PointerLifetimeError, pointer->free(), StrEq("Freeing dead memory"));
  pointer.reset();
  EXPECT_EQ(capture.count(DiagnosticEvent::Kind::ignored_exception), 1u) << "reported once";
}

TEST(Finalizer, FIN_6_FailingDeferredFreeIsReportedAndTheRestOfTheFlushHappens) {
  EMM_CLAUSE("FIN-6");
  // The 11th dropped pointer flushes the queue from inside a finalizer; the first cuMemFree of
  // that flush fails. The error is reported, not thrown from the destructor, and the other ten
  // allocations are freed.
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  std::vector<std::shared_ptr<MemoryPointer>> pointers;
  for (int i = 0; i < 11; ++i) pointers.push_back(context.memalloc(4096));
  fake->fail_call(DriverCall::cuMemFree, CUDA_ERROR_INVALID_VALUE);

  Diagnostics::Capture capture;
  EXPECT_NO_THROW(pointers.clear());

  EXPECT_EQ(fake->call_count(DriverCall::cuMemFree), 11u) << "every queued free was attempted";
  EXPECT_EQ(fake->live_allocations().size(), 1u) << "only the failed free is left";
  const auto events = capture.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, DiagnosticEvent::Kind::ignored_exception);
  EXPECT_THAT(events[0].message, HasSubstr("CUDA_ERROR_INVALID_VALUE"));

  // The system is still usable.
  auto again = context.memalloc(4096);
  EXPECT_EQ(again->size(), 4096u);
}

}  // namespace
}  // namespace emm
