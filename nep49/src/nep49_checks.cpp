// NEP 49 handler clauses (catalogue target nep49): the struct, the four functions called
// directly (no NumPy needed), and the scenarios that need real NumPy (numpy_scenario()).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "emm/conformance/nep49_registry.hpp"

namespace emm::conformance::nep49_checks {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();
// More than any machine can give (the address space is 2^47 or 2^57 bytes), yet no overflow in
// a handler that adds a header to it.
constexpr std::size_t kImpossible = std::size_t{1} << 62;

unsigned char pattern_byte(std::size_t index, unsigned seed) {
  return static_cast<unsigned char>((index * 131u + seed * 29u + 7u) & 0xffu);
}

// The pattern repeats every 256 bytes, and pattern s is pattern 0 shifted by c with
// 131 c = 29 s (mod 256): one tile of pattern 0 is copied and compared a chunk at a time (64 MiB
// byte by byte costs a Debug build a third of a second).
constexpr std::size_t kTile = 64 * 1024;

const std::vector<unsigned char>& pattern_tile() {
  static const std::vector<unsigned char> tile = [] {
    std::vector<unsigned char> bytes(kTile + 256);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern_byte(i, 0);
    return bytes;
  }();
  return tile;
}

// Where pattern `seed` starts in the tile.
std::size_t tile_offset(unsigned seed) {
  static const unsigned inverse = [] {  // of 131, modulo 256
    unsigned x = 1;
    while ((131u * x) % 256u != 1u) x += 2;
    return x;
  }();
  return (29u * seed * inverse) % 256u;
}

void fill(void* p, std::size_t n, unsigned seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  const unsigned char* tile = pattern_tile().data() + tile_offset(seed);
  for (std::size_t at = 0; at < n; at += kTile)
    std::memcpy(bytes + at, tile, std::min(kTile, n - at));
}

// The first index in [0, n) that does not hold the pattern, or n.
std::size_t first_mismatch(const void* p, std::size_t n, unsigned seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  const unsigned char* tile = pattern_tile().data() + tile_offset(seed);
  for (std::size_t at = 0; at < n; at += kTile) {
    const std::size_t chunk = std::min(kTile, n - at);
    if (std::memcmp(bytes + at, tile, chunk) == 0) continue;
    for (std::size_t i = 0; i < chunk; ++i) {
      if (bytes[at + i] != tile[i]) return at + i;
    }
  }
  return n;
}

// The first index in [0, n) that is not zero, or n.
std::size_t first_nonzero(const void* p, std::size_t n) {
  static const std::vector<unsigned char> zeros(kTile);
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t at = 0; at < n; at += kTile) {
    const std::size_t chunk = std::min(kTile, n - at);
    if (std::memcmp(bytes + at, zeros.data(), chunk) == 0) continue;
    for (std::size_t i = 0; i < chunk; ++i) {
      if (bytes[at + i] != 0) return at + i;
    }
  }
  return n;
}

bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t) == 0;
}

struct Block {
  void* p;
  std::size_t n;
};

// Two live blocks that share bytes, as a message; "" when none do.
std::string overlap(std::vector<Block> blocks) {
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) {
    return reinterpret_cast<std::uintptr_t>(a.p) < reinterpret_cast<std::uintptr_t>(b.p);
  });
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    const auto end = reinterpret_cast<std::uintptr_t>(blocks[i - 1].p) + blocks[i - 1].n;
    if (end > reinterpret_cast<std::uintptr_t>(blocks[i].p)) {
      return str("the live blocks ", blocks[i - 1].p, " (", blocks[i - 1].n, " bytes) and ",
                 blocks[i].p, " (", blocks[i].n, " bytes) overlap");
    }
  }
  return "";
}

// Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    std::uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
      code = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      code = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      code = c & 0x07u;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0u) != 0x80u) return false;
      code = (code << 6) | (d & 0x3Fu);
    }
    if ((extra == 2 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
        (extra == 3 && (code < 0x10000 || code > 0x10FFFF))) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

void* must_malloc(Nep49Run& run, std::size_t n) {
  void* p = run.malloc(n);
  if (p == nullptr) run.fail(str("malloc(", n, ") returned NULL with memory to spare"));
  return p;
}

}  // namespace

