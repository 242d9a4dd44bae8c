// checks.hpp — private to the conformance core: how a check body is declared, and the helpers
// the bodies share (patterns, device access, overlap bookkeeping, memory comparisons).
//
// A plugin clause's body is the explicit specialisation check<PluginClause::KEY>, written
//
//   EMM_CHECK(LIFE_2) {   // in <group>_checks.cpp; `run` is the ClauseRun
//     ...
//   }
//
// Every plugin clause of the catalogue is declared here (from EMM_PLUGIN_CLAUSES), so a body for
// an id that is not in the catalogue does not compile and a missing body does not link.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/clause_run.hpp"
#include "emm/conformance/ipc_importer.hpp"
#include "emm/conformance/plugin_clauses.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/runtime.hpp"

namespace emm::conformance::checks {

template <PluginClause>
void check(ClauseRun& run);

#define EMM_CHECK_DECLARATION_(Key, Id, TestName) \
  template <>                                     \
  void check<PluginClause::Key>(ClauseRun & run);
EMM_PLUGIN_CLAUSES(EMM_CHECK_DECLARATION_)
#undef EMM_CHECK_DECLARATION_

#define EMM_CHECK(Key) \
  template <>          \
  void check<PluginClause::Key>(ClauseRun & run)

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

// Deterministic pseudo-random bytes (a hash of each word's index and the seed), different for
// each seed.
std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed);

// Reads/writes device memory through the driver; a driver error, or an access the backend saw
// touch memory that is not allocated, fails the clause naming `what` was being accessed.
std::vector<std::byte> read_device(ClauseRun& run, CUdeviceptr pointer, std::size_t size,
                                   std::string_view what);
void write_device(ClauseRun& run, CUdeviceptr pointer, const std::vector<std::byte>& bytes,
                  std::string_view what);

// Writes pattern(size, seed) to device memory (large ranges a piece at a time, through one
// small host buffer).
void write_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                   std::string_view what);
// Fails unless the device bytes equal pattern(size, seed), naming the first difference.
void expect_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                    std::string_view what);
// Fails unless every device byte of the range is `value`, naming the first that is not ("<what>
// <when>: byte ..."); a read that fails names `what`.
void expect_filled(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::byte value,
                   std::string_view what, std::string_view when);
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

// The comparison every "nothing was lost" check makes: device memory in use now against
// `baseline` (a backend().device_bytes_in_use() figure). When it grew by more than `allowance`
// plus the backend's slack, fails with
//   "<when>, <growth> bytes more device memory are in use than <than> (<baseline> -> <now>)<why>"
// Returns the growth (0 when it shrank).
std::size_t expect_no_growth(ClauseRun& run, std::size_t baseline, std::string_view when,
                             std::string_view than, std::string_view why,
                             std::size_t allowance = 0);

// A flush point for deferred frees: the HostOnlyCUDAMemoryManager queue of `manager` is cleared
// (others have no queue the kit can name: nothing is done).
void flush_point(BaseCUDAMemoryManager& manager);

// Serves `request` in another process (Backend::import_elsewhere); a failure to run that
// process, or a request it refused as a whole, fails the clause. One answer per item.
std::vector<ImportAnswer> import_elsewhere(ClauseRun& run, const ImportRequest& request);

// Fails when the backend counted invalid frees since `before` (a backend().invalid_frees()
// figure); records an unobservable note when the backend does not count them.
void expect_no_invalid_frees(ClauseRun& run, std::optional<std::size_t> before,
                             std::string_view what);

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

// --- an allocation referenced six ways (FIN-1's and MANAGED-2's release-order scenarios) -------
// True while the allocation behind `base` has not been finalized.
bool alive(const std::weak_ptr<MemoryPointer>& base);
// True once it has: gone, or its finalizer ran.
bool finalized(const std::weak_ptr<MemoryPointer>& base);
// True when the driver block at `pointer` is exactly this allocation (the plugin allocates
// straight from the driver), so the driver shows when it is freed.
bool exact_driver_allocation(const std::optional<AddressRange>& block, CUdeviceptr pointer,
                             std::size_t size);
// `memory` itself, a copy of it, its own(), its view(0), its view(1) and
// view(16, 4096)->view(8), in that order (what `labels` of six names describe).
std::vector<std::shared_ptr<MemoryPointer>> six_references(
    const std::shared_ptr<MemoryPointer>& memory);
// "label, label, ..." for `indices` into those six.
std::string reference_names(const std::array<const char*, 6>& labels,
                            const std::vector<std::size_t>& indices);

}  // namespace emm::conformance::checks
