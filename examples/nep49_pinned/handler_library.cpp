// libemm_nep49_pinned.so: the pinned handler for `emm-certify --nep49-library`, and the driver
// binding emm-certify uses for both --nep49-library and --nep49 (emm/nep49/handler.hpp).
#include "emm/examples/pinned_handler.hpp"

extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() {
  return emm::examples::PinnedHandler::instance(false).handler();
}

// PATH:emm_nep49_pinned_mapped_handler certifies the mapped flavour.
extern "C" __attribute__((visibility("default"))) emm::nep49::Handler*
emm_nep49_pinned_mapped_handler() {
  return emm::examples::PinnedHandler::instance(true).handler();
}

extern "C" __attribute__((visibility("default"))) void emm_nep49_bind_driver(
    const std::shared_ptr<emm::Driver>* driver) {
  emm::examples::PinnedHandler::bind_driver(driver);
}