EMM_NEP49_CHECK(NEP49_1) {
  const char* name = run.handler().name;
  const void* end = std::memchr(name, '\0', sizeof run.handler().name);
  if (end == nullptr) {
    run.fail(
        "the name has no NUL within its 127 bytes: get_handler_name() would read past it "
        "into version and the function pointers; end it with '\\0' by byte 126");
  }
  const std::string_view text(name, static_cast<const char*>(end) - name);
  if (text.empty()) run.fail("the name is empty: give the handler a name get_handler_name() shows");
  if (!valid_utf8(text)) {
    run.fail(
        "the name is not valid UTF-8: get_handler_name() decodes it with "
        "PyUnicode_FromString and would raise UnicodeDecodeError");
  }
  run.record("name", std::string(text));
}

EMM_NEP49_CHECK(NEP49_2) {
  const unsigned version = run.handler().version;
  if (version != 1) {
    run.fail(
        str("expected version 1 (the only PyDataMem_Handler layout NumPy knows), seen ", version));
  }
}

EMM_NEP49_CHECK(NEP49_3) {
  const emm::nep49::Allocator& a = run.handler().allocator;
  std::string missing;
  if (a.malloc == nullptr) missing += " malloc";
  if (a.calloc == nullptr) missing += " calloc";
  if (a.realloc == nullptr) missing += " realloc";
  if (a.free == nullptr) missing += " free";
  if (!missing.empty()) {
    run.fail("expected all four functions set; NULL:" + missing +
             " (NumPy calls them without checking, so the first such call crashes)");
  }
}

EMM_NEP49_CHECK(NEP49_4) { run.numpy_scenario(); }

EMM_NEP49_CHECK(NEP49_5) {
  std::vector<Block> blocks;
  for (const std::size_t n : {std::size_t{1}, std::size_t{8}, 4 * KiB, MiB + 3, 64 * MiB}) {
    void* p = must_malloc(run, n);
    blocks.push_back({p, n});
    fill(p, n, static_cast<unsigned>(blocks.size()));
  }
  // Verified after all were written: a block that aliases another shows here.
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::size_t bad = first_mismatch(blocks[i].p, blocks[i].n, static_cast<unsigned>(i + 1));
    if (bad != blocks[i].n) {
      run.fail(str("malloc(", blocks[i].n, ") = ", blocks[i].p, ": byte ", bad,
                   " no longer holds what was written after the other blocks were written "
                   "(blocks shared or too short)"));
    }
  }
  if (const std::string shared = overlap(blocks); !shared.empty()) run.fail(shared);
  // Evidence for handlers that allocate through EMM (examples/nep49_pinned): the driver's
  // page-locked blocks while these five are live.
  if (const std::optional<std::size_t> pinned = run.backend().host_allocation_count()) {
    run.record("driver page-locked blocks while 5 blocks are live", std::to_string(*pinned));
  }
  for (const Block& b : blocks) run.free(b.p, b.n);
}

EMM_NEP49_CHECK(NEP49_6) {
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{24}, std::size_t{1000}, 4 * KiB, MiB + 3, 64 * MiB}) {
    // A dirty block of the same size first, so that a handler which reuses blocks without
    // clearing them is seen.
    void* dirty = must_malloc(run, n);
    std::memset(dirty, 0xAB, n);
    run.free(dirty, n);
    void* p = run.calloc(n, 1);
    if (p == nullptr) run.fail(str("calloc(", n, ", 1) returned NULL with memory to spare"));
    if (const std::size_t i = first_nonzero(p, n); i != n) {
      run.fail(str("calloc(", n, ", 1) = ", p, ": byte ", i, " is ",
                   static_cast<unsigned>(static_cast<const unsigned char*>(p)[i]),
                   ", expected 0 (NumPy relies on it for np.zeros and object arrays)"));
    }
    run.free(p, n);
  }
}

EMM_NEP49_CHECK(NEP49_7) {
  const std::pair<std::size_t, std::size_t> cases[] = {
      {kSizeMax / 2 + 1, 2},
      {kSizeMax, kSizeMax},
      {(std::size_t{1} << 32) + 1, std::size_t{1} << 32}};
  for (const auto& [nelem, elsize] : cases) {
    void* p = run.calloc(nelem, elsize);
    if (p != nullptr) {
      run.fail(str("calloc(", nelem, ", ", elsize, ") returned ", p,
                   ", expected NULL: the product overflows size_t, so the block is shorter than "
                   "asked (check nelem > SIZE_MAX / elsize first)"));
    }
  }
}

