// ALLOC — allocation (spec §4): memalloc basics, overlap, out of memory, refct at rest, host
// allocations, pinning, concurrency and alignment.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "checks/checks.hpp"
#include "emm/errors.hpp"
#include "emm/mapped_memory.hpp"

namespace emm::conformance::checks {
namespace {

std::size_t host_page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// A page-aligned host buffer whose release is observable.
struct OwnedBuffer {
  std::shared_ptr<void> owner;
  std::shared_ptr<std::atomic<bool>> released = std::make_shared<std::atomic<bool>>(false);
  std::byte* data = nullptr;

  explicit OwnedBuffer(std::size_t bytes) {
    void* raw = std::aligned_alloc(host_page_size(), bytes);
    data = static_cast<std::byte*>(raw);
    owner = std::shared_ptr<void>(raw, [flag = released](void* p) {
      std::free(p);
      flag->store(true);
    });
  }
};

// "CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED", or "no flags".
std::string host_alloc_flag_names(unsigned flags) {
  std::string names;
  auto add = [&](unsigned flag, std::string_view name) {
    if ((flags & flag) == 0) return;
    if (!names.empty()) names += " | ";
    names += name;
    flags &= ~flag;
  };
  add(CU_MEMHOSTALLOC_PORTABLE, "CU_MEMHOSTALLOC_PORTABLE");
  add(CU_MEMHOSTALLOC_DEVICEMAP, "CU_MEMHOSTALLOC_DEVICEMAP");
  add(CU_MEMHOSTALLOC_WRITECOMBINED, "CU_MEMHOSTALLOC_WRITECOMBINED");
  if (flags != 0) names += (names.empty() ? "" : " | ") + hex(flags);
  return names.empty() ? "no flags" : names;
}

// ALLOC-6/ALLOC-7: what was returned as `kind` (PinnedMemory/MappedMemory) over
// [host, host + size) is page-locked, all of it in one cuMemHostAlloc block or registered range,
// as the driver reports it. Returns that state; std::nullopt when the backend cannot ask.
std::optional<HostMemoryState> expect_page_locked(ClauseRun& run, const void* host,
                                                  std::size_t size, std::string_view what,
                                                  std::string_view kind) {
  std::optional<HostMemoryState> state;
  try {
    state = run.backend().host_memory(host);
  } catch (...) {
    run.fail(str("asking the driver whether the host memory of ", what,
                 " is page-locked failed: ", describe_current_exception()));
  }
  if (!state) return std::nullopt;  // not observable here: the backend noted it
  if (!state->page_locked) {
    run.fail(str(what, " returned ", kind, " over host memory at ", host,
                 " that is not page-locked: the driver knows no cuMemHostAlloc block or "
                 "cuMemHostRegister range holding it (pageable memory handed out as ",
                 kind, ")"));
  }
  if (!state->range) {
    run.unobservable("the extent of page-locked host ranges");
    return state;
  }
  const AddressRange& range = *state->range;
  const auto start = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(host));
  if (start < range.base || start + size > range.base + range.size) {
    run.fail(str(what, " returned ", kind, " over [", hex(start), ", ", hex(start + size),
                 "), but the page-locked range holding its first byte is only [", hex(range.base),
                 ", ", hex(range.base + range.size), "): part of the memory is not page-locked"));
  }
  return state;
}

// ALLOC-7: mempin registered exactly [p, p+n): the `margin` bytes just before p and just after
// p + n, in the same pages, can still be registered by someone else. The driver decides overlap
// on bytes (docs/fake-vs-gpu.md), so a plugin that pins whole pages makes these fail.
void expect_neighbours_pinnable(ClauseRun& run, std::byte* pointer, std::size_t size,
                                std::size_t margin, std::string_view what) {
  Driver& driver = run.driver();
  for (const bool before : {true, false}) {
    std::byte* start = before ? pointer - margin : pointer + size;
    const std::string where =
        str("the ", margin, " bytes just ", before ? "before p" : "after p + n",
            " (in the same page, not part of [p, p+n))");
    try {
      driver.mem_host_register(start, margin, 0);
    } catch (const CudaDriverError& error) {
      if (error.code() == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
        run.fail(str(what, " pinned more than [p, p+n): ", where,
                     " are already page-locked (cuMemHostRegister answered "
                     "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED); register exactly the given "
                     "range, not whole pages, so that neighbouring buffers in those pages can "
                     "be pinned too"));
      }
      run.fail(str("registering ", where, " after ", what, " failed: ", error.what()));
    } catch (...) {
      run.fail(
          str("registering ", where, " after ", what, " failed: ", describe_current_exception()));
    }
    try {
      driver.mem_host_unregister(start);
    } catch (...) {
      run.fail(str("unregistering ", where, " failed: ", describe_current_exception()));
    }
  }
}

HostAllocation pin(ClauseRun& run, Context& context, std::shared_ptr<void> owner, void* pointer,
                   std::size_t size, bool mapped, std::string_view what) {
  try {
    return context.mempin(std::move(owner), pointer, size, mapped);
  } catch (...) {
    run.fail(str(what, " threw ", describe_current_exception()));
  }
}

// ALLOC-2 at size-class boundaries: 2^k - 1, 2^k and 2^k + 1 bytes for 16 B .. 2 MiB, all live
// with their patterns written over the whole requested size; then every other one released and
// its slot re-requested with a size from the neighbouring class. A size rounded into too small
// a class shows as an overlap or as a neighbour's overwritten bytes.
void class_boundaries(ClauseRun& run, Context& context) {
  struct Item {
    std::shared_ptr<MemoryPointer> memory;
    std::size_t size;
    std::uint64_t seed;
  };
  std::vector<Item> items;
  IntervalSet live;
  std::uint64_t seed = 0xB0;
  auto add = [&](std::size_t size, std::string_view why) {
    auto memory = allocate(run, context, size, why);
    const CUdeviceptr pointer = memory->device_pointer();
    if (auto other = live.insert(pointer, size, str("memalloc(", size, ") at ", hex(pointer)))) {
      run.fail(str("memalloc(", size, ") at ", hex(pointer), " (", why, ") overlaps the live ",
                   *other, ": a size at a class boundary was given too small a block"));
    }
    write_pattern(run, pointer, size, ++seed, str("memalloc(", size, ")"));
    items.push_back({std::move(memory), size, seed});
  };
  for (std::size_t power = 16; power <= 2 * MiB; power *= 2) {
    for (const std::size_t size : {power - 1, power, power + 1}) add(size, "class boundaries");
  }
  for (std::size_t i = 0; i < items.size(); i += 2) {
    live.erase(items[i].memory->device_pointer());
    const std::size_t size = items[i].size;
    items[i].memory.reset();
    add(i % 4 == 0 ? size * 2 + 1 : std::max<std::size_t>(size / 2, 1),
        str("re-requested across classes after releasing a memalloc(", size, ")"));
  }
  for (const Item& item : items) {
    if (!item.memory) continue;
    expect_pattern(run, item.memory->device_pointer(), item.size, item.seed,
                   str("the live memalloc(", item.size,
                       ") after its neighbours were released and re-requested"));
  }
  run.record("class_boundary_allocations", items.size());
}

// ALLOC-10's allocate-only bursts: the threads wait at a barrier, then each makes its
// allocations back to back with no driver call between them (a copy would serialise the threads
// on the driver and hide a race in the plugin's own bookkeeping); only afterwards are the blocks
// checked for overlaps and released, again all threads at once. Returns a failure, or "".
std::string allocation_bursts(Context& context, int threads, int rounds, int per_thread) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::vector<std::shared_ptr<MemoryPointer>>> made(
        static_cast<std::size_t>(threads));
    std::vector<std::string> errors(static_cast<std::size_t>(threads));
    std::atomic<int> waiting{threads};
    auto burst = [&](int thread, bool allocate) {
      context.make_current();  // CUDA's current context is per thread
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      auto& mine = made[static_cast<std::size_t>(thread)];
      try {
        if (allocate) {
          for (int i = 0; i < per_thread; ++i) {
            mine.push_back(context.memalloc(16 + 16 * static_cast<std::size_t>((thread + i) % 64)));
          }
        } else {
          mine.clear();
        }
      } catch (...) {
        errors[static_cast<std::size_t>(thread)] =
            str("thread ", thread, (allocate ? " allocating" : " releasing"), " in burst ",
                round + 1, ": ", describe_current_exception());
      }
    };
    for (const bool allocate : {true, false}) {
      if (!allocate) {
        IntervalSet live;
        for (int thread = 0; thread < threads; ++thread) {
          for (const auto& memory : made[static_cast<std::size_t>(thread)]) {
            if (!memory || memory->device_pointer() == 0) {
              return str("burst ", round + 1, ": thread ", thread, " got a null pointer");
            }
            if (auto other = live.insert(memory->device_pointer(), memory->size(),
                                         str("thread ", thread, "'s memalloc(", memory->size(),
                                             ") at ", hex(memory->device_pointer())))) {
              return str("burst ", round + 1, " (", threads,
                         " threads allocating at once, no driver call between allocations): "
                         "thread ",
                         thread, "'s memalloc(", memory->size(), ") at ",
                         hex(memory->device_pointer()), " overlaps ", *other);
            }
          }
        }
        waiting = threads;
      }
      std::vector<std::thread> workers;
      for (int thread = 0; thread < threads; ++thread)
        workers.emplace_back(burst, thread, allocate);
      for (std::thread& worker : workers) worker.join();
      for (const std::string& error : errors) {
        if (!error.empty()) return error;
      }
    }
    context.make_current();
  }
  return "";
}

}  // namespace

