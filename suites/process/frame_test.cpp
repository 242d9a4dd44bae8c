// Frames on the channels and the capped output capture (child_process.hpp), without children.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <emm/conformance/testing/expect_throw.hpp>
#include <string>

#include "emm/conformance/child_process.hpp"

namespace emm::conformance {
namespace {

TEST(Frame, EncodedPayloadDecodesBackWithAnyBytes) {
  const std::string payload("with\0nul and \xff bytes", 20);
  const std::string frame = encode_frame(payload);
  EXPECT_EQ(frame.size(), kFrameHeaderSize + payload.size());
  EXPECT_EQ(frame.substr(0, 4), "EMMF");
  std::string problem = "stale";
  EXPECT_EQ(decode_frame(frame, problem), payload);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(decode_frame(encode_frame(""), problem), "");
}

TEST(Frame, NoBytesIsNotAFrame) {
  std::string problem;
  EXPECT_EQ(decode_frame("", problem), std::nullopt);
  EXPECT_EQ(problem, "no bytes");
}

TEST(Frame, GarbageIsRejectedShowingItsFirstBytes) {
  std::string problem;
  EXPECT_EQ(decode_frame("hello", problem), std::nullopt);
  EXPECT_EQ(problem, "not a frame: it starts with 68 65 6c 6c 6f");
  EXPECT_EQ(decode_frame("terminate called after", problem), std::nullopt);
  EXPECT_EQ(problem, "not a frame: it starts with 74 65 72 6d 69 6e 61 74 ...");
  EXPECT_EQ(scan_frame("EMX").status, FrameScan::Status::garbage);
}

TEST(Frame, TruncatedHeaderAndPayloadAreRejected) {
  const std::string frame = encode_frame("abcdef");
  std::string problem;
  EXPECT_EQ(decode_frame(frame.substr(0, 5), problem), std::nullopt);
  EXPECT_EQ(problem, "truncated frame: 5 of the 12 header bytes");
  EXPECT_EQ(decode_frame(frame.substr(0, frame.size() - 2), problem), std::nullopt);
  EXPECT_EQ(problem, "truncated frame: 4 of its 6 payload bytes");
  const FrameScan scan = scan_frame(frame.substr(0, 14));
  EXPECT_EQ(scan.status, FrameScan::Status::incomplete);
  EXPECT_EQ(scan.announced, 6u);
  EXPECT_EQ(scan_frame("EM").status, FrameScan::Status::incomplete) << "a prefix of the magic";
}

TEST(Frame, TrailingBytesAreRejectedButScanFindsTheFirstFrame) {
  const std::string two = encode_frame("one") + encode_frame("two");
  std::string problem;
  EXPECT_EQ(decode_frame(two, problem), std::nullopt);
  EXPECT_EQ(problem, "15 bytes after the frame");
  const FrameScan scan = scan_frame(two);
  ASSERT_EQ(scan.status, FrameScan::Status::complete);
  EXPECT_EQ(scan.payload, "one");
  EXPECT_EQ(scan.frame_size, 15u);
}

TEST(Frame, AnAbsurdLengthIsGarbageNotAnAllocation) {
  std::string header = "EMMF";
  header += std::string(7, '\xff');
  header += '\x7f';
  const FrameScan scan = scan_frame(header);
  EXPECT_EQ(scan.status, FrameScan::Status::garbage);
  EXPECT_EQ(scan.problem,
            "not a frame: its header announces 9223372036854775807 payload bytes, over the limit "
            "of 1073741824");
}

TEST(Frame, OversizedPayloadCannotBeEncoded) {
  // Readable, never touched: the size is refused before any byte is read.
  const std::size_t size = kMaxFramePayload + 1;
  void* pages =
      ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  const std::string_view big(static_cast<const char*>(pages), size);
  EMM_EXPECT_THROW(ProcessError, encode_frame(big),
                   ::testing::StrEq("a frame payload of 1073741825 bytes is over the limit of "
                                    "1073741824 bytes; send less at a time"));
  ::munmap(pages, size);
}

TEST(CapturedOutput, KeepsEverythingUnderTheCap) {
  CapturedOutput output(8);
  output.append("0123");
  output.append("4567");
  output.append("89ab");
  EXPECT_EQ(output.total_bytes(), 12u);
  EXPECT_EQ(output.dropped_bytes(), 0u);
  EXPECT_EQ(output.text(), "0123456789ab");
  EXPECT_EQ(output.tail(6), "6789ab");
  EXPECT_EQ(output.tail(100), "0123456789ab");
}

TEST(CapturedOutput, KeepsHeadAndTailAndCountsWhatWasDropped) {
  CapturedOutput output(4);
  output.append("HEAD");
  for (int i = 0; i < 1000; ++i) output.append("xyz");
  output.append("TAIL");
  EXPECT_EQ(output.total_bytes(), 3008u);
  EXPECT_EQ(output.dropped_bytes(), 3000u);
  EXPECT_EQ(output.text(), "HEAD\n[... 3000 bytes dropped ...]\nTAIL");
  EXPECT_EQ(output.tail(2), "IL");
  EXPECT_EQ(output.tail(10), "TAIL") << "only the kept tail once bytes were dropped";
}

TEST(CapturedOutput, OneHugeAppendKeepsItsEnds) {
  CapturedOutput output(3);
  output.append("abc" + std::string(100, '-') + "xyz");
  EXPECT_EQ(output.text(), "abc\n[... 100 bytes dropped ...]\nxyz");
}

}  // namespace
}  // namespace emm::conformance
