#include "core/driver_ledger.hpp"

#include <cstdio>
#include <iterator>

#include "emm/cuda_api.hpp"

namespace emm::conformance {
namespace {

std::string hex(std::uint64_t value) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

void DriverLedger::made(const LedgerBlock& block) {
  const std::lock_guard lock(mutex_);
  const LedgerSpace space =
      block.kind == LedgerBlockKind::host_alloc || block.kind == LedgerBlockKind::host_registration
          ? LedgerSpace::host
          : LedgerSpace::device;
  // A block the ledger still holds at that address was freed in a way it did not see (its
  // context went with a call it does not follow): the driver's word wins.
  blocks(space).insert_or_assign(block.base, block);
  recently_freed_.erase(block.base);
}

void DriverLedger::freed(LedgerSpace space, std::uint64_t base, std::string_view call,
                         CUresult result, bool counts_as_free) {
  const std::lock_guard lock(mutex_);
  if (counts_as_free && base != 0) ++frees_;
  if (result != CUDA_SUCCESS) {
    ++invalid_frees_;
    {
      std::string text = std::string(call) + "(" + hex(base) + ") refused with " +
                         std::string(cuda_result_name(result));
      if (const auto before = recently_freed_.find(base); before != recently_freed_.end()) {
        text += " (freed before by " + std::string(before->second) + ")";
      } else if (const std::optional<LedgerBlock> live = containing(blocks(space), base)) {
        text += live->base == base ? " (a live block)"
                                   : " (an address inside a live block, not its start)";
      }
      if (invalid_descriptions_.size() == kDescriptionsKept) invalid_descriptions_.pop_front();
      invalid_descriptions_.push_back(std::move(text));
    }
    return;
  }
  if (blocks(space).erase(base) != 0) {
    if (recently_freed_.size() >= kFreedRemembered) recently_freed_.clear();
    recently_freed_.insert_or_assign(base, call);
  }
}

void DriverLedger::context_created(CUcontext context) {
  const std::lock_guard lock(mutex_);
  created_contexts_.insert(context);
}

template <typename Doomed>
void DriverLedger::drop_if(Doomed doomed) {
  for (Blocks* blocks : {&device_, &host_}) {
    for (auto it = blocks->begin(); it != blocks->end();) {
      it = doomed(it->second) ? blocks->erase(it) : std::next(it);
    }
  }
}

void DriverLedger::context_destroyed(CUcontext context) {
  const std::lock_guard lock(mutex_);
  created_contexts_.erase(context);
  drop_if([context](const LedgerBlock& block) { return block.context == context; });
}

void DriverLedger::primary_context_destroyed(int device) {
  const std::lock_guard lock(mutex_);
  drop_if([this, device](const LedgerBlock& block) {
    return block.context_device == device && !created_contexts_.contains(block.context);
  });
}

std::size_t DriverLedger::device_bytes() const {
  const std::lock_guard lock(mutex_);
  std::size_t bytes = 0;
  for (const auto& [base, block] : device_) {
    if (block.kind != LedgerBlockKind::ipc_mapping) bytes += block.size;
  }
  return bytes;
}

std::optional<LedgerBlock> DriverLedger::containing(const Blocks& blocks, std::uint64_t pointer) {
  auto next = blocks.upper_bound(pointer);
  if (next == blocks.begin()) return std::nullopt;
  const LedgerBlock& block = std::prev(next)->second;
  if (pointer == block.base || pointer - block.base < block.size) return block;
  return std::nullopt;
}

std::optional<LedgerBlock> DriverLedger::device_block_containing(std::uint64_t pointer) const {
  const std::lock_guard lock(mutex_);
  std::optional<LedgerBlock> block = containing(device_, pointer);
  if (block && block->kind == LedgerBlockKind::ipc_mapping) return std::nullopt;
  return block;
}

std::optional<LedgerBlock> DriverLedger::host_block_containing(std::uint64_t pointer) const {
  const std::lock_guard lock(mutex_);
  return containing(host_, pointer);
}

std::size_t DriverLedger::count(LedgerBlockKind kind) const {
  const std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const Blocks* blocks : {&device_, &host_}) {
    for (const auto& [base, block] : *blocks) n += block.kind == kind ? 1 : 0;
  }
  return n;
}

std::set<CUcontext> DriverLedger::contexts_holding_blocks() const {
  const std::lock_guard lock(mutex_);
  std::set<CUcontext> contexts;
  for (const auto& [base, block] : device_) {
    if (block.kind != LedgerBlockKind::ipc_mapping && block.context != nullptr) {
      contexts.insert(block.context);
    }
  }
  return contexts;
}

std::size_t DriverLedger::invalid_frees() const {
  const std::lock_guard lock(mutex_);
  return invalid_frees_;
}

std::vector<std::string> DriverLedger::invalid_free_descriptions() const {
  const std::lock_guard lock(mutex_);
  return {invalid_descriptions_.begin(), invalid_descriptions_.end()};
}

std::size_t DriverLedger::frees() const {
  const std::lock_guard lock(mutex_);
  return frees_;
}

}  // namespace emm::conformance
