#include <algorithm>
#include <cstring>

#include "checks/checks.hpp"
#include "core/host_only_base.hpp"
#include "emm/errors.hpp"
#include "emm/host_only_memory_manager.hpp"

namespace emm::conformance::checks {

namespace {

// pattern()'s bytes, a piece at a time: consecutive pieces of whole words read the same as one
// pattern() of their total size. Word i is a hash of (i, seed) alone, not the next step of a
// generator: no chain of dependencies from word to word, so filling runs at the speed of memory
// (ALLOC-1 fills and checks 64 MiB ranges). Two seeds never give shifted copies of each other
// within any buffer smaller than 2^60 words.
class PatternStream {
 public:
  explicit PatternStream(std::uint64_t seed)
      : key_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}

  // The next `size` bytes; every piece but the last must be a whole number of words.
  void fill(std::byte* out, std::size_t size) {
    std::size_t i = 0;
    for (; i + sizeof(std::uint64_t) <= size; i += sizeof(std::uint64_t)) {
      const std::uint64_t word = next();
      std::memcpy(out + i, &word, sizeof word);
    }
    if (i < size) {
      const std::uint64_t word = next();
      std::memcpy(out + i, &word, size - i);
    }
  }

 private:
  std::uint64_t next() {
    std::uint64_t x = (index_++ + key_) * 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    return x ^ (x >> 29);
  }

  std::uint64_t key_;
  std::uint64_t index_ = 0;
};

// Ranges larger than this move through a buffer of this size (a whole number of pattern words):
// a 64 MiB range (ALLOC-1) then costs no 64 MiB host buffers of its own, whose pages the kernel
// would fault in and zero on every call, and each piece is still in cache when it is copied or
// compared. A few driver calls more per large range, none for small ones.
constexpr std::size_t kPiece = MiB;

// "<what>: byte 12 of 4096 differs: expected 0x5a, seen 0x0".
std::string difference(std::string_view what, std::size_t at, std::size_t size, std::byte expected,
                       std::byte seen) {
  return str(what, ": byte ", at, " of ", size, " differs: expected ",
             hex(static_cast<unsigned>(expected)), ", seen ", hex(static_cast<unsigned>(seen)));
}

}  // namespace

std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  PatternStream(seed).fill(bytes.data(), size);
  return bytes;
}

namespace {

// Fails when the backend counted an access outside any allocation since `before`.
void expect_valid_access(ClauseRun& run, std::optional<std::size_t> before, std::string_view verb,
                         std::string_view what, std::size_t size, CUdeviceptr pointer) {
  const std::optional<std::size_t> after = run.backend().invalid_accesses();
  if (!before || !after) return;  // not observable here: the backend noted it
  if (*after != *before) {
    run.fail(str(verb, " ", what, " (", size, " bytes at ", hex(pointer),
                 ") touched memory that is not allocated: the ", run.backend().name(),
                 " driver counted an invalid access"));
  }
}

}  // namespace

std::vector<std::byte> read_device(ClauseRun& run, CUdeviceptr pointer, std::size_t size,
                                   std::string_view what) {
  std::vector<std::byte> bytes(size);
  const std::optional<std::size_t> before = run.backend().invalid_accesses();
  try {
    if (size > 0) run.driver().memcpy_dtoh(bytes.data(), pointer, size);
  } catch (...) {
    run.fail(str("reading ", what, " (", size, " bytes at ", hex(pointer),
                 ") failed: ", describe_current_exception()));
  }
  expect_valid_access(run, before, "reading", what, size, pointer);
  return bytes;
}

void write_device(ClauseRun& run, CUdeviceptr pointer, const std::vector<std::byte>& bytes,
                  std::string_view what) {
  const std::optional<std::size_t> before = run.backend().invalid_accesses();
  try {
    if (!bytes.empty()) run.driver().memcpy_htod(pointer, bytes.data(), bytes.size());
  } catch (...) {
    run.fail(str("writing ", what, " (", bytes.size(), " bytes at ", hex(pointer),
                 ") failed: ", describe_current_exception()));
  }
  expect_valid_access(run, before, "writing", what, bytes.size(), pointer);
}

