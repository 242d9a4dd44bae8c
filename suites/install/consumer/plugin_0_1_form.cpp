// The same plugin exported in the emmkit 0.1 form: EMM_EXPORT_MEMORY_MANAGER(Manager,
// DisplayName, Capabilities), the defer_cleanup text inside Capabilities. It must keep compiling
// (with deprecation warnings naming the new form) until 0.3.0, and load and certify as the
// 0.2 form does (CHANGELOG.md, docs/versioning.md).
#include "consumer_plugin.hpp"

namespace {
// Written as a 0.1 plugin wrote it.
constexpr emm::Capabilities kCapabilities0_1{
    .memory_info = true,
    .ipc = true,
    .thread_safe = true,
    .defer_cleanup_behaviour = "the reference manager's (0.1 form): frees are queued and flushed"};
}  // namespace

EMM_EXPORT_MEMORY_MANAGER(consumer::ConsumerPlugin, "install-consumer-0.1-form", kCapabilities0_1)
