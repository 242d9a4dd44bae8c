// ALLOC-6 and ALLOC-7 as properties of sequences: pinned and mapped host memory follows the
// device rules (spec §8: live results never overlap, keep their bytes, are finalized exactly
// once after their last reference), is page-locked with exactly the flags asked for, and mempin
// registers exactly [p, p+n) and unregisters at once, also inside defer_cleanup.
#include <cstring>

#include "engine/properties/expectations.hpp"
#include "engine/properties/registry.hpp"

namespace emm::conformance::engine::properties {
namespace {

std::string flag_names(unsigned flags) {
  std::string names;
  auto add = [&](unsigned flag, const char* name) {
    if ((flags & flag) == 0) return;
    if (!names.empty()) names += " | ";
    names += name;
  };
  add(CU_MEMHOSTALLOC_PORTABLE, "CU_MEMHOSTALLOC_PORTABLE");
  add(CU_MEMHOSTALLOC_DEVICEMAP, "CU_MEMHOSTALLOC_DEVICEMAP");
  add(CU_MEMHOSTALLOC_WRITECOMBINED, "CU_MEMHOSTALLOC_WRITECOMBINED");
  return names.empty() ? "no flags" : names;
}

std::string call_of(const Allocation& a) {
  if (a.model.source == Source::mempin) {
    return str("mempin(owner, p, ", a.model.size, ", mapped=", a.model.mapped, ")");
  }
  return str("memhostalloc(", a.model.size, ", mapped=", a.model.mapped,
             ", portable=", a.model.portable, ", wc=", a.model.wc, ")");
}

// What both host clauses ask of a fresh result: the right kind and size, and a mapped device
// pointer that aliases the host bytes (write through the host, read through the driver).
void expect_kind_and_alias(Session& session, const Allocation& a) {
  const std::string call = call_of(a);
  if (a.reported_mapped != a.model.mapped) {
    session.fail(str("expected ", call, " to return ",
                     a.model.mapped ? "MappedMemory" : "PinnedMemory",
                     "; seen: ", a.reported_mapped ? "mapped memory" : "pinned memory"));
  }
  if (a.reported_size != a.model.size) {
    session.fail(
        str("expected ", call, " to have size ", a.model.size, "; seen: ", a.reported_size));
  }
  if (a.model.mapped) {
    if (a.device_pointer == 0)
      session.fail(str("expected ", call, " to have a device pointer; seen: 0"));
    const std::size_t n = std::min<std::size_t>(a.model.size, 64);
    std::vector<std::byte> seen(n);
    try {
      session.driver().memcpy_dtoh(seen.data(), a.device_pointer, n);
    } catch (...) {
      session.fail(str("expected the device pointer ", hex(a.device_pointer), " of ", a.name,
                       " to be readable through the driver; seen: ", describe_current_exception()));
    }
    if (std::memcmp(seen.data(), a.host_pointer, n) != 0) {
      session.fail(str("expected the device pointer of ", a.name,
                       " to alias its host bytes (host write, device read); seen: other bytes"));
    }
  }
}

// The driver's view of the first byte: page-locked, in a block or range covering all of it.
std::optional<HostMemoryState> expect_page_locked(Session& session, const Allocation& a) {
  std::optional<HostMemoryState> state;
  try {
    state = session.backend().host_memory(a.host_pointer);
  } catch (...) {
    session.fail(str("asking the driver about the host memory of ", a.name,
                     " failed: ", describe_current_exception()));
  }
  if (!state) return std::nullopt;  // not observable here: the backend noted it
  if (!state->page_locked) {
    session.fail(str("expected ", call_of(a), " to return page-locked memory; seen: ", a.name,
                     " at ", a.host_pointer,
                     " is memory that is not page-locked (the driver "
                     "knows no cuMemHostAlloc block or cuMemHostRegister range holding it)"));
  }
  if (state->range) {
    const auto begin = reinterpret_cast<std::uintptr_t>(a.host_pointer);
    if (begin < state->range->base ||
        begin + a.model.size > state->range->base + state->range->size) {
      session.fail(
          str("expected all of ", a.name, " [", hex(begin), ", ", hex(begin + a.model.size),
              ") to be page-locked; seen: the locked range "
              "holding its first byte is [",
              hex(state->range->base), ", ", hex(state->range->base + state->range->size), ")"));
    }
  }
  return state;
}

// ALLOC-6: memhostalloc with every flag combination, in any sequence of allocations, releases,
// guards and resets: the right kind, size n, writable, page-locked by a cuMemHostAlloc block with
// the flags asked for (write-combining only when asked: a cache must not hand a WC block to a
// plain request), mapped memory aliased, never overlapping a live result, bytes kept, finalized
// exactly once after its last reference.
class MemhostallocRules final : public Property {
 public:
  std::vector<Weighted> commands(const Plan& plan) const override {
    std::vector<Weighted> mix{{CommandKind::memhostalloc, 6}, {CommandKind::release, 4},
                              {CommandKind::reference, 1},    {CommandKind::verify, 2},
                              {CommandKind::enter_guard, 1},  {CommandKind::exit_guard, 1},
                              {CommandKind::reset, 1}};
    if (plan.capabilities.host_only_derived) mix.push_back({CommandKind::flush, 1});
    // Page-locked memory running out, where its limit is known (spec §8 (c) for pinned memory).
    if (plan.page_locked_capacity > 0) mix.push_back({CommandKind::fill_host, 2});
    return mix;
  }
  bool prepare(ClauseRun& run) const override {
    if (!run.backend().page_locked_capacity()) {
      run.unobservable("page-locked host memory running out (spec §8 (c) for pinned memory)");
    }
    return Property::prepare(run);
  }
  void out_of_memory(Session& session, const OutOfMemory& report) const override {
    if (!report.host) return;
    if (!report.other.empty()) {
      session.fail(str("expected memhostalloc(", report.request,
                       ") on exhausted page-locked memory to throw emm::CudaDriverError with "
                       "CUDA_ERROR_OUT_OF_MEMORY; seen: ",
                       report.other));
    }
    if (report.after_reset_succeeded) {
      session.fail(str("expected memhostalloc(", report.request,
                       ") not to report out of memory while the caller held no pinned memory "
                       "and the plugin's own held pinned memory would satisfy it (spec §8 (c): "
                       "pinned host memory is memory too); seen: it threw "
                       "CUDA_ERROR_OUT_OF_MEMORY, also after the host's flush point, and after "
                       "reset() released what the plugin held the same request succeeded: "
                       "free cached pinned blocks and retry before reporting out of memory"));
    }
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (a.model.source != Source::memhostalloc) return;
    expect_kind_and_alias(session, a);
    expect_no_overlap(session, a, "spec §8: pinned host memory is memory too");
    const std::optional<HostMemoryState> state = expect_page_locked(session, a);
    if (!state) return;
    // The portable flag is judged only from a record of the call: cuMemHostGetFlags does not
    // report it on a GPU with unified addressing (docs/fake-vs-gpu.md); DEVICEMAP and PORTABLE
    // may be added by such a driver.
    const bool portable_observable = state->flags_as_given;
    if (a.model.portable && !portable_observable) {
      session.run().unobservable("whether the portable flag reached cuMemHostAlloc");
    }
    const unsigned asked =
        (a.model.mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
        (a.model.portable && portable_observable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
        (a.model.wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
    if (!state->host_alloc_flags) {
      if (a.model.wc) {
        session.fail(str("expected ", call_of(a),
                         " to be a cuMemHostAlloc block with "
                         "CU_MEMHOSTALLOC_WRITECOMBINED; seen: registered host memory, which "
                         "cannot be write-combined"));
      }
      return;
    }
    const unsigned flags = *state->host_alloc_flags;
    if ((asked & ~flags) != 0) {
      session.fail(str("expected the cuMemHostAlloc block of ", a.name, " (", call_of(a),
                       ") to be allocated with ", flag_names(asked), "; seen: ", flag_names(flags),
                       " (cuMemHostGetFlags), without ", flag_names(asked & ~flags),
                       ": the flags asked for must reach the driver, also when a cached block "
                       "is reused"));
    }
    if (!a.model.wc && (flags & CU_MEMHOSTALLOC_WRITECOMBINED) != 0) {
      session.fail(str("expected ", a.name, " (", call_of(a),
                       ") not to be write-combined; seen: "
                       "its block has CU_MEMHOSTALLOC_WRITECOMBINED (reads from the host are "
                       "uncached and slow): a cached block was handed to a request with other "
                       "flags"));
    }
  }
  void released(Session& session, const Allocation& a, bool last) const override {
    if (a.model.source != Source::memhostalloc || a.orphaned) return;
    if (last) {
      expect_finalized(session, a);
    } else {
      expect_not_finalized(session, a, "other references to it are held");
    }
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the live ", a.name, " to keep its bytes; seen: ", damage));
    }
  }
};

// ALLOC-7: mempin of ranges that are unaligned, adjacent to live pins, or pinned again after an
// unpin: the right kind, the owner kept, exactly [p, p+n) page-locked (a neighbouring byte can
// still be registered), unpinned at once when its last reference goes, also inside
// defer_cleanup, so that the same range can be pinned again at once.
class MempinRules final : public Property {
 public:
  bool pins_share_pages() const override { return true; }
  std::vector<Weighted> commands(const Plan&) const override {
    return {{CommandKind::mempin, 6}, {CommandKind::release, 4},     {CommandKind::reference, 1},
            {CommandKind::verify, 1}, {CommandKind::enter_guard, 1}, {CommandKind::exit_guard, 1}};
  }
  void allocated(Session& session, const Allocation& a) const override {
    if (a.model.source != Source::mempin) return;
    expect_kind_and_alias(session, a);
    if (a.reported_host_pointer != a.host_pointer) {
      session.fail(str("expected ", a.name, "'s host pointer to be p = ", a.host_pointer,
                       "; seen: ", a.reported_host_pointer));
    }
    if (!a.owner_kept) {
      session.fail(str("expected ", call_of(a),
                       " to keep the owner it was given "
                       "(HostAllocation::owned()); seen: another or none"));
    }
    const std::optional<HostMemoryState> state = expect_page_locked(session, a);
    if (state && state->range) {
      const auto begin = reinterpret_cast<std::uintptr_t>(a.host_pointer);
      if (state->range->base != begin || state->range->size != a.model.size) {
        session.fail(str("expected exactly [p, p+n) = [", hex(begin), ", ",
                         hex(begin + a.model.size), ") of ", a.name, " to be registered; seen: [",
                         hex(state->range->base), ", ",
                         hex(state->range->base + state->range->size),
                         "): the plugin pinned more than [p, p+n) (register the range given, "
                         "not whole pages)"));
      }
    }
    expect_neighbours_pinnable(session, a);
  }
  void released(Session& session, const Allocation& a, bool last) const override {
    if (a.model.source != Source::mempin || a.orphaned) return;
    if (!last) {
      expect_not_finalized(session, a, "other references to it are held");
      return;
    }
    expect_finalized(session, a);
    std::optional<HostMemoryState> state;
    try {
      state = session.backend().host_memory(a.host_pointer);
    } catch (...) {
      return;
    }
    if (state && state->page_locked) {
      session.fail(str("expected [p, p+n) of ", a.name,
                       " to be unregistered as soon as its last reference was dropped",
                       session.guards().empty() ? "" : " (also inside defer_cleanup)",
                       ", so that it can be pinned again at once; seen: it is still page-locked"));
    }
  }
  void verified(Session& session, const Allocation& a, const std::string& damage) const override {
    if (!damage.empty()) {
      session.fail(str("expected the pinned ", a.name, " to keep its bytes; seen: ", damage));
    }
  }

 private:
  // The byte just before p and just after p + n, when no live pin holds them, can still be
  // registered: a plugin that pins whole pages makes that fail.
  static void expect_neighbours_pinnable(Session& session, const Allocation& a) {
    auto* first = static_cast<std::byte*>(a.host_pointer);
    const std::byte* buffer = session.buffer(a.model.buffer);
    const std::byte* buffer_end = buffer + session.buffer_size();
    for (std::byte* neighbour : {first - 1, first + a.model.size}) {
      if (neighbour < buffer || neighbour >= buffer_end) continue;
      bool taken = false;
      for (const auto& [id, other] : session.allocations()) {
        if (!other.released && other.model.source == Source::mempin &&
            neighbour >= static_cast<std::byte*>(other.host_pointer) &&
            neighbour < static_cast<std::byte*>(other.host_pointer) + other.model.size) {
          taken = true;
        }
      }
      if (taken) continue;
      try {
        session.driver().mem_host_register(neighbour, 1, 0);
      } catch (const CudaDriverError& error) {
        if (error.code() == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
          session.fail(str("expected only [p, p+n) of ", a.name,
                           " to be pinned; seen: the byte "
                           "just ",
                           neighbour < first ? "before p" : "after p + n",
                           " is page-locked too: the plugin pinned more than [p, p+n) (register "
                           "exactly the given range, not whole pages, so that neighbouring "
                           "buffers can be pinned)"));
        }
        continue;
      }
      try {
        session.driver().mem_host_unregister(neighbour);
      } catch (...) {
      }
    }
  }
};

}  // namespace

const Property& alloc_6() { return the<MemhostallocRules>(); }
const Property& alloc_7() { return the<MempinRules>(); }

}  // namespace emm::conformance::engine::properties
