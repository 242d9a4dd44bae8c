// The ledger: every allocation and free this process makes through CUDA, kept as the fake
// driver keeps its own records, so that the gpu backend answers the questions checks ask
// (what is live, byte for byte; what was freed twice; which flags a host block or a managed
// allocation was made with; which device a block lives on) as exactly as the fake does.
//
// The ledger is only bookkeeping: something reports the calls to it. On a GPU that is the
// CUPTI subscriber of cupti_ledger.cpp, which sees the driver calls of every library in the
// process (the plugin, numba, CuPy, PyTorch, the kit itself; the runtime's calls reach it as
// the driver calls they make); tests feed it
// calls directly. Blocks made before the ledger started are unknown to it: frees of them are
// not counted as invalid unless the driver refused them.
//
//   DriverLedger ledger;
//   ledger.made({.base = p, .size = 4096, .kind = LedgerBlockKind::device, .call = "cuMemAlloc"});
//   ledger.freed(LedgerSpace::device, p, "cuMemFree", CUDA_SUCCESS);
//   ledger.device_bytes();   // 0
//
// Thread-safety: every member may be called from any thread at once (CUPTI calls back on the
// thread that made the CUDA call).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace emm::conformance {

enum class LedgerBlockKind {
  device,             // cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync, pool allocations
  managed,            // cuMemAllocManaged
  host_alloc,         // cuMemHostAlloc, cuMemAllocHost
  host_registration,  // cuMemHostRegister
  ipc_mapping,        // cuIpcOpenMemHandle
};

// Device addresses and host addresses are kept apart: under unified addressing a mapped host
// block's device address is its host address.
enum class LedgerSpace { device, host };

struct LedgerBlock {
  std::uint64_t base = 0;
  std::size_t size = 0;
  // cuMemHostAlloc / cuMemHostRegister flags; the managed attach flag; 0 otherwise.
  unsigned flags = 0;
  LedgerBlockKind kind = LedgerBlockKind::device;
  // The device whose memory holds it (device blocks), or the device of the context it was made
  // in (host blocks); -1 when the driver did not say.
  int device = -1;
  // The context the call ran in, and that context's device: destroying the context frees it.
  CUcontext context = nullptr;
  int context_device = -1;
  std::string_view call;  // the CUDA call that made it ("cuMemAlloc", "cuMemHostAlloc", ...)
};

class DriverLedger {
 public:
  // A call that made `block` succeeded.
  void made(const LedgerBlock& block);
  // A call that frees, unregisters or closes the block at `base` ended with `result`. A refused
  // one is an invalid free (a double free, an interior or unknown pointer, a block of a destroyed
  // context), as the fake counts them; `counts_as_free` says whether it is a free of memory
  // (cuMemFree, cuMemFreeAsync, cuMemFreeHost: driver_frees()).
  void freed(LedgerSpace space, std::uint64_t base, std::string_view call, CUresult result,
             bool counts_as_free);
  // A driver API call of this process began (driver_calls()).
  void called() noexcept { calls_.fetch_add(1, std::memory_order_relaxed); }
  // A context made with cuCtxCreate: not a primary one.
  void context_created(CUcontext context);
  // `context` was destroyed, with every block made in it.
  void context_destroyed(CUcontext context);
  // `device`'s primary context was destroyed (its last release, or a reset), with every block
  // made in it.
  void primary_context_destroyed(int device);

  // --- what the gpu backend asks ---------------------------------------------------------------
  // The sizes of the live device and managed blocks, as asked for (unrounded).
  std::size_t device_bytes() const;
  // The live device or managed block holding `pointer` (a zero-size block holds its base).
  std::optional<LedgerBlock> device_block_containing(std::uint64_t pointer) const;
  // The live host block (allocation or registration) holding `pointer`.
  std::optional<LedgerBlock> host_block_containing(std::uint64_t pointer) const;
  std::size_t count(LedgerBlockKind kind) const;
  // The contexts live device or managed blocks were made in.
  std::set<CUcontext> contexts_holding_blocks() const;
  std::size_t invalid_frees() const;
  // What the last invalid frees were, oldest first: "cuMemFree(0x7f0000200000) refused with
  // CUDA_ERROR_INVALID_VALUE (freed before by cuMemFree)".
  std::vector<std::string> invalid_free_descriptions() const;
  std::size_t frees() const;
  std::size_t calls() const noexcept { return calls_.load(std::memory_order_relaxed); }

 private:
  using Blocks = std::map<std::uint64_t, LedgerBlock>;
  Blocks& blocks(LedgerSpace space) { return space == LedgerSpace::device ? device_ : host_; }
  static std::optional<LedgerBlock> containing(const Blocks& blocks, std::uint64_t pointer);
  template <typename Doomed>
  void drop_if(Doomed doomed);

  static constexpr std::size_t kDescriptionsKept = 8;
  // Freed addresses remembered for the invalid-free message, at most this many.
  static constexpr std::size_t kFreedRemembered = 4096;

  mutable std::mutex mutex_;
  Blocks device_;
  Blocks host_;
  std::set<CUcontext> created_contexts_;
  std::map<std::uint64_t, std::string_view> recently_freed_;  // base -> the call that freed it
  std::size_t invalid_frees_ = 0;
  std::deque<std::string> invalid_descriptions_;
  std::size_t frees_ = 0;
  std::atomic<std::size_t> calls_{0};
};

}  // namespace emm::conformance
