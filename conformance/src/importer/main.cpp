// emm-ipc-importer — the second process of the GPU IPC checks (IPC-1, IPC-2).
//
// Reads serialized IPC handles (hex, one a line) from stdin, opens each with the default
// manager on the real driver, and answers "OK <hex bytes>" or "ERR <message>" per handle.
// Started by emm-certify and by the conformance test binaries; not meant for direct use.
#include <iostream>

#include "emm/conformance/ipc_importer.hpp"

int main() { return emm::conformance::ipc_importer_main(std::cin, std::cout); }
