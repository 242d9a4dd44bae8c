// Frames on the result and command channels (child_process.hpp): "EMMF", an 8-byte
// little-endian payload length, the payload. The magic lets the reader tell a frame from
// whatever else a broken child wrote; the length tells a complete frame from a cut one.
#include <cstdint>
#include <cstdio>
#include <string>

#include "emm/conformance/child_process.hpp"

namespace emm::conformance {
namespace {

constexpr std::string_view kMagic = "EMMF";

// "41 42 43 ..." for the first bytes, so a message shows what arrived instead of a frame.
std::string leading_bytes(std::string_view bytes) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(bytes.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(bytes[i])));
    if (i != 0) text += ' ';
    text += hex;
  }
  if (bytes.size() > shown) text += " ...";
  return text;
}

}  // namespace

std::string encode_frame(std::string_view payload) {
  if (payload.size() > kMaxFramePayload) {
    throw ProcessError("a frame payload of " + std::to_string(payload.size()) +
                       " bytes is over the limit of " + std::to_string(kMaxFramePayload) +
                       " bytes; send less at a time");
  }
  std::string frame(kMagic);
  std::uint64_t length = payload.size();
  for (int i = 0; i < 8; ++i) {
    frame += static_cast<char>(length & 0xFF);
    length >>= 8;
  }
  frame.append(payload);
  return frame;
}

FrameScan scan_frame(std::string_view bytes) {
  FrameScan scan;
  // A prefix of the magic may still become a frame; anything else never will.
  const std::size_t magic_seen = std::min(bytes.size(), kMagic.size());
  if (bytes.substr(0, magic_seen) != kMagic.substr(0, magic_seen)) {
    scan.status = FrameScan::Status::garbage;
    scan.problem = "not a frame: it starts with " + leading_bytes(bytes);
    return scan;
  }
  if (bytes.size() < kFrameHeaderSize) {
    scan.status = FrameScan::Status::incomplete;
    scan.problem = "truncated frame: " + std::to_string(bytes.size()) + " of the " +
                   std::to_string(kFrameHeaderSize) + " header bytes";
    return scan;
  }
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) {
    length = length << 8 |
             static_cast<unsigned char>(bytes[kMagic.size() + static_cast<std::size_t>(i)]);
  }
  if (length > kMaxFramePayload) {
    scan.status = FrameScan::Status::garbage;
    scan.problem = "not a frame: its header announces " + std::to_string(length) +
                   " payload bytes, over the limit of " + std::to_string(kMaxFramePayload);
    return scan;
  }
  scan.announced = static_cast<std::size_t>(length);
  const std::size_t available = bytes.size() - kFrameHeaderSize;
  if (available < length) {
    scan.status = FrameScan::Status::incomplete;
    scan.problem = "truncated frame: " + std::to_string(available) + " of its " +
                   std::to_string(length) + " payload bytes";
    return scan;
  }
  scan.status = FrameScan::Status::complete;
  scan.payload = bytes.substr(kFrameHeaderSize, static_cast<std::size_t>(length));
  scan.frame_size = kFrameHeaderSize + static_cast<std::size_t>(length);
  return scan;
}

std::optional<std::string> decode_frame(std::string_view bytes, std::string& problem) {
  if (bytes.empty()) {
    problem = "no bytes";
    return std::nullopt;
  }
  const FrameScan scan = scan_frame(bytes);
  if (scan.status != FrameScan::Status::complete) {
    problem = scan.problem;
    return std::nullopt;
  }
  if (scan.frame_size != bytes.size()) {
    problem = std::to_string(bytes.size() - scan.frame_size) + " bytes after the frame";
    return std::nullopt;
  }
  problem.clear();
  return std::string(scan.payload);
}

}  // namespace emm::conformance
