// fuzz_ipc_wire — the IPC import wire codec (ipc_wire.hpp) on arbitrary bytes: each input is
// decoded as a request (what emm-ipc-importer reads from the certifier) and as a response (what
// the certifier reads back from the importer, which runs plugin code). Both refuse malformed
// bytes with IpcWireError, nothing else.
//
// Findings (abort): any other exception; an accepted message that does not survive the codec
// (encode, decode again, encode again: the same bytes).
//
// Seeds (EMM_FUZZ_WRITE_SEEDS, fuzz_support.hpp): requests with one and several handles (a real
// IpcHandle record among them) and responses with answers, failures and a refusal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/ipc_wire.hpp"
#include "emm/ipc_handle.hpp"
#include "fuzz_support.hpp"

namespace emm::fuzz {
namespace {

using conformance::ImportAnswer;
using conformance::ImportContext;
using conformance::ImportItem;
using conformance::ImportRequest;
using conformance::ImportResponse;
using conformance::IpcWireError;

std::vector<std::byte> bytes_of(std::string_view text) {
  const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
  return {bytes.begin(), bytes.end()};
}

void write_seeds(const std::string& directory) {
  CUipcMemHandle raw{};
  for (std::size_t i = 0; i < sizeof raw.reserved; ++i) raw.reserved[i] = static_cast<char>(i);
  const std::vector<std::byte> record =
      IpcHandle(nullptr, raw, 1000, DeviceIdentity{0, 1, 0}, 4099).serialize();

  ImportRequest one;
  one.items.push_back(ImportItem{record, ImportContext::device_0, false, std::nullopt});
  write_seed(directory, "request-one", conformance::encode_import_request(one));

  ImportRequest several;
  several.items.push_back(ImportItem{record, ImportContext::source_device, true, std::nullopt});
  several.items.push_back(ImportItem{record, ImportContext::device_0, false, 0x5a});
  several.items.push_back(ImportItem{bytes_of("not a handle"), ImportContext::device_0, true, 0});
  write_seed(directory, "request-several", conformance::encode_import_request(several));

  ImportResponse answered;
  answered.answers.push_back(ImportAnswer{true, bytes_of("the view's bytes"), ""});
  answered.answers.push_back(
      ImportAnswer{false, {}, "cuIpcOpenMemHandle failed: CUDA_ERROR_INVALID_VALUE"});
  write_seed(directory, "response-answers", conformance::encode_import_response(answered));

  ImportResponse refused;
  refused.error = "malformed IPC import request: 3 bytes after the last field";
  write_seed(directory, "response-refused", conformance::encode_import_response(refused));
}

template <class Message, class Decode, class Encode>
void round_trip(std::string_view input, Decode decode, Encode encode, const char* what) {
  Message message;
  try {
    message = decode(input);
  } catch (const IpcWireError&) {
    return;
  }
  const std::string once = encode(message);
  Message again;
  try {
    again = decode(once);
  } catch (const IpcWireError& error) {
    finding(std::string("the ") + what +
            " decoder refuses what its encoder wrote: " + error.what());
  }
  if (encode(again) != once) {
    finding(std::string("the ") + what + " codec does not keep a " + what);
  }
}

}  // namespace
}  // namespace emm::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const auto directory = emm::fuzz::seed_directory()) {
    emm::fuzz::write_seeds(*directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = emm::fuzz::as_text(data, size);
  emm::fuzz::round_trip<emm::conformance::ImportRequest>(
      input, emm::conformance::decode_import_request, emm::conformance::encode_import_request,
      "request");
  emm::fuzz::round_trip<emm::conformance::ImportResponse>(
      input, emm::conformance::decode_import_response, emm::conformance::encode_import_response,
      "response");
  return 0;
}