namespace {
// Where ALLOC-1 reads a block back: all of it up to 2 MiB; its first, middle and last MiB beyond.
std::vector<std::pair<std::size_t, std::size_t>> read_back_windows(std::size_t size) {
  if (size <= 2 * MiB) return {{0, size}};
  return {{0, MiB}, {size / 2 - MiB / 2, MiB}, {size - MiB, MiB}};
}
}  // namespace

// ALLOC-1: sizes, context, range readable and writable, 16-byte alignment — for the spec's sizes
// one at a time, and for many small allocations of every size 1–64 alive together (a pool's
// small-size path is where 8-byte alignment creeps in, spec §7).
EMM_CHECK(ALLOC_1) {
  Context& context = run.host().context();
  std::uint64_t seed = 1100;
  for (const std::size_t size :
       {std::size_t{1}, std::size_t{8}, std::size_t{4096}, MiB + 3, 64 * MiB}) {
    const std::string what = str("memalloc(", size, ")");
    auto memory = allocate(run, context, size);
    const CUdeviceptr pointer = memory->device_pointer();
    if (memory->context() != &context) {
      run.fail(str(what, "->context() is ", memory->context(), ", expected the allocating context ",
                   &context));
    }
    if (pointer % 16 != 0) {
      run.fail(str(what, " returned ", hex(pointer), ", which is not aligned to 16 bytes"));
    }
    const std::optional<AddressRange> block = run.backend().driver_block(pointer);
    if (!block) {
      run.fail(str(what, " returned ", hex(pointer),
                   ", which is not inside any allocation the driver knows in the current context"));
    }
    if (pointer + size > block->base + block->size) {
      run.fail(str(what, " returned [", hex(pointer), ", ", hex(pointer + size),
                   "), which runs past the end of its driver allocation [", hex(block->base), ", ",
                   hex(block->base + block->size), ")"));
    }
    try {
      memory->memset(0x5A);
    } catch (...) {
      run.fail(str("memset over ", what, " threw ", describe_current_exception()));
    }
    // The memset reached every byte (the driver refuses a range it does not hold); the bytes
    // are read back whole up to 2 MiB, and at the first, middle and last MiB of larger blocks
    // (generating and comparing 64 MiB of pattern was a tenth of a certification).
    ++seed;
    for (const auto& [offset, length] : read_back_windows(size)) {
      expect_filled(run, pointer + offset, length, std::byte{0x5A}, what,
                    str("after memset(0x5A) (bytes ", offset, " to ", offset + length, ")"));
      expect_read_write(run, pointer + offset, length, seed + offset, what);
    }
  }

  constexpr int kRounds = 4;
  std::vector<std::shared_ptr<MemoryPointer>> small;
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t size = 1; size <= 64; ++size) {
      const std::string what = str("memalloc(", size, ") (small allocation ", small.size() + 1,
                                   ", the others still live)");
      auto memory = allocate(run, context, size, "many small allocations alive together");
      const CUdeviceptr pointer = memory->device_pointer();
      if (pointer % 16 != 0) {
        run.fail(str(what, " returned ", hex(pointer), ", which is not aligned to 16 bytes"));
      }
      write_pattern(run, pointer, size, 1200 + small.size(), what);
      small.push_back(std::move(memory));
    }
  }
  IntervalSet live;
  for (std::size_t i = 0; i < small.size(); ++i) {
    const CUdeviceptr pointer = small[i]->device_pointer();
    const std::size_t size = small[i]->size();
    if (auto other = live.insert(pointer, size, str("memalloc(", size, ") at ", hex(pointer)))) {
      run.fail(str("memalloc(", size, ") at ", hex(pointer), " overlaps the live ", *other));
    }
    expect_pattern(run, pointer, size, 1200 + i,
                   str("memalloc(", size, ") after ", small.size(), " small allocations"));
  }
  run.record("small_allocations_alive_together", small.size());
}

