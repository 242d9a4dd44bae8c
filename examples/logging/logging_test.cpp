// Unit tests of the logging decorator: what it writes, and that wrapping keeps the pointer,
// finalizer and IPC semantics of the plugin it wraps (here the pool example).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <emm/conformance/testing/expect_throw.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "emm/context.hpp"
#include "emm/errors.hpp"
#include "emm/examples/csv_event_log.hpp"
#include "emm/examples/logging_memory_manager.hpp"
#include "emm/examples/logging_over_pool.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/runtime.hpp"

namespace emm::examples {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

std::string hex(CUdeviceptr pointer) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(pointer));
  return buffer;
}

// The lines of `path` whose event column is `event`.
std::vector<std::vector<std::string>> events(const std::string& path, const std::string& event) {
  std::vector<std::vector<std::string>> found;
  for (const std::string& line : read_lines(path)) {
    std::vector<std::string> fields = split(line);
    if (!fields.empty() && fields[0] == event) found.push_back(fields);
  }
  return found;
}

class LoggingTest : public ::testing::Test {
 protected:
  LoggingTest()
      : path_(::testing::TempDir() + "emm_logging_test." + std::to_string(::getpid()) + "." +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv"),
        driver_(std::make_shared<FakeDriver>()),
        runtime_(driver_, RuntimeOptions::hermetic()) {
    std::remove(path_.c_str());
    const std::string path = path_;
    runtime_.set_memory_manager([path](Context* context) {
      return std::make_unique<LoggingOverPool>(LogTo{path}, context);
    });
    context_ = &runtime_.get_context(0);
  }
  ~LoggingTest() override { std::remove(path_.c_str()); }

  std::string path_;
  std::shared_ptr<FakeDriver> driver_;
  Runtime runtime_;
  Context* context_ = nullptr;
};

TEST_F(LoggingTest, WritesTheHeaderOnceAndOneLinePerEvent) {
  auto p = context_->memalloc(1000);
  const CUdeviceptr address = p->device_pointer();
  const MemoryInfo info = context_->get_memory_info();
  p.reset();
  context_->reset();

  const std::vector<std::string> lines = read_lines(path_);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], CsvEventLog::kHeader);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), std::string(CsvEventLog::kHeader)), 1);
  EXPECT_EQ(events(path_, "initialize").size(), 1u);

  const auto memalloc = events(path_, "memalloc");
  ASSERT_EQ(memalloc.size(), 1u);
  ASSERT_EQ(memalloc[0].size(), 8u);
  EXPECT_EQ(memalloc[0][1], "0");  // device
  EXPECT_EQ(memalloc[0][2], hex(address));
  EXPECT_EQ(memalloc[0][3], "1000");
  EXPECT_EQ(memalloc[0][4], "");  // free/total only on get_memory_info
  EXPECT_LE(std::stoll(memalloc[0][6]), std::stoll(memalloc[0][7]));

  const auto free = events(path_, "free");
  ASSERT_EQ(free.size(), 1u);
  EXPECT_EQ(free[0][2], hex(address));
  EXPECT_EQ(free[0][3], "1000");

  const auto memory_info = events(path_, "get_memory_info");
  ASSERT_EQ(memory_info.size(), 1u);
  EXPECT_EQ(memory_info[0][4], std::to_string(info.free));
  EXPECT_EQ(memory_info[0][5], std::to_string(info.total));
  EXPECT_EQ(events(path_, "reset").size(), 1u);
}

TEST_F(LoggingTest, ALLOC_5_PlainPointerWhoseViewsDoNotFreeTheInnerBlock) {
  RecordProperty("clause", "ALLOC-5");
  auto& pool = dynamic_cast<PoolMemoryManager&>(context_->memory_manager());
  auto p = context_->memalloc(4096);
  EXPECT_EQ(p->refct(), 1);
  EXPECT_TRUE(p->is_managed());
  auto view = p->view(256, 512);
  EXPECT_EQ(p->refct(), 2);
  view.reset();
  EXPECT_EQ(p->refct(), 1);
  EXPECT_EQ(pool.statistics().allocated_blocks, 1u);
  EXPECT_TRUE(events(path_, "free").empty());
  p.reset();
  EXPECT_EQ(pool.statistics().allocated_blocks, 0u);
  EXPECT_EQ(events(path_, "free").size(), 1u);
}

TEST_F(LoggingTest, FIN_2_ExplicitFreeReleasesTheInnerPointerOnce) {
  RecordProperty("clause", "FIN-2");
  auto& pool = dynamic_cast<PoolMemoryManager&>(context_->memory_manager());
  auto p = context_->memalloc(4096);
  p->free();
  EXPECT_EQ(pool.statistics().allocated_blocks, 0u);
  EMM_EXPECT_THROW(PointerLifetimeError, p->free(), "Freeing dead memory");
  p.reset();
  EXPECT_EQ(events(path_, "free").size(), 1u);
}