namespace {

// Moves [pointer, pointer + size) through `piece(offset, length)` a piece at a time, as one
// access: a driver error, or an access the backend saw touch memory that is not allocated, fails
// the clause naming the whole range, as read_device() and write_device() do.
template <class Piece>
void in_pieces(ClauseRun& run, std::string_view verb, CUdeviceptr pointer, std::size_t size,
               std::string_view what, Piece piece) {
  const std::optional<std::size_t> before = run.backend().invalid_accesses();
  try {
    for (std::size_t offset = 0; offset < size; offset += kPiece) {
      piece(offset, std::min(kPiece, size - offset));
    }
  } catch (...) {
    run.fail(str(verb, " ", what, " (", size, " bytes at ", hex(pointer),
                 ") failed: ", describe_current_exception()));
  }
  expect_valid_access(run, before, verb, what, size, pointer);
}

// Reads the range and compares each piece with the bytes `expect(length)` points to (valid until
// its next call); fails naming the first byte that differs (`what` when reading fails, `differs`
// for a difference).
template <class Expect>
void expect_device_bytes(ClauseRun& run, CUdeviceptr pointer, std::size_t size,
                         std::string_view what, std::string_view differs, Expect expect) {
  std::vector<std::byte> seen(std::min(size, kPiece));
  std::optional<std::size_t> first;
  std::byte wanted{}, found{};
  in_pieces(run, "reading", pointer, size, what, [&](std::size_t offset, std::size_t length) {
    run.driver().memcpy_dtoh(seen.data(), pointer + offset, length);
    const std::byte* expected = expect(length);
    if (first || std::memcmp(seen.data(), expected, length) == 0) return;
    std::size_t index = 0;
    while (seen[index] == expected[index]) ++index;
    first = offset + index;
    wanted = expected[index];
    found = seen[index];
  });
  if (first) run.fail(difference(differs, *first, size, wanted, found));
}

}  // namespace

void write_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                   std::string_view what) {
  PatternStream stream(seed);
  std::vector<std::byte> piece(std::min(size, kPiece));
  in_pieces(run, "writing", pointer, size, what, [&](std::size_t offset, std::size_t length) {
    stream.fill(piece.data(), length);
    run.driver().memcpy_htod(pointer + offset, piece.data(), length);
  });
}

void expect_same_bytes(ClauseRun& run, const std::vector<std::byte>& seen,
                       const std::vector<std::byte>& expected, std::string_view what) {
  if (seen.size() != expected.size()) {
    run.fail(str(what, ": expected ", expected.size(), " bytes, seen ", seen.size()));
  }
  if (seen.empty() || std::memcmp(seen.data(), expected.data(), seen.size()) == 0) return;
  const auto mismatch = std::mismatch(seen.begin(), seen.end(), expected.begin());
  const auto at = static_cast<std::size_t>(mismatch.first - seen.begin());
  run.fail(difference(what, at, seen.size(), *mismatch.second, *mismatch.first));
}

void expect_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                    std::string_view what) {
  PatternStream stream(seed);
  std::vector<std::byte> piece(std::min(size, kPiece));
  expect_device_bytes(run, pointer, size, what, str(what, " does not hold the bytes written to it"),
                      [&](std::size_t length) {
                        stream.fill(piece.data(), length);
                        return piece.data();
                      });
}

void expect_filled(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::byte value,
                   std::string_view what, std::string_view when) {
  // Every piece is expected to hold the same bytes: made once.
  const std::vector<std::byte> filled(std::min(size, kPiece), value);
  expect_device_bytes(run, pointer, size, what, str(what, " ", when),
                      [&filled](std::size_t) { return filled.data(); });
}

