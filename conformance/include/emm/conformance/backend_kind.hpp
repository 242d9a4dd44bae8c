// emm/conformance/backend_kind.hpp — the backends a clause can run on: the fake driver or a GPU.
//
//   BackendKind kind = *parse_backend("gpu");
//   std::cout << to_string(kind);   // "gpu"
//
// Plain enumeration; the functions are pure.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace emm::conformance {

enum class BackendKind { fake, gpu };

inline constexpr std::array<BackendKind, 2> kBackendKinds{BackendKind::fake, BackendKind::gpu};

// "fake", "gpu".
std::string_view to_string(BackendKind kind) noexcept;
std::optional<BackendKind> parse_backend(std::string_view text) noexcept;

}  // namespace emm::conformance