TEST_F(LoggingTest, IPC_1_HandleHasTheInnerPluginsOffsetAndTheCallersBase) {
  RecordProperty("clause", "IPC-1");
  auto keep = context_->memalloc(768);  // so the next block is not at its slab's base
  auto p = context_->memalloc(8192);
  auto view = p->view(4096 + 3, 8000);
  IpcHandle handle = context_->get_ipc_handle(view);
  const CUdeviceptr slab_base = keep->device_pointer();
  EXPECT_EQ(handle.offset(), view->device_pointer() - slab_base);
  EXPECT_EQ(handle.size(), view->size());
  EXPECT_EQ(handle.base(), view);
  const auto logged = events(path_, "get_ipc_handle");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0][2], hex(view->device_pointer()));
}

TEST_F(LoggingTest, FailuresAreLoggedAndReachTheCallerUnchanged) {
  EMM_EXPECT_DRIVER_ERROR(context_->memalloc(std::size_t{1} << 50), CUDA_ERROR_OUT_OF_MEMORY,
                          "cuMemAlloc", HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  const auto failed = events(path_, "memalloc_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0][2], "");
  EXPECT_EQ(failed[0][3], std::to_string(std::size_t{1} << 50));
}

TEST_F(LoggingTest, DeferCleanupIsForwardedAndLogged) {
  auto& pool = dynamic_cast<PoolMemoryManager&>(context_->memory_manager());
  {
    CleanupGuard guard = context_->defer_cleanup();
    EXPECT_EQ(pool.statistics().defer_depth, 1);
  }
  EXPECT_EQ(pool.statistics().defer_depth, 0);
  EXPECT_EQ(events(path_, "defer_cleanup_enter").size(), 1u);
  EXPECT_EQ(events(path_, "defer_cleanup_exit").size(), 1u);
}

TEST(LoggingProbe, REG_2_VersionProbeWritesNothing) {
  RecordProperty("clause", "REG-2");
  const std::string path =
      ::testing::TempDir() + "emm_logging_probe." + std::to_string(::getpid()) + ".csv";
  std::remove(path.c_str());
  {
    LoggingOverPool probe(LogTo{path}, nullptr);
    EXPECT_EQ(probe.interface_version(), 1);
    LoggingMemoryManager wrapper(LogTo{path}, nullptr,
                                 std::make_unique<PoolMemoryManager>(nullptr));
    EXPECT_EQ(wrapper.interface_version(), 1);
  }
  EXPECT_FALSE(std::ifstream(path).good());
}

TEST_F(LoggingTest, DEFER_3_TheDecoratedPoolIsStillHostOnlyDerivedAndHoldsItsGuard) {
  RecordProperty("clause", "DEFER-3");
  auto& host_only = dynamic_cast<HostOnlyCUDAMemoryManager&>(context_->memory_manager());
  {
    CleanupGuard guard = host_only.defer_cleanup();
    EXPECT_TRUE(host_only.deallocations().is_disabled());
  }
  EXPECT_FALSE(host_only.deallocations().is_disabled());
}

// The run-time flavour: an instance wrapped through ForwardingMemoryManager.
TEST(LoggingMemoryManager, WrapsAnInstanceChosenAtRunTime) {
  const std::string path =
      ::testing::TempDir() + "emm_logging_wrapper." + std::to_string(::getpid()) + ".csv";
  std::remove(path.c_str());
  auto driver = std::make_shared<FakeDriver>();
  Runtime runtime(driver, RuntimeOptions::hermetic());
  runtime.set_memory_manager([path](Context* context) {
    return std::make_unique<LoggingMemoryManager>(LogTo{path}, context,
                                                  std::make_unique<PoolMemoryManager>(context));
  });
  Context& context = runtime.get_context(0);
  auto& wrapper = dynamic_cast<LoggingMemoryManager&>(context.memory_manager());
  auto& pool = dynamic_cast<PoolMemoryManager&>(wrapper.inner());
  auto keep = context.memalloc(512);
  auto p = context.memalloc(2048);
  EXPECT_EQ(pool.statistics().allocated_blocks, 2u);
  {
    IpcHandle handle = context.get_ipc_handle(p->view(100, 200));  // its base keeps p alive
    EXPECT_EQ(handle.offset(), p->device_pointer() + 100 - keep->device_pointer());
    EXPECT_EQ(handle.size(), 100u);
  }
  p.reset();
  EXPECT_EQ(pool.statistics().allocated_blocks, 1u);
  EXPECT_EQ(events(path, "memalloc").size(), 2u);
  EXPECT_EQ(events(path, "free").size(), 1u);
  EXPECT_EQ(events(path, "get_ipc_handle").size(), 1u);
  std::remove(path.c_str());
}

TEST(ForwardingMemoryManager, RejectsANullPlugin) {
  EMM_EXPECT_THROW(InvalidArgumentError, ForwardingMemoryManager(nullptr, nullptr),
                   HasSubstr("the wrapped plugin is null"));
}

TEST(CsvEventLog, FormatsEmptyOptionalColumnsAsEmptyFields) {
  EXPECT_EQ(
      CsvEventLog::format(LogEvent{"reset", 0, std::nullopt, std::nullopt, std::nullopt, 5, 7}),
      "reset,0,,,,,5,7");
  EXPECT_EQ(CsvEventLog::format(LogEvent{"memalloc", 1, 0x1200, 64, MemoryInfo{10, 20}, 1, 2}),
            "memalloc,1,0x1200,64,10,20,1,2");
}

}  // namespace
}  // namespace emm::examples
