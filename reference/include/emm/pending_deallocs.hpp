// emm/pending_deallocs.hpp — the deferred-deallocation queue (Numba's _PendingDeallocs).
//
// Frees are queued and run in batches, because cuMemFree synchronises the device. A flush
// (clear()) runs when, after adding an item,
//   count  > max_count                          (default 10: the 11th pending item flushes), or
//   bytes  > floor(memory_capacity * ratio)     (default ratio 0.2; strict, floored),
// and explicitly (reset, out-of-memory retry). While a defer_cleanup scope is active (disable()),
// every flush is a no-op; leaving the scope does not flush (DEFER-5, DEALLOC-4).
//
// Flush is FIFO. Where Numba stops at the first destructor that throws and leaves the rest
// queued, the reference runs every remaining destructor and then throws the first error, so
// nothing is lost or leaked (DEALLOC-5; listed in docs/differences.md).
//
// Configuration: EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT / EMM_CUDA_MAX_PENDING_DEALLOCS_RATIO are
// read by DeallocConfig::from_environment(); an unparsable value is reported through
// emm::Diagnostics and the default is used (DEALLOC-7).
//
// Thread-safety: every member may be called concurrently. Destructors run outside the lock,
// one flush at a time, in queue order.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "emm/cleanup_guard.hpp"

namespace emm {

struct DeallocConfig {
  static constexpr std::size_t kDefaultMaxCount = 10;
  static constexpr double kDefaultRatio = 0.2;

  std::size_t max_count = kDefaultMaxCount;
  double ratio = kDefaultRatio;

  // Reads the two variables through `getenv` (a function so tests need not touch the real
  // environment); warns through Diagnostics and keeps the default for unparsable values.
  static DeallocConfig from_environment(
      const std::function<std::optional<std::string>(const char*)>& getenv);
  static DeallocConfig from_environment();  // the process environment
};

class PendingDeallocs {
 public:
  // `memory_capacity` 0 means "not set" (Numba's _SizeNotSet): the byte limit is then 0 and
  // any item with a size flushes at once.
  explicit PendingDeallocs(DeallocConfig config = {}, std::size_t memory_capacity = 0);
  ~PendingDeallocs();  // does not flush: the owner decides (see reset()).

  PendingDeallocs(const PendingDeallocs&) = delete;
  PendingDeallocs& operator=(const PendingDeallocs&) = delete;

  // Queues `destructor` (which frees one handle) with its byte size (0 = size not set), then
  // flushes if a threshold is crossed. A flush error propagates (see clear()).
  void add_item(std::function<void()> destructor, std::size_t size = 0);

  // Runs every queued destructor, FIFO, unless disabled. If some threw, all others still ran;
  // the first exception is rethrown afterwards.
  void clear();

  // Enters a defer_cleanup scope: flushes are no-ops until every guard is released.
  CleanupGuard disable();
  bool is_disabled() const;

  std::size_t count() const;          // items queued
  std::size_t pending_bytes() const;  // bytes queued
  std::size_t memory_capacity() const;
  void set_memory_capacity(std::size_t bytes);
  bool memory_capacity_set() const;
  std::size_t max_pending_bytes() const;  // floor(capacity * ratio)
  const DeallocConfig& config() const noexcept { return config_; }
  void set_config(DeallocConfig config);

 private:
  struct Item {
    std::function<void()> destructor;
    std::size_t size;
  };
  bool over_threshold_locked() const;

  mutable std::mutex mutex_;
  std::mutex flush_mutex_;  // one flush at a time keeps FIFO order across threads
  std::deque<Item> items_;
  std::size_t bytes_ = 0;
  std::size_t capacity_ = 0;
  int disable_count_ = 0;
  DeallocConfig config_;
};

}  // namespace emm