EMM_NEP49_CHECK(NEP49_8) {
  std::size_t size = 64;
  void* p = must_malloc(run, size);
  fill(p, size, 3);
  for (const std::size_t next : {MiB + 3, std::size_t{100}, 8 * MiB, std::size_t{1}}) {
    void* q = run.realloc(p, next);
    if (q == nullptr)
      run.fail(str("realloc(", p, ", ", next, ") returned NULL with memory to spare"));
    const std::size_t kept = std::min(size, next);
    if (const std::size_t bad = first_mismatch(q, kept, 3); bad != kept) {
      run.fail(str("realloc from ", size, " to ", next, " bytes: byte ", bad,
                   " changed; expected the first ", kept, " bytes kept"));
    }
    fill(q, next, 3);
    p = q;
    size = next;
  }
  run.free(p, size);
}

EMM_NEP49_CHECK(NEP49_9) {
  const std::size_t n = 4 * KiB;
  void* p = must_malloc(run, n);
  fill(p, n, 9);
  void* q = run.realloc(p, kImpossible);
  if (q != nullptr) {
    run.fail(str("realloc(", p, ", 2^62) returned ", q,
                 ", expected NULL: no machine has 2^62 bytes (is the size truncated?)"));
  }
  if (const std::size_t bad = first_mismatch(p, n, 9); bad != n) {
    run.fail(str("after a failed realloc the old block ", p, " changed at byte ", bad,
                 ": NULL from realloc means the old block is still valid and untouched "
                 "(NumPy keeps using it), so it must not be freed or moved"));
  }
  run.free(p, n);
}

EMM_NEP49_CHECK(NEP49_10) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{800}})
    run.free(nullptr, n);
  void* p = must_malloc(run, 16);
  run.free(p, 16);
}

EMM_NEP49_CHECK(NEP49_11) {
  // The sizes NumPy passes on its known mismatch paths: 1 for a block of 8 (empty text
  // fromfile, resize(0)) or 80 (empty fromiter with a length hint), after malloc and realloc.
  void* a = must_malloc(run, 8);
  run.free(a, 1);
  void* b = must_malloc(run, 80);
  run.free(b, 1);
  void* c = must_malloc(run, 64);
  void* d = run.realloc(c, 8);
  if (d == nullptr) run.fail("realloc to 8 bytes returned NULL");
  run.free(d, 1);
  // Nothing may be corrupted afterwards.
  std::vector<Block> blocks;
  for (unsigned i = 0; i < 64; ++i) {
    const std::size_t n = std::size_t{1} + (i * 37u) % 300u;
    blocks.push_back({must_malloc(run, n), n});
    fill(blocks.back().p, n, i);
  }
  for (unsigned i = 0; i < blocks.size(); ++i) {
    if (first_mismatch(blocks[i].p, blocks[i].n, i) != blocks[i].n) {
      run.fail(str("after frees with the sizes NumPy passes (1 for blocks of 8 and 80), block ",
                   blocks[i].p, " of ", blocks[i].n,
                   " bytes was overwritten by another: the free size is a best guess (NEP 49) and "
                   "must not decide how much is released"));
    }
  }
  if (const std::string shared = overlap(blocks); !shared.empty()) {
    run.fail("after frees with the sizes NumPy passes: " + shared);
  }
  for (const Block& block : blocks) run.free(block.p, block.n);
}