// ALLOC-2: live allocations never overlap.
EMM_CHECK(ALLOC_2) {
  Context& context = run.host().context();
  constexpr std::uint64_t kSeed = 0xA110C2;
  constexpr int kAllocations = 1000;
  std::mt19937_64 random(kSeed);
  IntervalSet live;
  std::vector<std::shared_ptr<MemoryPointer>> held;
  int made = 0;
  int released = 0;
  while (made < kAllocations) {
    const bool allocate_now = held.empty() || (held.size() < 256 && random() % 100 < 60);
    if (allocate_now) {
      const unsigned bucket = random() % 100;
      const std::size_t size = bucket < 70   ? 1 + random() % 4096
                               : bucket < 95 ? 4097 + random() % (256 * KiB)
                                             : 256 * KiB + random() % (2 * MiB);
      auto memory = allocate(run, context, size, str("allocation #", made + 1));
      const CUdeviceptr pointer = memory->device_pointer();
      if (auto other = live.insert(
              pointer, size,
              str("allocation #", made + 1, " [", hex(pointer), ", ", hex(pointer + size), ")"))) {
        run.fail(str("allocation #", made + 1, " memalloc(", size, ") = [", hex(pointer), ", ",
                     hex(pointer + size), ") overlaps the live ", *other, " (seed ", kSeed, ")"));
      }
      held.push_back(std::move(memory));
      ++made;
    } else {
      const std::size_t victim = random() % held.size();
      live.erase(held[victim]->device_pointer());
      std::swap(held[victim], held.back());
      held.pop_back();
      ++released;
    }
  }
  run.record("seed", static_cast<std::size_t>(kSeed));
  run.record("allocations", static_cast<std::size_t>(made));
  run.record("releases", static_cast<std::size_t>(released));
  held.clear();
  class_boundaries(run, context);
}

