#include "emm/pending_deallocs.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <utility>

#include "emm/diagnostics.hpp"

namespace emm {
namespace {

constexpr const char* kCountVar = "EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT";
constexpr const char* kRatioVar = "EMM_CUDA_MAX_PENDING_DEALLOCS_RATIO";

std::optional<std::size_t> parse_count(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return {};
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return {};
  return static_cast<std::size_t>(value);
}

std::optional<double> parse_ratio(const std::string& text) {
  if (text.empty()) return {};
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(value) || value < 0) return {};
  return value;
}

}  // namespace

DeallocConfig DeallocConfig::from_environment(
    const std::function<std::optional<std::string>(const char*)>& getenv) {
  DeallocConfig config;
  if (auto text = getenv(kCountVar)) {
    if (auto value = parse_count(*text)) {
      config.max_count = *value;
    } else {
      Diagnostics::warn(kCountVar, "cannot parse '" + *text +
                                       "' as a non-negative integer; using the default " +
                                       std::to_string(kDefaultMaxCount));
    }
  }
  if (auto text = getenv(kRatioVar)) {
    if (auto value = parse_ratio(*text)) {
      config.ratio = *value;
    } else {
      Diagnostics::warn(kRatioVar, "cannot parse '" + *text +
                                       "' as a non-negative number; using the default " +
                                       std::to_string(kDefaultRatio));
    }
  }
  return config;
}

DeallocConfig DeallocConfig::from_environment() {
  return from_environment([](const char* name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name)) return std::string(value);
    return std::nullopt;
  });
}

PendingDeallocs::PendingDeallocs(DeallocConfig config, std::size_t memory_capacity)
    : capacity_(memory_capacity), config_(config) {}

PendingDeallocs::~PendingDeallocs() = default;

bool PendingDeallocs::over_threshold_locked() const {
  const auto limit =
      static_cast<std::size_t>(std::floor(static_cast<double>(capacity_) * config_.ratio));
  return items_.size() > config_.max_count || bytes_ > limit;
}

void PendingDeallocs::add_item(std::function<void()> destructor, std::size_t size) {
  bool flush;
  {
    std::lock_guard lock(mutex_);
    items_.push_back({std::move(destructor), size});
    bytes_ += size;
    flush = disable_count_ == 0 && over_threshold_locked();
  }
  if (flush) clear();
}

void PendingDeallocs::clear() {
  std::lock_guard flushing(flush_mutex_);
  std::deque<Item> batch;  // taken from items_ under the lock, run outside it
  {
    std::lock_guard lock(mutex_);
    if (disable_count_ > 0) return;  // DEFER-5 / DEALLOC-4: a no-op inside defer_cleanup
    if (items_.empty()) return;
    batch.swap(items_);
    bytes_ = 0;
  }
  // FIFO; DEALLOC-5: every destructor runs even if an earlier one throws.
  std::exception_ptr first_error;
  for (Item& item : batch) {
    try {
      item.destructor();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

CleanupGuard PendingDeallocs::disable() {
  {
    std::lock_guard lock(mutex_);
    ++disable_count_;
  }
  // Leaving does not flush (Numba: the next threshold crossing or explicit clear() does).
  return CleanupGuard([this] {
    std::lock_guard lock(mutex_);
    --disable_count_;
  });
}

bool PendingDeallocs::is_disabled() const {
  std::lock_guard lock(mutex_);
  return disable_count_ > 0;
}

std::size_t PendingDeallocs::count() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

std::size_t PendingDeallocs::pending_bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t PendingDeallocs::memory_capacity() const {
  std::lock_guard lock(mutex_);
  return capacity_;
}

void PendingDeallocs::set_memory_capacity(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  capacity_ = bytes;
}

bool PendingDeallocs::memory_capacity_set() const {
  std::lock_guard lock(mutex_);
  return capacity_ != 0;
}

std::size_t PendingDeallocs::max_pending_bytes() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::floor(static_cast<double>(capacity_) * config_.ratio));
}

void PendingDeallocs::set_config(DeallocConfig config) {
  std::lock_guard lock(mutex_);
  config_ = config;
}

}  // namespace emm
