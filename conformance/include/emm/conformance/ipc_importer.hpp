// emm/conformance/ipc_importer.hpp — the importing side of the IPC checks (IPC-1, IPC-2).
//
// The exporter serializes each handle; another process deserializes it, opens it through its
// own Runtime (default manager), reads the view's bytes and closes it. On the fake backend
// that process is a second simulated process (FakeDriver::spawn_process()); on the gpu it is a
// real one: the emm-ipc-importer executable, fed over a pipe (CUDA cannot be used in a forked
// child of a CUDA process, so it is exec'd).
//
// Wire format (text, one line each): the exporter writes "<hex of serialized handle>\n" per
// handle and closes stdin; the importer answers "OK <hex of the bytes read>\n" or
// "ERR <message>\n" per handle, in order.
//
// Thread-safety: the functions are re-entrant.
#pragma once

#include <cstddef>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "emm/runtime.hpp"

namespace emm::conformance {

// What the importing process read for one serialized handle (IPC-1/2 end to end).
struct ImportResult {
  bool ok = false;
  std::vector<std::byte> bytes;  // the view's bytes, as the importer read them
  std::string error;             // why the import failed (when !ok)
};

// Opens, reads and closes each serialized handle in `runtime`'s device-0 context.
std::vector<ImportResult> import_handles(Runtime& runtime,
                                         const std::vector<std::vector<std::byte>>& handles);

// The executable: $EMM_IPC_IMPORTER, else emm-ipc-importer next to the running program, else
// the build tree's, else the install tree's. "" when none exists.
std::string find_ipc_importer();

// Runs `importer` as a child process over the wire format. Throws emm::Error when it cannot
// be started, does not answer within `timeout_s` or answers garbage.
std::vector<ImportResult> run_ipc_importer(const std::string& importer,
                                           const std::vector<std::vector<std::byte>>& handles,
                                           int timeout_s);

// emm-ipc-importer's main loop over the real driver.
int ipc_importer_main(std::istream& in, std::ostream& out);

std::string to_hex(const std::vector<std::byte>& bytes);
// Throws emm::Error on odd length or a non-hex digit.
std::vector<std::byte> from_hex(std::string_view text);

}  // namespace emm::conformance