// ALLOC-3: out of memory is a CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY); nothing leaks.
EMM_CHECK(ALLOC_3) {
  Context& context = run.host().context();
  constexpr std::size_t kPiB = std::size_t{1} << 50;
  { auto warm = allocate(run, context, 4096, "before the out-of-memory request"); }
  flush_point(context.memory_manager());
  const std::size_t before = run.backend().device_bytes_in_use();
  // Enough attempts that a leak of even 1 MiB per failed request exceeds the GPU's
  // measurement slack.
  constexpr int kAttempts = 16;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    try {
      auto memory = context.memalloc(kPiB);
      run.fail(str("memalloc(1 PiB) returned a pointer (size ", memory ? memory->size() : 0,
                   "); expected CudaDriverError with CUDA_ERROR_OUT_OF_MEMORY"));
    } catch (const ClauseFailure&) {
      throw;
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) {
        run.fail(str("memalloc(1 PiB) threw CudaDriverError with ", error.code_name(), " (",
                     error.what(), "); expected CUDA_ERROR_OUT_OF_MEMORY"));
      }
    } catch (...) {
      run.fail("memalloc(1 PiB) threw " + describe_current_exception() +
               "; expected emm::CudaDriverError with CUDA_ERROR_OUT_OF_MEMORY (or a subclass)");
    }
  }
  expect_no_growth(run, before, str("after ", kAttempts, " failed memalloc(1 PiB) requests"),
                   "before them", ": a failed request must leak nothing");
  auto memory = allocate(run, context, MiB, "after out of memory");
  expect_read_write(run, memory->device_pointer(), MiB, 1301,
                    "memalloc(1 MiB) after out of memory");
}