EMM_NEP49_CHECK(NEP49_12) {
  std::vector<Block> blocks;
  auto expect_aligned = [&](void* p, const std::string& what) {
    if (p == nullptr) run.fail(what + " returned NULL with memory to spare");
    if (!aligned(p)) {
      run.fail(str(what, " = ", p, ": expected alignment to ", alignof(std::max_align_t),
                   " bytes (alignof(max_align_t)), NumPy's aligned dtypes assume it"));
    }
  };
  for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{8}, std::size_t{24},
                              std::size_t{100}, 4 * KiB + 1, MiB + 3}) {
    void* p = run.malloc(n);
    expect_aligned(p, str("malloc(", n, ")"));
    void* q = run.calloc(n, 1);
    expect_aligned(q, str("calloc(", n, ", 1)"));
    void* r = run.realloc(q, n * 3 + 5);
    expect_aligned(r, str("realloc(", q, ", ", n * 3 + 5, ")"));
    blocks.push_back({p, n});
    blocks.push_back({r, n * 3 + 5});
  }
  for (const Block& block : blocks) run.free(block.p, block.n);
}

EMM_NEP49_CHECK(NEP49_13) {
  constexpr unsigned kReallocThreads = 7;
  constexpr unsigned kRounds = 300;
  std::mutex gil;  // stands in for the GIL around malloc, calloc and free
  std::mutex problem_lock;
  std::string problem;
  auto report = [&](std::string what) {
    std::lock_guard lock(problem_lock);
    if (problem.empty()) problem = std::move(what);
  };
  std::vector<Block> owned(kReallocThreads);
  for (unsigned t = 0; t < kReallocThreads; ++t) {
    owned[t] = {must_malloc(run, 64), 64};
    fill(owned[t].p, 64, t);
  }
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kReallocThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      try {
        Block& b = owned[t];
        for (unsigned round = 0; round < kRounds; ++round) {
          const std::size_t next = 16 + ((round * 977u + t * 131u) % 9000u);
          void* q = run.realloc(b.p, next);
          if (q == nullptr) {
            report(str("realloc(", b.p, ", ", next, ") on a thread without the GIL returned NULL"));
            return;
          }
          const std::size_t kept = std::min(b.n, next);
          if (first_mismatch(q, kept, t + round) != kept) {
            report(str("realloc on a thread without the GIL lost the block's bytes (", b.n, " -> ",
                       next, " bytes): another thread's calls corrupted it"));
            b.p = q;
            b.n = next;
            return;
          }
          b.p = q;
          b.n = next;
          fill(q, next, t + round + 1);
        }
      } catch (const std::exception& error) {
        report(error.what());
      }
    });
  }
  threads.emplace_back([&] {
    while (!go.load()) std::this_thread::yield();
    try {
      for (unsigned round = 0; round < kRounds * 4; ++round) {
        const std::size_t n = 1 + (round * 53u) % 3000u;
        std::lock_guard held(gil);
        void* p = round % 2 == 0 ? run.malloc(n) : run.calloc(n, 1);
        if (p == nullptr) {
          report(str("allocating ", n, " bytes while other threads realloc returned NULL"));
          return;
        }
        fill(p, n, round);
        if (first_mismatch(p, n, round) != n) report("a block changed while it was being written");
        run.free(p, n);
      }
    } catch (const std::exception& error) {
      report(error.what());
    }
  });
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  if (!problem.empty()) run.fail(problem);
  if (const std::string shared = overlap(owned); !shared.empty()) {
    run.fail("after concurrent realloc: " + shared);
  }
  for (const Block& b : owned) run.free(b.p, b.n);
}

EMM_NEP49_CHECK(NEP49_14) {
  // Each call goes through the wrappers, which fail the clause when an exception escapes.
  for (const std::size_t n : {kSizeMax, kSizeMax / 2, kImpossible}) {
    if (void* p = run.malloc(n); p != nullptr) {
      run.fail(str("malloc(", n, ") returned ", p, ", expected NULL (no machine has it)"));
    }
  }
  if (void* p = run.calloc(kSizeMax, 2); p != nullptr) {
    run.fail(str("calloc(SIZE_MAX, 2) returned ", p, ", expected NULL"));
  }
  void* p = must_malloc(run, 32);
  if (void* q = run.realloc(p, kSizeMax); q != nullptr) {
    run.fail(str("realloc(p, SIZE_MAX) returned ", q, ", expected NULL"));
  }
  run.free(p, 32);
}

EMM_NEP49_CHECK(NEP49_15) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_16) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_17) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_18) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_19) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_20) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_21) { run.numpy_scenario(); }
EMM_NEP49_CHECK(NEP49_22) { run.numpy_scenario(); }

}  // namespace emm::conformance::nep49_checks
