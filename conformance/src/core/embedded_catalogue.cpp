// The catalogue embedded at build time (catalogue_data.cpp, written by
// emm_generate_clause_skeleton from conformance/catalogue.tsv), parsed once on first use.
#include "emm/conformance/catalogue.hpp"

namespace emm::conformance {
namespace detail {
extern const unsigned char kCatalogueTsv[];
}  // namespace detail

std::string_view catalogue_text() noexcept {
  return reinterpret_cast<const char*>(detail::kCatalogueTsv);
}

const Catalogue& catalogue() {
  static const Catalogue instance = Catalogue::parse(catalogue_text());
  return instance;
}

}  // namespace emm::conformance
