#include <algorithm>
#include <cstring>

#include "checks/checks.hpp"
#include "emm/errors.hpp"
#include "emm/host_only_memory_manager.hpp"

namespace emm::conformance::checks {

std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  std::byte* out = bytes.data();
  // Word at a time: this also runs in Debug builds over 64 MiB buffers (ALLOC-1).
  for (std::size_t i = 0; i < size; i += sizeof state) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::memcpy(out + i, &state, std::min(sizeof state, size - i));
  }
  return bytes;
}

namespace {

// Fails when the backend counted an access outside any allocation since `before`.
void expect_valid_access(ClauseRun& run, std::optional<std::size_t> before, std::string_view verb,
                         std::string_view what, std::size_t size, CUdeviceptr pointer) {
  const std::optional<std::size_t> after = run.backend().invalid_accesses();
  if (!before || !after) {
    run.unobservable("accesses outside allocations");
    return;
  }
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

void write_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                   std::string_view what) {
  write_device(run, pointer, pattern(size, seed), what);
}

void expect_same_bytes(ClauseRun& run, const std::vector<std::byte>& seen,
                       const std::vector<std::byte>& expected, std::string_view what) {
  if (seen.size() != expected.size()) {
    run.fail(str(what, ": expected ", expected.size(), " bytes, seen ", seen.size()));
  }
  if (seen.empty() || std::memcmp(seen.data(), expected.data(), seen.size()) == 0) return;
  const auto mismatch = std::mismatch(seen.begin(), seen.end(), expected.begin());
  const auto at = static_cast<std::size_t>(mismatch.first - seen.begin());
  run.fail(str(what, ": byte ", at, " of ", seen.size(), " differs: expected ",
               hex(static_cast<unsigned>(*mismatch.second)), ", seen ",
               hex(static_cast<unsigned>(*mismatch.first))));
}

void expect_pattern(ClauseRun& run, CUdeviceptr pointer, std::size_t size, std::uint64_t seed,
                    std::string_view what) {
  expect_same_bytes(run, read_device(run, pointer, size, what), pattern(size, seed),
                    str(what, " does not hold the bytes written to it"));
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
  if (auto* host_only = dynamic_cast<HostOnlyCUDAMemoryManager*>(&manager)) {
    host_only->deallocations().clear();
  }
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
  if (!before || !after) {
    run.unobservable("double frees in the driver");
    return;
  }
  if (*after != *before) {
    run.fail(str("the ", run.backend().name(), " driver counted ", *after - *before,
                 " invalid free(s) ", what));
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

}  // namespace emm::conformance::checks
