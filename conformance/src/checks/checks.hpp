// checks.hpp — private to emm_conformance: the per-group registration functions and the
// helpers the check bodies share (patterns, overlap bookkeeping, guarded plugin calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/registry.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/runtime.hpp"

namespace emm::conformance::checks {

void register_reg_checks(CheckRegistry& registry);
void register_life_checks(CheckRegistry& registry);
void register_alloc_checks(CheckRegistry& registry);
void register_fin_checks(CheckRegistry& registry);
void register_defer_checks(CheckRegistry& registry);
void register_info_checks(CheckRegistry& registry);
void register_ipc_checks(CheckRegistry& registry);
void register_perf_checks(CheckRegistry& registry);

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

// Deterministic pseudo-random bytes (xorshift), different for each seed.
std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed);

// Writes pattern(size, seed) to device memory.
void write_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                   std::string_view what);
// Fails unless the device bytes equal pattern(size, seed), naming the first difference.
void expect_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                    std::string_view what);
// Writes a fresh pattern and reads it back: the range is readable and writable.
void expect_read_write(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                       std::string_view what);
// Fails naming the first byte where `seen` differs from `expected` (sizes included).
void expect_same_bytes(ClauseRun& run, const std::vector<std::byte>& seen,
                       const std::vector<std::byte>& expected, std::string_view what);

// memalloc through the host (Context::memalloc); any exception becomes a failure naming the
// call. Checks the result is non-null and has the requested size.
std::shared_ptr<MemoryPointer> allocate(ClauseRun& run, Context& context, std::size_t size,
                                        std::string_view why = {});
// The same, straight on the plugin (the caller made its context current).
std::shared_ptr<MemoryPointer> allocate(ClauseRun& run, BaseCUDAMemoryManager& manager,
                                        std::size_t size, std::string_view why = {});

bool overlap(CUdeviceptr a, std::size_t a_size, CUdeviceptr b, std::size_t b_size);

// Live device ranges, each with a description; reports the first one a new range overlaps.
class IntervalSet {
 public:
  // Adds [begin, begin + size) unless it overlaps a live range; returns that range's
  // description when it does (and adds nothing).
  std::optional<std::string> insert(CUdeviceptr begin, std::size_t size, std::string what);
  void erase(CUdeviceptr begin);
  std::size_t size() const noexcept { return ranges_.size(); }

 private:
  struct Range {
    CUdeviceptr end;
    std::string what;
  };
  std::map<CUdeviceptr, Range> ranges_;
};

// A context built like the host builds one, but not yet made current nor initialized: the
// plugin has only been constructed (with no context current, LIFE-4). For LIFE-4/LIFE-5.
class BareContext {
 public:
  explicit BareContext(ClauseRun& run);
  ~BareContext();
  BareContext(const BareContext&) = delete;
  BareContext& operator=(const BareContext&) = delete;
  Context& context() { return *context_; }
  BaseCUDAMemoryManager& manager() { return context_->memory_manager(); }

 private:
  ClauseRun& run_;
  std::unique_ptr<Runtime> runtime_;
  CUcontext handle_ = nullptr;
  std::unique_ptr<Context> context_;
};

// Fails when `capture` saw exceptions thrown by finalizers (ignored by the host), quoting the
// first; `when` says what was going on.
void expect_no_ignored_exceptions(ClauseRun& run, const Diagnostics::Capture& capture,
                                  std::string_view when);

}  // namespace emm::conformance::checks
