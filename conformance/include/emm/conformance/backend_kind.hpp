// emm/conformance/backend_kind.hpp — the backends a clause can run on: the fake driver or a GPU.
//
//   BackendKind kind = *parse_backend("gpu");
//   std::cout << to_string(kind);   // "gpu"
//
// Plain values; the functions are pure and may be called from any thread.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "emm/conformance/exploration.hpp"

namespace emm::conformance {

// The backends, one row each, in the order a certificate lists them. A row's descriptor (its
// name, factory, availability and the facts the runner acts on) is defined beside the backend,
// as `<row>_backend_descriptor` in conformance/src/core/<row>_backend.cpp: adding a backend is
// this row and that file (docs/architecture.md).
#define EMM_BACKEND_KINDS(X) \
  X(fake)                    \
  X(gpu)

enum class BackendKind {
#define EMM_BACKEND_KIND_ENUMERATOR(row) row,
  EMM_BACKEND_KINDS(EMM_BACKEND_KIND_ENUMERATOR)
#undef EMM_BACKEND_KIND_ENUMERATOR
};

inline constexpr std::array kBackendKinds{
#define EMM_BACKEND_KIND_VALUE(row) BackendKind::row,
    EMM_BACKEND_KINDS(EMM_BACKEND_KIND_VALUE)
#undef EMM_BACKEND_KIND_VALUE
};

// How make_backend() (backend.hpp) builds a backend, and how the clauses run on it explore
// sequences; emm-certify's --devices sets fake_devices, --seed and --budget the exploration.
struct BackendSettings {
  // Devices of the fake machine: identical, without peer access, so that IPC between them is
  // staged (spec 2.8). Two by default, as spec §7 says, so that the DEV clauses run on a
  // machine without a GPU (emm-certify --devices 1 opts out). The gpu backend uses every GPU
  // the driver sees.
  int fake_devices = 2;
  // The seed and the sequences per clause of the property engine (exploration.hpp).
  Exploration exploration{};
};
inline constexpr int kMaxFakeDevices = 16;

// "fake", "gpu".
[[nodiscard]] std::string_view to_string(BackendKind kind) noexcept;
[[nodiscard]] std::optional<BackendKind> parse_backend(std::string_view text) noexcept;

}  // namespace emm::conformance
