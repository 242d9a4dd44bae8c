// CapturedOutput (child_process.hpp): a child may write gigabytes; the parent keeps the start
// (where a crash usually explains itself) and the end (its last words).
#include <string>

#include "emm/conformance/child_process.hpp"

namespace emm::conformance {

CapturedOutput::CapturedOutput(std::size_t keep) : keep_(keep) {}

void CapturedOutput::append(std::string_view bytes) {
  total_ += bytes.size();
  const std::size_t to_head = std::min(bytes.size(), keep_ - std::min(keep_, head_.size()));
  head_.append(bytes.substr(0, to_head));
  bytes.remove_prefix(to_head);
  if (bytes.empty()) return;
  if (bytes.size() >= keep_) {
    tail_.assign(bytes.substr(bytes.size() - keep_));
    return;
  }
  tail_.append(bytes);
  // Trimmed only past twice the size, so appending stays linear in the bytes kept.
  if (tail_.size() > 2 * keep_) tail_.erase(0, tail_.size() - keep_);
}

std::size_t CapturedOutput::dropped_bytes() const noexcept {
  const std::size_t kept = head_.size() + std::min(tail_.size(), keep_);
  return total_ - kept;
}

std::string CapturedOutput::text() const {
  const std::string_view tail =
      std::string_view(tail_).substr(tail_.size() - std::min(tail_.size(), keep_));
  const std::size_t dropped = dropped_bytes();
  if (dropped == 0) return head_ + std::string(tail);
  return head_ + "\n[... " + std::to_string(dropped) + " bytes dropped ...]\n" + std::string(tail);
}

std::string CapturedOutput::tail(std::size_t n) const {
  const std::string_view kept =
      std::string_view(tail_).substr(tail_.size() - std::min(tail_.size(), keep_));
  if (dropped_bytes() == 0) {
    // Head and tail are the whole stream, so the last n bytes may reach into the head.
    const std::string whole = head_ + std::string(kept);
    return whole.substr(whole.size() - std::min(n, whole.size()));
  }
  return std::string(kept.substr(kept.size() - std::min(n, kept.size())));
}

}  // namespace emm::conformance
