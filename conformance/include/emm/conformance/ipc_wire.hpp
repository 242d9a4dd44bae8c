// emm/conformance/ipc_wire.hpp — the one wire format between an IPC exporter and the importing
// process: the request lists serialized emm::IpcHandles and what to do with each; the response
// gives, per handle, the bytes the importer read or why it could not.
//
// Users: the conformance IPC checks (ClauseRun::import_elsewhere), the reference GPU suite and
// the CUDA driver tests, all through run_import() and the emm-ipc-importer program
// (ipc_importer.hpp). The request travels as one frame (child_process.hpp) on the importer's
// command channel, the response as one frame on its result channel; the importer's stdout and
// stderr carry diagnostics only.
//
//   ImportRequest request;
//   request.items.push_back({handle.serialize()});          // read the view's bytes
//   request.items.back().fill = 0x5a;                        // then overwrite them
//   std::string wire = encode_import_request(request);
//   ImportRequest same = decode_import_request(wire);        // throws IpcWireError on garbage
//
// Encoding, integers little-endian:
//   request  = "EMMIPCQ" version:u8 count:u32 item{count}
//   item     = context:u8 flags:u8 fill:u8 handle_size:u32 handle-bytes
//              context 0: device 0, 1: the handle's source device;
//              flags bit 0: check the state machine, bit 1: fill (other bits must be 0)
//   response = "EMMIPCA" version:u8 error_size:u32 error count:u32 answer{count}
//   answer   = ok:u8 size:u64 (ok 1: the bytes read, 0: the error message)
// Decoding validates every field against these limits and rejects trailing bytes: input from
// another process is never trusted (IPC-4 asks the same of IpcHandle::deserialize()).
//
// Thread-safety: the functions are pure and re-entrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/errors.hpp"

namespace emm::conformance {

// Bytes that are not a well-formed request or response. The message says which field is wrong.
class IpcWireError : public Error {
 public:
  using Error::Error;
};

inline constexpr std::uint8_t kIpcWireVersion = 1;
inline constexpr std::size_t kMaxImportItems = 4096;
inline constexpr std::size_t kMaxSerializedHandle = 4096;

// Which context of the importing runtime opens a handle.
enum class ImportContext : std::uint8_t {
  device_0 = 0,       // runtime.get_context(0); a handle from another device is staged (spec 2.8)
  source_device = 1,  // the context of the handle's source_info device (device 0 without one)
};

struct ImportItem {
  std::vector<std::byte> handle;  // IpcHandle::serialize()
  ImportContext context = ImportContext::device_0;
  // IPC-3 in the importing process: the deserialized handle has no base, a second open() is
  // refused with IpcStateError "IpcHandle is already opened", and the view has the handle's size.
  bool check_state_machine = false;
  // After reading, set every byte of the view to this value (and synchronize), so the exporter
  // can check that the importer's writes landed in exactly [offset, offset + size).
  std::optional<std::uint8_t> fill;
};

struct ImportRequest {
  std::vector<ImportItem> items;
};

// One handle's outcome in the importing process.
struct ImportAnswer {
  bool ok = false;
  std::vector<std::byte> bytes;  // the view's bytes as the importer read them (ok)
  std::string error;             // why the import failed (!ok)
};

struct ImportResponse {
  // Set when the request as a whole was refused (it was malformed); `answers` is then empty.
  std::string error;
  std::vector<ImportAnswer> answers;  // one per request item, in order
};

std::string encode_import_request(const ImportRequest& request);
ImportRequest decode_import_request(std::string_view bytes);  // throws IpcWireError
std::string encode_import_response(const ImportResponse& response);
ImportResponse decode_import_response(std::string_view bytes);  // throws IpcWireError

}  // namespace emm::conformance
