// emm_process_test_child — an exec'd child that uses the child side of child_process.hpp, for
// the process suite:
//   echo        answers every command frame with "echo:<payload>" until the channel closes
//   channels    prints $EMM_CHILD_CHANNELS
//   send TEXT   sends TEXT on the result channel
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "emm/conformance/child_process.hpp"

int main(int argc, char** argv) {
  using namespace emm::conformance;
  if (argc >= 2 && std::strcmp(argv[1], "echo") == 0) {
    while (std::optional<std::string> command = read_command_frame()) {
      send_result_frame("echo:" + *command);
    }
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "channels") == 0) {
    const char* value = std::getenv(kChannelsEnvironmentVariable);
    std::printf("%s\n", value != nullptr ? value : "(unset)");
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "send") == 0) {
    send_result_frame(argv[2]);
    return 0;
  }
  std::fprintf(stderr, "usage: %s echo | channels | send TEXT\n", argv[0]);
  return 2;
}