void expect_read_write(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                       std::string_view what) {
  write_pattern(run, pointer, size, seed, what);
  expect_pattern(run, pointer, size, seed, what);
}

namespace {

std::shared_ptr<MemoryPointer> checked(ClauseRun& run, std::shared_ptr<MemoryPointer> memory,
                                       std::size_t size, std::string_view call) {
  if (!memory) run.fail(str(call, " returned a null std::shared_ptr"));
  if (memory->size() != size) {
    run.fail(str(call, " returned a pointer of size ", memory->size(), ", expected ", size));
  }
  if (memory->device_pointer() == 0) run.fail(str(call, " returned a null device pointer"));
  return memory;
}

std::string describe_call(std::size_t size, std::string_view why) {
  return why.empty() ? str("memalloc(", size, ")") : str("memalloc(", size, ") (", why, ")");
}

}  // namespace

std::shared_ptr<MemoryPointer> allocate(ClauseRun& run, Context& context, std::size_t size,
                                        std::string_view why) {
  const std::string call = describe_call(size, why);
  std::shared_ptr<MemoryPointer> memory;
  try {
    memory = context.memalloc(size);
  } catch (...) {
    run.fail(str(call, " threw ", describe_current_exception()));
  }
  return checked(run, std::move(memory), size, call);
}

std::shared_ptr<MemoryPointer> allocate(ClauseRun& run, BaseCUDAMemoryManager& manager,
                                        std::size_t size, std::string_view why) {
  const std::string call = describe_call(size, why);
  std::shared_ptr<MemoryPointer> memory;
  try {
    memory = manager.memalloc(size);
  } catch (...) {
    run.fail(str(call, " threw ", describe_current_exception()));
  }
  return checked(run, std::move(memory), size, call);
}

bool overlap(CUdeviceptr a, std::size_t a_size, CUdeviceptr b, std::size_t b_size) {
  return a < b + b_size && b < a + a_size;
}

std::optional<std::string> IntervalSet::insert(CUdeviceptr begin, std::size_t size,
                                               std::string what) {
  const CUdeviceptr end = begin + std::max<std::size_t>(size, 1);
  auto next = ranges_.lower_bound(begin);
  if (next != ranges_.end() && next->first < end) return next->second.what;
  if (next != ranges_.begin()) {
    auto previous = std::prev(next);
    if (previous->second.end > begin) return previous->second.what;
  }
  ranges_.emplace(begin, Range{end, std::move(what)});
  return std::nullopt;
}

void IntervalSet::erase(CUdeviceptr begin) { ranges_.erase(begin); }

std::size_t expect_no_growth(ClauseRun& run, std::size_t baseline, std::string_view when,
                             std::string_view than, std::string_view why, std::size_t allowance) {
  const std::size_t now = run.backend().device_bytes_in_use();
  const std::size_t growth = now > baseline ? now - baseline : 0;
  if (growth > allowance + run.backend().memory_slack()) {
    run.fail(str(when, ", ", growth, " bytes more device memory are in use than ", than, " (",
                 baseline, " -> ", now, ")", why));
  }
  return growth;
}

void flush_point(BaseCUDAMemoryManager& manager) {
  if (const std::optional<HostOnlyBase> host_only = HostOnlyBase::of(manager)) host_only->flush();
}

std::vector<ImportAnswer> import_elsewhere(ClauseRun& run, const ImportRequest& request) {
  ImportResponse response;
  try {
    response = run.backend().import_elsewhere(request);
  } catch (...) {
    run.fail(
        str("the importing process could not open the handles: ", describe_current_exception()));
  }
  if (!response.error.empty()) {
    run.fail("the importing process refused the request: " + response.error);
  }
  if (response.answers.size() != request.items.size()) {
    run.fail(str("the importing process answered for ", response.answers.size(),
                 " handles, expected ", request.items.size()));
  }
  return std::move(response.answers);
}

