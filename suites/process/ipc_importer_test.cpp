// The importing side of the IPC checks (ipc_importer.hpp): the protocol end to end in-process,
// with a second fake-driver process as the importer, and the emm-ipc-importer program itself
// (without a GPU it answers every handle with why CUDA could not start).
#include "emm/conformance/ipc_importer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <emm/conformance/testing/expect_throw.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "emm/conformance/child_process.hpp"
#include "emm/context.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"

namespace emm::conformance {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;

RuntimeOptions no_environment() {
  RuntimeOptions options;
  options.getenv = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  return options;
}

std::vector<std::byte> pattern(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 31 + 7) & 0xFF);
  return bytes;
}

// An exporting process with one allocation holding pattern(), and the importing process's
// runtime factory (a second simulated process over the same devices).
class IpcImport : public ::testing::Test {
 protected:
  static constexpr std::size_t kSize = 16384;

  void SetUp() override {
    context_.make_current();
    context_.driver().memcpy_htod(memory_->device_pointer(), written_.data(), kSize);
  }

  ImportItem export_view(std::size_t offset, std::size_t size) {
    ImportItem item;
    item.handle = context_.get_ipc_handle(memory_->view(offset, offset + size)).serialize();
    return item;
  }

  std::vector<std::byte> exported(std::size_t offset, std::size_t size) const {
    return {written_.begin() + static_cast<std::ptrdiff_t>(offset),
            written_.begin() + static_cast<std::ptrdiff_t>(offset + size)};
  }

  std::function<std::unique_ptr<Runtime>()> importer() {
    return [this] { return std::make_unique<Runtime>(fake_->spawn_process(), no_environment()); };
  }

  std::shared_ptr<FakeDriver> fake_ = std::make_shared<FakeDriver>();
  Runtime runtime_{fake_, no_environment()};
  Context& context_ = runtime_.get_context(0);
  std::shared_ptr<MemoryPointer> memory_ = context_.memalloc(kSize);
  std::vector<std::byte> written_ = pattern(kSize);
};

TEST_F(IpcImport, TheImporterReadsEachViewAtItsOffset) {
  ImportRequest request;
  const std::vector<std::pair<std::size_t, std::size_t>> views = {
      {0, kSize}, {1, 1000}, {256, 2048}, {4099, 5000}};
  for (const auto& [offset, size] : views) {
    request.items.push_back(export_view(offset, size));
    request.items.back().context = ImportContext::source_device;
    request.items.back().check_state_machine = true;
  }
  const ImportResponse response =
      decode_import_response(answer_import_request(encode_import_request(request), importer()));
  EXPECT_EQ(response.error, "");
  ASSERT_EQ(response.answers.size(), views.size());
  for (std::size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE("view at offset " + std::to_string(views[i].first));
    EXPECT_TRUE(response.answers[i].ok) << response.answers[i].error;
    EXPECT_EQ(response.answers[i].bytes, exported(views[i].first, views[i].second));
  }
}

TEST_F(IpcImport, AFillLandsInExactlyTheViewInTheExportingProcess) {
  ImportRequest request;
  request.items.push_back(export_view(4099, 1000));
  request.items.back().fill = 0x5a;
  const ImportResponse response =
      decode_import_response(answer_import_request(encode_import_request(request), importer()));
  ASSERT_EQ(response.answers.size(), 1u);
  EXPECT_EQ(response.answers[0].bytes, exported(4099, 1000)) << "read before the fill";
  std::vector<std::byte> expected = written_;
  std::fill(expected.begin() + 4099, expected.begin() + 5099, std::byte{0x5a});
  std::vector<std::byte> now(kSize);
  context_.make_current();
  context_.driver().memcpy_dtoh(now.data(), memory_->device_pointer(), kSize);
  EXPECT_EQ(now, expected);
}

