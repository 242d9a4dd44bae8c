// The identity of the channel pipes, shared by the parent side (which records it and passes it
// on) and the child side (which checks it before every use).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace emm::conformance::detail {

// The pipe a channel descriptor must still be: fstat()'s st_dev and st_ino (both ends of one
// pipe report the same pair).
struct PipeIdentity {
  dev_t device = 0;
  ino_t inode = 0;
};

// The identity of `fd`, or nullopt when fstat() fails.
std::optional<PipeIdentity> identity_of(int fd);

// kChannelsEnvironmentVariable's value for an exec'd child.
std::string channels_environment_value(const std::optional<PipeIdentity>& result,
                                       const std::optional<PipeIdentity>& command);

// In a forked child, before its body runs: the channels are these (absent: none). Overrides
// whatever kChannelsEnvironmentVariable says, which belongs to this process's own parent.
void adopt_forked_channels(const std::optional<PipeIdentity>& result,
                           const std::optional<PipeIdentity>& command);

}  // namespace emm::conformance::detail