// ALLOC-5: refct >= 1 at rest; a view taken and dropped does not finalize.
EMM_CHECK(ALLOC_5) {
  Context& context = run.host().context();
  for (const std::size_t size : {std::size_t{4096}, MiB}) {
    const std::string what = str("memalloc(", size, ")");
    auto memory = allocate(run, context, size);
    const CUdeviceptr pointer = memory->device_pointer();
    if (memory->refct() < 1) {
      run.fail(str(what, "->refct() is ", memory->refct(),
                   " at rest; expected >= 1 (return AutoFreePointer::own(), not a bare "
                   "AutoFreePointer, whose first dropped view frees the buffer)"));
    }
    write_pattern(run, pointer, size, 1500 + size, what);
    const std::optional<AddressRange> block = run.backend().driver_block(pointer);
    std::weak_ptr<MemoryPointer> base = memory->owner();
    for (const std::size_t start : {std::size_t{0}, std::size_t{16}}) {
      { auto view = memory->view(start); }
      const auto owner = base.lock();
      if (!owner) run.fail(str("dropping ", what, "->view(", start, ") destroyed the allocation"));
      if (owner->is_managed() && !owner->finalizer_alive()) {
        run.fail(str("dropping ", what, "->view(", start,
                     ") ran the allocation's finalizer while the pointer is still held (refct ",
                     memory->refct(), "): the bare-AutoFreePointer hazard"));
      }
      if (block && !run.backend().driver_block(pointer)) {
        run.fail(str("dropping ", what, "->view(", start,
                     ") freed the allocation in the driver while the pointer is still held"));
      }
      expect_pattern(run, pointer, size, 1500 + size,
                     str(what, " after a view was taken and dropped"));
      auto probe = allocate(run, context, size, "while the first is held");
      if (overlap(probe->device_pointer(), size, pointer, size)) {
        run.fail(str("a new ", what, " at ", hex(probe->device_pointer()),
                     " overlaps the held one at ", hex(pointer), " after a view of it was dropped",
                     " (refct ", memory->refct(),
                     "): the plugin handed out memory that is still in use"));
      }
    }
  }
}

