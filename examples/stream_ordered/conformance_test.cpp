// The conformance suite over the stream-ordered example (GoogleTest typed tests).
#include <emm/conformance/gtest.hpp>

#include "emm/examples/stream_ordered_capabilities.hpp"
#include "emm/examples/stream_ordered_memory_manager.hpp"

struct StreamOrderedTraits {
  using Plugin = emm::examples::StreamOrderedMemoryManager;
  static constexpr const char* name = "stream_ordered";
  static constexpr emm::Capabilities capabilities =
      emm::complete_capabilities<Plugin>(emm::examples::kStreamOrderedCapabilities);
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(StreamOrdered, StreamOrderedTraits);
