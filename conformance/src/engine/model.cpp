#include "engine/model.hpp"

#include <algorithm>

namespace emm::conformance::engine {

const char* to_string(Source source) noexcept {
  switch (source) {
    case Source::memalloc:
      return "memalloc";
    case Source::memallocmanaged:
      return "memallocmanaged";
    case Source::memhostalloc:
      return "memhostalloc";
    case Source::mempin:
      return "mempin";
  }
  return "?";
}

const ModelAllocation* Model::find(int id) const noexcept {
  for (const ModelAllocation& allocation : allocations) {
    if (allocation.id == id) return &allocation;
  }
  return nullptr;
}

ModelAllocation* Model::find(int id) noexcept {
  for (ModelAllocation& allocation : allocations) {
    if (allocation.id == id) return &allocation;
  }
  return nullptr;
}

int Model::add_allocation(ModelAllocation allocation) {
  allocation.id = next_allocation++;
  allocation.references = 1;
  allocation.references_made = 0;
  allocation.orphaned = false;
  references.push_back({allocation.id, 0, ReferenceKind::returned, 0, allocation.size});
  if (allocation.source != Source::mempin) asked_for(allocation.size);
  if (allocation.source == Source::memhostalloc) {
    const unsigned flags =
        (allocation.mapped ? 1u : 0u) | (allocation.portable ? 2u : 0u) | (allocation.wc ? 4u : 0u);
    recent_host_flags.erase(std::remove(recent_host_flags.begin(), recent_host_flags.end(), flags),
                            recent_host_flags.end());
    recent_host_flags.push_back(flags);
  }
  allocations.push_back(allocation);
  return allocation.id;
}

void Model::asked_for(std::size_t size) {
  constexpr std::size_t kRemembered = 6;
  recent_sizes.erase(std::remove(recent_sizes.begin(), recent_sizes.end(), size),
                     recent_sizes.end());
  recent_sizes.push_back(size);
  if (recent_sizes.size() > kRemembered) recent_sizes.erase(recent_sizes.begin());
}

int Model::add_reference(int id, ReferenceKind kind, std::size_t offset, std::size_t size) {
  ModelAllocation* allocation = find(id);
  const int number = ++allocation->references_made;
  ++allocation->references;
  references.push_back({id, number, kind, offset, size});
  return number;
}

void Model::drop_reference(std::size_t index) {
  const int id = references[index].allocation;
  references.erase(references.begin() + static_cast<long>(index));
  ModelAllocation* allocation = find(id);
  if (--allocation->references == 0) {
    allocations.erase(allocations.begin() + (allocation - allocations.data()));
  }
}

void Model::orphan(int device) {
  for (ModelAllocation& allocation : allocations) {
    if (allocation.device == device) allocation.orphaned = true;
  }
}

bool Model::pinned_overlaps(int buffer, std::size_t offset, std::size_t size,
                            std::size_t granule) const noexcept {
  const std::size_t begin = offset / granule * granule;
  const std::size_t end = (offset + size + granule - 1) / granule * granule;
  return std::any_of(allocations.begin(), allocations.end(), [&](const ModelAllocation& a) {
    const std::size_t a_begin = a.offset / granule * granule;
    const std::size_t a_end = (a.offset + a.size + granule - 1) / granule * granule;
    return a.source == Source::mempin && a.buffer == buffer && begin < a_end && a_begin < end;
  });
}

std::size_t Model::open_guards(int device) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(guards.begin(), guards.end(),
                    [&](const ModelGuard& guard) { return guard.device == device; }));
}

std::string allocation_name(const ModelAllocation& allocation) {
  char letter = 'm';
  switch (allocation.source) {
    case Source::memalloc:
      letter = 'm';
      break;
    case Source::memallocmanaged:
      letter = 'u';
      break;
    case Source::memhostalloc:
      letter = 'h';
      break;
    case Source::mempin:
      letter = 'p';
      break;
  }
  // Appended, never prepended: GCC 12's -Wrestrict misjudges `"x" + std::string` at -O3.
  std::string name(1, letter);
  name += std::to_string(allocation.id);
  return name;
}

std::string reference_name(const ModelAllocation& allocation, const ModelReference& reference) {
  std::string name = allocation_name(allocation);
  switch (reference.kind) {
    case ReferenceKind::returned:
      return name;
    case ReferenceKind::copy:
      name += "_copy";
      break;
    case ReferenceKind::own:
      name += "_own";
      break;
    case ReferenceKind::view:
      name += "_view";
      break;
  }
  name += std::to_string(reference.number);
  return name;
}

}  // namespace emm::conformance::engine
