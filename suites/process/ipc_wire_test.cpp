// The IPC import wire format (ipc_wire.hpp): round trips, and every malformed input refused with
// a message naming the field.
#include "emm/conformance/ipc_wire.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <emm/conformance/testing/expect_throw.hpp>
#include <string>

namespace emm::conformance {
namespace {

using ::testing::StrEq;

std::vector<std::byte> bytes_of(std::string_view text) {
  std::vector<std::byte> bytes;
  for (char c : text) bytes.push_back(static_cast<std::byte>(c));
  return bytes;
}

ImportRequest sample_request() {
  ImportRequest request;
  ImportItem plain;
  plain.handle = bytes_of("first handle");
  ImportItem checked;
  checked.handle = bytes_of(std::string("second\0handle", 13));
  checked.context = ImportContext::source_device;
  checked.check_state_machine = true;
  checked.fill = 0x5a;
  request.items = {plain, checked};
  return request;
}

TEST(IpcWire, ARequestRoundTrips) {
  const ImportRequest decoded = decode_import_request(encode_import_request(sample_request()));
  ASSERT_EQ(decoded.items.size(), 2u);
  EXPECT_EQ(decoded.items[0].handle, bytes_of("first handle"));
  EXPECT_EQ(decoded.items[0].context, ImportContext::device_0);
  EXPECT_FALSE(decoded.items[0].check_state_machine);
  EXPECT_EQ(decoded.items[0].fill, std::nullopt);
  EXPECT_EQ(decoded.items[1].handle, bytes_of(std::string("second\0handle", 13)));
  EXPECT_EQ(decoded.items[1].context, ImportContext::source_device);
  EXPECT_TRUE(decoded.items[1].check_state_machine);
  EXPECT_EQ(decoded.items[1].fill, 0x5a);
  EXPECT_TRUE(decode_import_request(encode_import_request({})).items.empty());
}

TEST(IpcWire, AResponseRoundTrips) {
  ImportResponse response;
  response.answers = {{true, bytes_of("read back"), ""}, {true, {}, ""}, {false, {}, "no"}};
  const ImportResponse decoded = decode_import_response(encode_import_response(response));
  EXPECT_EQ(decoded.error, "");
  ASSERT_EQ(decoded.answers.size(), 3u);
  EXPECT_TRUE(decoded.answers[0].ok);
  EXPECT_EQ(decoded.answers[0].bytes, bytes_of("read back"));
  EXPECT_TRUE(decoded.answers[1].ok);
  EXPECT_TRUE(decoded.answers[1].bytes.empty());
  EXPECT_FALSE(decoded.answers[2].ok);
  EXPECT_EQ(decoded.answers[2].error, "no");

  ImportResponse refused;
  refused.error = "malformed";
  EXPECT_EQ(decode_import_response(encode_import_response(refused)).error, "malformed");
}

TEST(IpcWire, AnErrorWithoutAMessageStillSaysSomething) {
  ImportResponse response;
  response.answers = {{false, {}, ""}};
  EXPECT_EQ(decode_import_response(encode_import_response(response)).answers[0].error,
            "(no message)");
}

TEST(IpcWire, ARequestWithTheWrongMagicOrVersionIsRefused) {
  EMM_EXPECT_THROW(IpcWireError, decode_import_request("hello"),
                   StrEq("malformed IPC import request: it does not start with \"EMMIPCQ\" (not "
                         "an import request)"));
  std::string wire = encode_import_request({});
  wire[7] = 9;
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(wire),
                   StrEq("malformed IPC import request: version 9 (this kit speaks version 1; "
                         "use an emm-ipc-importer of the same kit)"));
}

TEST(IpcWire, EveryFieldOfARequestIsValidated) {
  const std::string good = encode_import_request(sample_request());
  // Magic (7), version (1), count (4), then the first item: context, flags, fill, size (4).
  std::string wire = good;
  wire[8] = '\x88';
  wire[9] = '\x13';  // 5000 handles
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(wire),
                   StrEq("malformed IPC import request: it announces 5000 handles, more than the "
                         "limit of 4096"));
  wire = good;
  wire[12] = 7;
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(wire),
                   StrEq("malformed IPC import request: handle 0 has context 7 (0: device 0, 1: "
                         "source device)"));
  wire = good;
  wire[13] = 4;
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(wire),
                   StrEq("malformed IPC import request: handle 0 has unknown flags 4"));
  wire = good;
  wire[15] = 0;
  wire[16] = 0x20;  // 8192 bytes
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(wire),
                   StrEq("malformed IPC import request: handle 0 announces 8192 bytes, more than "
                         "the limit of 4096"));
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(good.substr(0, good.size() - 3)),
                   StrEq("malformed IPC import request: truncated: a handle announces 13 bytes, "
                         "10 are left"));
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(good.substr(0, 10)),
                   StrEq("malformed IPC import request: truncated: the handle count needs 4 "
                         "bytes, 2 are left"));
  EMM_EXPECT_THROW(IpcWireError, decode_import_request(good + "xyz"),
                   StrEq("malformed IPC import request: 3 bytes after the last field"));
}

TEST(IpcWire, EveryFieldOfAResponseIsValidated) {
  ImportResponse response;
  response.answers = {{true, bytes_of("abc"), ""}};
  const std::string good = encode_import_response(response);
  EMM_EXPECT_THROW(IpcWireError, decode_import_response("EMMIPCQ"),
                   StrEq("malformed IPC import response: it does not start with \"EMMIPCA\" (not "
                         "an import response)"));
  // Magic (7), version (1), error size (4), count (4), then status (1), size (8), bytes.
  std::string wire = good;
  wire[16] = 2;
  EMM_EXPECT_THROW(IpcWireError, decode_import_response(wire),
                   StrEq("malformed IPC import response: answer 0 has status 2"));
  wire = good;
  wire[17] = 100;
  EMM_EXPECT_THROW(IpcWireError, decode_import_response(wire),
                   StrEq("malformed IPC import response: truncated: the bytes read announces 100 "
                         "bytes, 3 are left"));
  wire = good;
  wire[16] = 0;
  wire[17] = 0;
  wire.resize(25);
  EMM_EXPECT_THROW(IpcWireError, decode_import_response(wire),
                   StrEq("malformed IPC import response: answer 0 is an error without a message"));
  EMM_EXPECT_THROW(IpcWireError, decode_import_response(good + "!"),
                   StrEq("malformed IPC import response: 1 bytes after the last field"));

  ImportResponse refused;
  refused.error = "no";
  wire = encode_import_response(refused);
  wire[14] = 1;  // and one answer
  wire += '\x01';
  wire += std::string(8, '\0');
  EMM_EXPECT_THROW(IpcWireError, decode_import_response(wire),
                   StrEq("malformed IPC import response: it both refuses the request and answers 1 "
                         "handles"));
}

TEST(IpcWire, TooManyItemsCannotBeEncoded) {
  ImportRequest request;
  request.items.resize(kMaxImportItems + 1);
  EMM_EXPECT_THROW(IpcWireError, encode_import_request(request),
                   StrEq("an IPC import request holds at most 4096 handles, not 4097; split it "
                         "into several requests"));
}

}  // namespace
}  // namespace emm::conformance
