// ipc_child.hpp — the second process of the GPU tests that call the IPC entry points directly.
//
// CUDA opens an IPC handle only in another process, and a forked child of a process that
// initialised CUDA cannot use it, so the test binary executes itself: main() sees
// kIpcChildFlag and runs ipc_child_main() instead of the tests. The child retains the primary
// context of the device it is given, makes it current, runs one scenario over the handles and
// prints what each driver call answered, one "key=value" line each (values are CUresult names
// or numbers), so the parent can assert every step and print everything the child saw.
//
//   const IpcChildReport seen = run_ipc_child("open-twice", 0, {handle});
//   EXPECT_EQ(seen.value("open2"), "CUDA_SUCCESS") << seen.text;
//
// Scenarios ("<n>" numbers the handles from 0):
//   open-twice    handle 0: open1, open2 (both with CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
//                 same_address (1 when both opens returned one address), close1,
//                 read_after_one_close (a 1-byte cuMemcpyDtoH through the mapping), close2,
//                 close3 (a close beyond the opens)
//   open-each     every handle: open<n>; when it opened, memory_type<n>, ordinal<n>,
//                 range_offset<n> (mapping - CU_POINTER_ATTRIBUTE_RANGE_START_ADDR),
//                 range_size<n>, close<n>
//   free-mapping  handle 0: open, free (cuMemFree of the mapping), close
//
// Test-only code. run_ipc_child() is re-entrant; ipc_child_main() runs once per child.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "emm/cuda_api.hpp"

namespace emm::gpu_test {

inline constexpr std::string_view kIpcChildFlag = "--emm-ipc-child";

struct IpcChildReport {
  std::map<std::string, std::string> values;  // from the child's "key=value" lines
  std::string text;                           // everything it printed, and how it ended

  // The value printed for `key`, or "<not printed>".
  std::string value(const std::string& key) const;
};

// Runs this test binary as the child (see above); its report, or a report whose text says why
// the child could not run (the assertions on its values then fail and show that text).
IpcChildReport run_ipc_child(const std::string& scenario, int device,
                             const std::vector<CUipcMemHandle>& handles);

// The child's main(): `arguments` are what follows kIpcChildFlag. Exit status 0 when the
// scenario ran (whatever the driver answered), 2 when the arguments or the driver were unusable.
int ipc_child_main(const std::vector<std::string>& arguments);

}  // namespace emm::gpu_test
