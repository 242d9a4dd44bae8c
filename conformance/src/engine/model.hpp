// engine/model.hpp — the model of the EMM contract that generated sequences run against.
//
// The model is what a host knows without asking the plugin: which allocations it made (device,
// managed, pinned, mapped, pinned ranges), their sizes and flags, which references to each it
// still holds (the returned pointer, copies, own(), views with their offsets), which
// defer_cleanup guards are open, which contexts were initialized, and which allocations a
// reset() or a closed context orphaned. Commands (commands.hpp) read it to choose their
// arguments and to keep a sequence meaningful (a release names a reference that is held), and
// update it in apply(); the Session (session.hpp) keeps the real objects in the same order.
//
// Plain value type: RapidCheck copies it while it generates and shrinks sequences, so it holds
// no handles, only numbers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace emm::conformance::engine {

// The host call that made an allocation.
enum class Source : std::uint8_t { memalloc, memallocmanaged, memhostalloc, mempin };

// "memalloc", "memallocmanaged", "memhostalloc", "mempin".
const char* to_string(Source source) noexcept;
// Device memory the driver addresses (memalloc, memallocmanaged) rather than host memory.
inline bool on_device(Source source) noexcept {
  return source == Source::memalloc || source == Source::memallocmanaged;
}

// How a reference to an allocation was obtained.
enum class ReferenceKind : std::uint8_t { returned, copy, own, view };

struct ModelAllocation {
  int id = 0;  // 1, 2, ... in order of creation: the allocation's name in a reproducer
  Source source = Source::memalloc;
  int device = 0;
  std::size_t size = 0;
  bool mapped = false;  // memhostalloc / mempin
  bool portable = false;
  bool wc = false;
  bool attach_global = true;  // memallocmanaged
  int buffer = -1;            // mempin: the harness's host buffer it pins
  std::size_t offset = 0;     // mempin: where in that buffer
  // Its context was reset or closed since it was made: its memory may be gone, so nothing but
  // releasing its references is done with it any more (LIFE-8).
  bool orphaned = false;
  // free() was called on it: its memory went back, so nothing but releasing its references is
  // done with it any more (FIN-1).
  bool freed = false;
  int references = 0;       // held now
  int references_made = 0;  // so far, for the names of new ones

  // Its memory may still be used: neither orphaned nor freed.
  bool usable() const noexcept { return !orphaned && !freed; }
};

struct ModelReference {
  int allocation = 0;  // the id of what it references
  int number = 0;      // 0 for the returned reference; 1, 2, ... for further ones
  ReferenceKind kind = ReferenceKind::returned;
  std::size_t offset = 0;  // of its first byte inside the allocation
  std::size_t size = 0;
  // A view, or a copy or own() of one: free() on it does nothing (spec 2.2).
  bool through_view = false;
};

struct ModelGuard {
  int id = 0;
  int device = 0;
  // Context::defer_cleanup() (the host's composition: the plugin's guard around the context's
  // queue) rather than the plugin's defer_cleanup() alone.
  bool through_context = false;
};

struct Model {
  int devices = 1;  // devices a sequence may use
  bool can_map_host_memory = true;
  int buffers = 0;  // host buffers the harness owns for mempin
  std::size_t buffer_size = 0;
  std::size_t device_capacity = 0;  // total memory of device 0, as the driver reports it
  // Whether two live pins may share a page. Only ALLOC-7 explores that (mempin must register
  // exactly [p, p+n)); elsewhere a plugin that pins whole pages would fail for ALLOC-7's reason.
  bool pins_share_pages = false;
  std::vector<ModelAllocation> allocations;  // those with at least one reference held
  std::vector<ModelReference> references;    // held, in the order they were taken
  std::vector<ModelGuard> guards;            // open, in the order they were entered
  // The last sizes asked for, newest last: asking for a size again is how caches, size classes
  // and free lists are exercised.
  std::vector<std::size_t> recent_sizes;
  // The flag combinations memhostalloc was last asked for (bit 0 mapped, 1 portable, 2 wc):
  // a pinned cache keys its blocks by them.
  std::vector<unsigned> recent_host_flags;
  int next_allocation = 1;
  int next_guard = 1;
  // Whether the device's context was used since the sequence began (a "bare" start constructs
  // the plugin and calls nothing else; LIFE-4, LIFE-5).
  std::array<bool, 2> used{};

  const ModelAllocation* find(int id) const noexcept;
  ModelAllocation* find(int id) noexcept;
  // Adds an allocation with its returned reference; returns its id.
  int add_allocation(ModelAllocation allocation);
  // Remembers `size` among the recent sizes.
  void asked_for(std::size_t size);
  // Adds a reference to allocation `id` (which must exist); returns its number.
  int add_reference(int id, ReferenceKind kind, std::size_t offset, std::size_t size);
  // Drops reference `index`; drops its allocation with its last reference.
  void drop_reference(std::size_t index);
  // Orphans every allocation of `device` (reset or close).
  void orphan(int device);
  // Whether [offset, offset + size) of `buffer` overlaps a pinned range held now (with
  // `granule` 4096: shares a page with one).
  bool pinned_overlaps(int buffer, std::size_t offset, std::size_t size,
                       std::size_t granule = 1) const noexcept;
  std::size_t open_guards(int device) const noexcept;
};

// The variable names a reproducer uses: "m3" for the third allocation made by memalloc, "h3"
// by memhostalloc, "p3" by mempin, "u3" by memallocmanaged; "m3_view2" for its second further
// reference if that is a view ("_copy", "_own").
std::string allocation_name(const ModelAllocation& allocation);
std::string reference_name(const ModelAllocation& allocation, const ModelReference& reference);

}  // namespace emm::conformance::engine