TEST_F(IpcImport, ABadHandleIsAnsweredWithItsErrorAndTheOthersStillImport) {
  ImportRequest request;
  request.items.push_back(export_view(0, 100));
  request.items[0].handle[50] ^= std::byte{1};
  request.items.push_back(export_view(256, 100));
  request.items.push_back(ImportItem{});
  const ImportResponse response = serve_import_request(*importer()(), request);
  ASSERT_EQ(response.answers.size(), 3u);
  EXPECT_FALSE(response.answers[0].ok);
  EXPECT_EQ(response.answers[0].error,
            "cannot deserialize IpcHandle: checksum mismatch (the bytes were corrupted); pass the "
            "exact bytes IpcHandle::serialize() produced");
  EXPECT_TRUE(response.answers[1].ok);
  EXPECT_EQ(response.answers[1].bytes, exported(256, 100));
  EXPECT_EQ(response.answers[2].error,
            "cannot deserialize IpcHandle: truncated input (0 bytes, expected 104); pass the "
            "exact bytes IpcHandle::serialize() produced");
}

TEST_F(IpcImport, AMalformedRequestIsRefusedAsAWhole) {
  const ImportResponse response =
      decode_import_response(answer_import_request(std::string("EMMIPCQ\x01\x01\0\0\0", 12),
                                                   importer()));  // one handle, then nothing
  EXPECT_EQ(response.error,
            "malformed IPC import request: truncated: a handle's context needs 1 bytes, 0 are "
            "left");
  EXPECT_TRUE(response.answers.empty());
}

TEST_F(IpcImport, AnImporterWithoutCudaAnswersEveryHandleWithWhy) {
  ImportRequest request;
  request.items = {export_view(0, 10), export_view(10, 10)};
  const ImportResponse response = decode_import_response(answer_import_request(
      encode_import_request(request),
      []() -> std::unique_ptr<Runtime> { throw DriverUnavailableError("no libcuda.so.1"); }));
  ASSERT_EQ(response.answers.size(), 2u);
  for (const ImportAnswer& answer : response.answers) {
    EXPECT_EQ(answer.error, "the importing process could not start CUDA: no libcuda.so.1");
  }
}

TEST(IpcImporterProgram, IsFoundInTheBuildTree) {
  const std::string importer = find_ipc_importer();
  EXPECT_THAT(importer, ::testing::EndsWith("/emm-ipc-importer"));
}

TEST(IpcImporterProgram, AnswersEveryHandleOverItsChannels) {
  ImportRequest request;
  request.items.resize(2);
  request.items[0].handle = std::vector<std::byte>(IpcHandle::kSerializedSize, std::byte{0x41});
  request.items[1].handle = request.items[0].handle;
  const ImportResponse response = run_import(find_ipc_importer(), request, 30s);
  EXPECT_EQ(response.error, "");
  ASSERT_EQ(response.answers.size(), 2u);
  const std::string no_gpu = CudaDriver::unavailable_reason();
  for (const ImportAnswer& answer : response.answers) {
    EXPECT_FALSE(answer.ok);
    if (!no_gpu.empty()) {
      EXPECT_EQ(answer.error, "the importing process could not start CUDA: " + no_gpu);
    } else {
      EXPECT_EQ(answer.error,
                "cannot deserialize IpcHandle: bad magic (not an emmkit IPC handle); pass the "
                "exact bytes IpcHandle::serialize() produced");
    }
  }
}

TEST(IpcImporterProgram, RefusesAMalformedRequest) {
  ChildOptions options;
  options.command_channel = true;
  options.result_channel = true;
  ChildProcess importer = ChildProcess::exec(find_ipc_importer(), {}, options);
  importer.send_command("not a request");
  importer.close_command_channel();
  EXPECT_EQ(importer.wait(30s).describe(), "exited with status 0");
  // The ready frame, then the answer.
  const FrameScan ready = scan_frame(importer.result_bytes());
  ASSERT_EQ(ready.status, FrameScan::Status::complete) << ready.problem;
  EXPECT_EQ(ready.payload, "emm-ipc-importer ready");
  std::string problem;
  const auto frame =
      decode_frame(std::string_view(importer.result_bytes()).substr(ready.frame_size), problem);
  ASSERT_TRUE(frame.has_value()) << problem;
  EXPECT_EQ(decode_import_response(*frame).error,
            "malformed IPC import request: it does not start with \"EMMIPCQ\" (not an import "
            "request)");
}