// ALLOC-6: memhostalloc for the 8 flag combinations.
EMM_CHECK(ALLOC_6) {
  Context& context = run.host().context();
  constexpr std::size_t kSize = 8192 + 5;
  std::uint64_t seed = 1600;
  for (const bool mapped : {false, true}) {
    if (mapped && !context.can_map_host_memory()) {
      run.note("the device cannot map host memory: mapped combinations not checked");
      continue;
    }
    for (const bool portable : {false, true}) {
      for (const bool wc : {false, true}) {
        const std::string what = str("memhostalloc(", kSize, ", mapped=", mapped,
                                     ", portable=", portable, ", wc=", wc, ")");
        HostAllocation allocation;
        try {
          allocation = context.memhostalloc(kSize, mapped, portable, wc);
        } catch (...) {
          run.fail(what + " threw " + describe_current_exception());
        }
        if (allocation.empty()) run.fail(what + " returned an empty HostAllocation");
        if (allocation.is_mapped() != mapped) {
          run.fail(str(what, " returned ", allocation.is_mapped() ? "mapped" : "pinned",
                       " memory; expected ", mapped ? "MappedMemory" : "PinnedMemory"));
        }
        run.expect_eq(allocation.size(), kSize, what + " size()");
        auto* host = static_cast<std::byte*>(allocation.host_pointer());
        if (host == nullptr) run.fail(what + " has a null host pointer");
        const std::vector<std::byte> written = pattern(kSize, ++seed);
        std::memcpy(host, written.data(), kSize);
        if (std::memcmp(host, written.data(), kSize) != 0) run.fail(what + " is not writable");
        const std::optional<HostMemoryState> state =
            expect_page_locked(run, host, kSize, what, mapped ? "MappedMemory" : "PinnedMemory");
        // cuMemHostGetFlags did not report PORTABLE for an 8197-byte cuMemHostAlloc(PORTABLE)
        // block on an H100 (driver 580; with unified addressing every page-locked block is
        // portable): the flag is judged only from a record of the call (the fake's, the gpu
        // ledger's; docs/fake-vs-gpu.md).
        const bool portable_observable = state && state->flags_as_given;
        if (portable && !portable_observable) {
          run.unobservable("whether the portable flag reached cuMemHostAlloc");
        }
        const unsigned asked = (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
                               (portable && portable_observable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
                               (wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
        if (state && state->host_alloc_flags) {
          // Only what was asked for is judged: a driver with unified addressing may report
          // flags of its own (docs/fake-vs-gpu.md).
          const unsigned missing = asked & ~*state->host_alloc_flags;
          if (missing != 0) {
            run.fail(str(what, ": the cuMemHostAlloc block holding its memory was allocated with ",
                         host_alloc_flag_names(*state->host_alloc_flags),
                         " (cuMemHostGetFlags), without ", host_alloc_flag_names(missing),
                         ": the flags memhostalloc is given must reach cuMemHostAlloc"));
          }
        } else if (state && wc) {
          run.fail(str(what,
                       " returned registered host memory (cuMemHostRegister), which cannot be "
                       "write-combined: wc=true needs cuMemHostAlloc with "
                       "CU_MEMHOSTALLOC_WRITECOMBINED"));
        } else if (state && portable) {
          run.unobservable("the portable flag of registered host memory returned by memhostalloc");
        }
        if (!mapped) {
          if (!allocation.pinned_memory()) run.fail(what + " returned no PinnedMemory");
          continue;
        }
        MappedMemory* memory = allocation.mapped_memory();
        if (memory == nullptr) {
          run.fail(what + " returned a mapped pointer that is not (an owner of) MappedMemory");
        }
        if (allocation.mapped_pointer()->refct() < 1) {
          run.fail(str(what, " returned a pointer with refct ",
                       allocation.mapped_pointer()->refct(),
                       "; expected >= 1 (hand out MappedMemory::own())"));
        }
        const CUdeviceptr device = allocation.mapped_pointer()->device_pointer();
        if (device == 0) run.fail(what + " has a null device pointer");
        expect_same_bytes(run, read_device(run, device, kSize, what), written,
                          what +
                              ": the device pointer does not alias the host bytes (host write, "
                              "device read)");
        const std::vector<std::byte> back = pattern(kSize, seed + 100);
        write_device(run, device, back, what);
        if (std::memcmp(host, back.data(), kSize) != 0) {
          run.fail(what +
                   ": the device pointer does not alias the host bytes (device write, "
                   "host read)");
        }
      }
    }
  }
}

// ALLOC-7: mempin kinds, ownership, exact range, immediate unpin (also inside defer_cleanup).
// p is not page-aligned and n is not a page multiple, so that pinning whole pages shows.
EMM_CHECK(ALLOC_7) {
  Context& context = run.host().context();
  const std::size_t page = host_page_size();
  constexpr std::size_t kOffset = 40;
  constexpr std::size_t kMargin = 24;
  const std::size_t size = 2 * page + 100;
  for (const bool mapped : {false, true}) {
    if (mapped && !context.can_map_host_memory()) {
      run.note("the device cannot map host memory: mempin(mapped=true) not checked");
      continue;
    }
    OwnedBuffer buffer(4 * page);
    std::byte* pointer = buffer.data + page + kOffset;
    const std::string what =
        str("mempin(owner, p = page + ", kOffset, ", ", size, ", mapped=", mapped, ")");
    const std::string kind = mapped ? "MappedMemory" : "PinnedMemory";
    const long owner_uses = buffer.owner.use_count();
    HostAllocation allocation = pin(run, context, buffer.owner, pointer, size, mapped, what);
    if (allocation.is_mapped() != mapped) {
      run.fail(str(what, " returned ", allocation.is_mapped() ? "mapped" : "pinned",
                   " memory; expected ", mapped ? "MappedMemory" : "PinnedMemory"));
    }
    if (mapped && allocation.mapped_memory() == nullptr) {
      run.fail(what + " returned a mapped pointer that is not (an owner of) MappedMemory");
    }
    if (!mapped && !allocation.pinned_memory()) run.fail(what + " returned no PinnedMemory");
    if (allocation.host_pointer() != pointer) {
      run.fail(str(what, " covers host address ", allocation.host_pointer(),
                   ", expected p = ", static_cast<void*>(pointer)));
    }
    run.expect_eq(allocation.size(), size, what + " size()");
    if (allocation.owned().get() != buffer.owner.get()) {
      run.fail(what + " does not keep the given owner as its owner (owned() differs)");
    }
    if (buffer.owner.use_count() <= owner_uses) {
      run.fail(what + " does not hold a reference to the owner (its use_count did not grow)");
    }
    expect_page_locked(run, pointer, size, what, kind);
    expect_neighbours_pinnable(run, pointer, size, kMargin, what);
    if (mapped) {
      const CUdeviceptr device = allocation.mapped_pointer()->device_pointer();
      const std::vector<std::byte> written = pattern(size, 1700);
      std::memcpy(pointer, written.data(), size);
      expect_same_bytes(run, read_device(run, device, size, what), written,
                        what +
                            ": the device pointer does not alias [p, p+n) (host write, "
                            "device read)");
      const std::vector<std::byte> back = pattern(size, 1701);
      write_device(run, device, back, what);
      if (std::memcmp(pointer, back.data(), size) != 0) {
        run.fail(what + ": the device pointer does not alias [p, p+n) (device write, host read)");
      }
    }
    // The allocation alone keeps the buffer alive.
    std::shared_ptr<void> keep_alive_check = std::move(buffer.owner);
    keep_alive_check.reset();
    if (buffer.released->load()) {
      run.fail(what + " let the owner go while the pinned memory is alive");
    }
    allocation = HostAllocation();  // finalization unpins at once
    if (!buffer.released->load()) {
      run.fail(what + " still holds the owner after the pinned memory was released");
    }

    // Same range pinned again immediately, outside and inside defer_cleanup.
    OwnedBuffer again(4 * page);
    std::byte* p2 = again.data + page + kOffset;
    { HostAllocation first = pin(run, context, again.owner, p2, size, mapped, what); }
    {
      HostAllocation second =
          pin(run, context, again.owner, p2, size, mapped,
              what + " of a range released a moment ago (unpin must be immediate)");
    }
    CleanupGuard guard;
    try {
      guard = context.defer_cleanup();
    } catch (...) {
      run.fail("defer_cleanup() threw " + describe_current_exception());
    }
    {
      HostAllocation inside =
          pin(run, context, again.owner, p2, size, mapped, what + " inside defer_cleanup");
    }
    {
      HostAllocation inside_again =
          pin(run, context, again.owner, p2, size, mapped,
              what +
                  " inside defer_cleanup of a range released a moment ago (unpin must be "
                  "immediate even while cleanup is deferred)");
    }
    guard.release();
  }
}

// ALLOC-10: 8 threads allocate and release concurrently; nothing overlaps or is lost.
EMM_CHECK(ALLOC_10) {
  run.require_capability();
  Context& context = run.host().context();
  constexpr int kThreads = 8;
  const int allocations_per_thread = 640;  // 8 x 640 allocations + as many releases
  const std::size_t baseline = run.backend().device_bytes_in_use();

  constexpr int kBurstRounds = 24;
  constexpr int kBurstAllocations = 96;
  if (std::string failure = allocation_bursts(context, kThreads, kBurstRounds, kBurstAllocations);
      !failure.empty()) {
    run.fail(failure);
  }
  run.record("burst_rounds", static_cast<std::size_t>(kBurstRounds));

  std::mutex mutex;
  IntervalSet live;
  std::string failure;
  std::atomic<bool> failed{false};
  std::atomic<std::size_t> operations{0};
  auto report = [&](std::string what) {
    std::lock_guard lock(mutex);
    if (failure.empty()) failure = std::move(what);
    failed = true;
  };

  auto worker = [&](int thread) {
    try {
      context.make_current();  // CUDA's current context is per thread
      std::mt19937 random(1000 + thread);
      struct Item {
        std::shared_ptr<MemoryPointer> memory;
        std::size_t size;
        std::uint64_t tag;
      };
      std::vector<Item> held;
      Driver& driver = context.driver();
      auto release = [&](std::size_t index) {
        Item& item = held[index];
        std::uint64_t seen[2] = {0, 0};
        driver.memcpy_dtoh(&seen[0], item.memory->device_pointer(), 8);
        driver.memcpy_dtoh(&seen[1], item.memory->device_pointer() + item.size - 8, 8);
        if (seen[0] != item.tag || seen[1] != item.tag) {
          report(str("thread ", thread, ": a memalloc(", item.size, ") block at ",
                     hex(item.memory->device_pointer()),
                     " was overwritten by another thread before it was released (tag ",
                     hex(item.tag), ", seen ", hex(seen[0]), "/", hex(seen[1]), ")"));
        }
        {
          std::lock_guard lock(mutex);
          live.erase(item.memory->device_pointer());
        }
        held[index] = std::move(held.back());
        held.pop_back();
        operations.fetch_add(1);
      };
      for (int made = 0; made < allocations_per_thread && !failed; ++made) {
        const std::size_t size = 16 + random() % (16 * KiB);
        auto memory = context.memalloc(size);
        if (!memory || memory->size() != size || memory->device_pointer() == 0) {
          report(str("thread ", thread, ": memalloc(", size, ") returned ",
                     memory ? str("a pointer of size ", memory->size()) : std::string("null")));
          return;
        }
        const CUdeviceptr pointer = memory->device_pointer();
        std::optional<std::string> other;
        {
          std::lock_guard lock(mutex);
          other = live.insert(
              pointer, size,
              str("block [", hex(pointer), ", ", hex(pointer + size), ") of thread ", thread));
        }
        if (other) {
          report(str("thread ", thread, ": memalloc(", size, ") = [", hex(pointer), ", ",
                     hex(pointer + size), ") overlaps the live ", *other));
          return;
        }
        const std::uint64_t tag = (std::uint64_t(thread + 1) << 48) | std::uint64_t(made + 1);
        driver.memcpy_htod(pointer, &tag, 8);
        driver.memcpy_htod(pointer + size - 8, &tag, 8);
        held.push_back({std::move(memory), size, tag});
        operations.fetch_add(1);
        if (held.size() > 16 || (held.size() > 1 && random() % 2 == 0)) {
          release(random() % held.size());
        }
      }
      while (!held.empty()) release(held.size() - 1);
    } catch (...) {
      report(str("thread ", thread, ": ", describe_current_exception()));
    }
  };

  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) threads.emplace_back(worker, thread);
  for (std::thread& thread : threads) thread.join();
  context.make_current();
  if (failed) run.fail(failure);
  run.record("threads", static_cast<std::size_t>(kThreads));
  run.record("operations", operations.load());

  try {
    context.reset();
  } catch (...) {
    run.fail("reset() after the concurrent run threw " + describe_current_exception());
  }
  expect_no_growth(run, baseline, "after the concurrent run released everything and reset()",
                   "before it", ": allocations were lost");
}

// ALLOC-11: 256-byte alignment.
EMM_CHECK(ALLOC_11) {
  Context& context = run.host().context();
  std::vector<std::shared_ptr<MemoryPointer>> held;
  for (int round = 0; round < 3; ++round) {
    for (const std::size_t size :
         {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{255}, std::size_t{256},
          std::size_t{257}, std::size_t{1000}, std::size_t{4097}, std::size_t{65537}, MiB + 3}) {
      auto memory = allocate(run, context, size);
      const CUdeviceptr pointer = memory->device_pointer();
      if (pointer % 256 != 0) {
        CUdeviceptr alignment = 1;
        while (pointer % (alignment * 2) == 0) alignment *= 2;
        run.fail(str("memalloc(", size, ") returned ", hex(pointer), ", aligned to ", alignment,
                     " bytes only; cuMemAlloc guarantees 256"));
      }
      held.push_back(std::move(memory));
    }
  }
  run.record("allocations_checked", held.size());
}

}  // namespace emm::conformance::checks