void expect_no_invalid_frees(ClauseRun& run, std::optional<std::size_t> before,
                             std::string_view what) {
  const std::optional<std::size_t> after = run.backend().invalid_frees();
  if (!before || !after) return;  // not observable here: the backend noted it
  if (*after != *before) {
    const std::vector<std::string> seen = run.backend().invalid_free_descriptions();
    run.fail(str("the ", run.backend().name(), " driver counted ", *after - *before,
                 " invalid free(s) ", what, seen.empty() ? "" : "; the last: " + seen.back()));
  }
}

BareContext::BareContext(ClauseRun& run) : run_(run), runtime_(run.host().make_runtime()) {
  Driver& driver = run.driver();
  handle_ = driver.primary_ctx_retain(0);
  if (driver.ctx_get_current() != nullptr) driver.ctx_set_current(nullptr);
  try {
    context_ = std::make_unique<Context>(*runtime_, 0, handle_, run.subject().factory,
                                         runtime_->dealloc_config());
  } catch (...) {
    const std::string why = describe_current_exception();
    driver.primary_ctx_release(0);
    run.fail(str("constructing the plugin for a context that is not current on this thread threw ",
                 why,
                 " (LIFE-4: a plugin must make no CUDA call in its constructor; do that "
                 "work in initialize())"));
  }
}

BareContext::~BareContext() {
  try {
    context_.reset();
    Driver& driver = run_.driver();
    if (driver.ctx_get_current() == handle_) driver.ctx_set_current(nullptr);
    driver.primary_ctx_release(0);
  } catch (...) {
  }
}

void expect_no_ignored_exceptions(ClauseRun& run, const Diagnostics::Capture& capture,
                                  std::string_view when) {
  std::vector<DiagnosticEvent> thrown;
  for (DiagnosticEvent& event : capture.events()) {
    if (event.kind == DiagnosticEvent::Kind::ignored_exception) thrown.push_back(std::move(event));
  }
  if (thrown.empty()) return;
  // Where the backend cannot count invalid frees (gpu), a driver that refuses a free is how a
  // double free shows: name it, so the diagnosis is the same on every backend.
  const std::string& first = thrown.front().message;
  const bool refused_free = first.find("CUDA_ERROR_INVALID_VALUE") != std::string::npos &&
                            first.find("cuMemFree") != std::string::npos;  // or cuMemFreeHost
  run.fail(str(thrown.size(), " exception(s) thrown by finalizers or destructors ", when,
               " (the host caught and reported them; finalizers must not throw); first, in ",
               thrown.front().where, ": ", first,
               refused_free ? " (the driver refused the free: the memory was freed already, so a "
                              "finalizer freed its memory twice, or freed memory it did not own)"
                            : ""));
}

bool alive(const std::weak_ptr<MemoryPointer>& base) {
  const auto owner = base.lock();
  return owner && (!owner->is_managed() || owner->finalizer_alive());
}

bool finalized(const std::weak_ptr<MemoryPointer>& base) {
  const auto owner = base.lock();
  return !owner || (owner->is_managed() && !owner->finalizer_alive());
}

bool exact_driver_allocation(const std::optional<AddressRange>& block, CUdeviceptr pointer,
                             std::size_t size) {
  return block && block->base == pointer && block->size == size;
}

std::vector<std::shared_ptr<MemoryPointer>> six_references(
    const std::shared_ptr<MemoryPointer>& memory) {
  return {memory,          memory,          memory->own(),
          memory->view(0), memory->view(1), memory->view(16, 4096)->view(8)};
}

std::string reference_names(const std::array<const char*, 6>& labels,
                            const std::vector<std::size_t>& indices) {
  std::string text;
  for (std::size_t i : indices) {
    if (!text.empty()) text += ", ";
    text += labels[i];
  }
  return text;
}

}  // namespace emm::conformance::checks
