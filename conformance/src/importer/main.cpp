// emm-ipc-importer — the second process of the GPU IPC checks (IPC-1, IPC-2, IPC-3).
//
// Starts CUDA, says it is ready, then reads import requests (ipc_wire.hpp) from its command
// channel one after another, opens each handle with the default manager on the real driver, and
// answers each on its result channel (child_process.hpp), until the channel closes.
// Started by emm-certify, the conformance suites and the GPU suites through run_import(); not
// meant to be run by hand.
#include <cstdio>
#include <cstdlib>

#include "emm/conformance/child_process.hpp"
#include "emm/conformance/ipc_importer.hpp"

int main() {
  if (std::getenv(emm::conformance::kChannelsEnvironmentVariable) == nullptr) {
    std::fprintf(stderr,
                 "emm-ipc-importer: no command channel (%s is not set); this program is started "
                 "by emm-certify and the kit's tests through run_import(), not by hand\n",
                 emm::conformance::kChannelsEnvironmentVariable);
    return 2;
  }
  return emm::conformance::ipc_importer_main();
}
