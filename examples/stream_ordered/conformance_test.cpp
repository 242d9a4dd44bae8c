// The conformance suite over the stream-ordered example (GoogleTest typed tests).
#include <emm/conformance/gtest.hpp>

#include "emm/examples/stream_ordered_declaration.hpp"
#include "emm/examples/stream_ordered_memory_manager.hpp"

struct StreamOrderedTraits {
  using Plugin = emm::examples::StreamOrderedMemoryManager;
  static constexpr emm::PluginDeclaration declaration = emm::examples::kStreamOrderedDeclaration;
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(StreamOrdered, StreamOrderedTraits);