TEST(IpcImporterProgram, OneProcessAnswersRequestAfterRequest) {
  ImporterProcess importer(find_ipc_importer());
  importer.start();
  std::string problem;
  ASSERT_TRUE(importer.wait_ready(ImporterProcess::Clock::now() + 30s, problem)) << problem;
  ImportRequest request;
  request.items.resize(1);
  request.items[0].handle = std::vector<std::byte>(IpcHandle::kSerializedSize, std::byte{0x41});
  for (int round = 0; round < 3; ++round) {
    const ImportResponse response = importer.import(request, 30s);
    EXPECT_EQ(response.error, "");
    ASSERT_EQ(response.answers.size(), 1u);
    EXPECT_FALSE(response.answers[0].ok);
  }
  EXPECT_NO_THROW(importer.finish(ImporterProcess::Clock::now() + 30s));
}

TEST(IpcImporterProgram, ExitsWithStatus2WhenNoRequestCame) {
  ChildOptions options;
  options.command_channel = true;
  options.result_channel = true;
  ChildProcess importer = ChildProcess::exec(find_ipc_importer(), {}, options);
  importer.close_command_channel();
  EXPECT_EQ(importer.wait(30s).describe(), "exited with status 2");
  EXPECT_EQ(importer.output().text(),
            "emm-ipc-importer: the command channel closed before a request came\n");
}

TEST(IpcImporterProgram, AProcessThatDiedIsReplacedAtTheNextImport) {
  // A program that says it is ready, then dies before answering: each import fails saying so,
  // and the next one starts a new process (each start leaves a line in `starts`).
  const std::string dir = ::testing::TempDir();
  const std::string program = dir + "emm_importer_that_dies.sh";
  const std::string starts = dir + "emm_importer_that_dies.starts";
  std::remove(starts.c_str());
  {
    std::ofstream script(program);
    script << "#!/bin/bash\necho started >>'" << starts << "'\n"
           << "printf 'EMMF\\026\\0\\0\\0\\0\\0\\0\\0emm-ipc-importer ready' >&" << kResultChannelFd
           << "\nexit 3\n";
  }
  ASSERT_EQ(::chmod(program.c_str(), 0755), 0);
  ImporterProcess importer(program);
  ImportRequest request;
  request.items.resize(1);
  for (int round = 0; round < 2; ++round) {
    EMM_EXPECT_THROW(
        ProcessError, importer.import(request, 30s),
        StrEq(program + " exited with status 3; it sent no answer; it printed nothing"));
  }
  std::ifstream lines(starts);
  const std::string text((std::istreambuf_iterator<char>(lines)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "started\nstarted\n");
}

TEST(IpcImporterProgram, SaysItIsNotForUseByHand) {
  ChildProcess importer = ChildProcess::exec(find_ipc_importer(), {});
  EXPECT_EQ(importer.wait(30s).describe(), "exited with status 2");
  EXPECT_EQ(importer.output().text(),
            "emm-ipc-importer: no command channel (EMM_CHILD_CHANNELS is not set); this program "
            "is started by emm-certify and the kit's tests through run_import(), not by hand\n");
}

TEST(IpcImporterProgram, AProgramThatIsNoImporterIsAClearError) {
  EMM_EXPECT_THROW(
      ProcessError, run_import("/bin/true", {}, 30s),
      StrEq("/bin/true exited with status 0; it ended before it was ready; it printed nothing"));
  EMM_EXPECT_THROW(
      ProcessError, run_import("/nonexistent/emm-ipc-importer", {}, 30s),
      StrEq("cannot start /nonexistent/emm-ipc-importer: execve(): No such file or directory"));
}

}  // namespace
}  // namespace emm::conformance
