#include "nep49/src/engine/contention.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace emm::conformance::nep49_engine {
namespace {

constexpr int kBlocksPerThread = 4;
// A published block is one 64-bit word: its address (below 2^47, user space on x86-64 and
// AArch64) and its size (below 2^17), so that a reader never sees half of an update.
constexpr unsigned kSizeBits = 17;
constexpr std::uint64_t kAddressLimit = std::uint64_t{1} << 47;
constexpr int kSustainFactor = 4;  // a thread stops after this many times `rounds` regardless
// ... or after this long, whatever it made: a handler that takes a driver call and one lock per
// block (examples/nep49_pinned) would otherwise take seconds a command.
constexpr std::chrono::milliseconds kLongest{250};

std::uint64_t pack(const void* p, std::size_t size) {
  const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
  if (address >= kAddressLimit || size >= (std::size_t{1} << kSizeBits)) return 0;
  return (address << kSizeBits) | size;
}

// --- preemption anywhere ----------------------------------------------------------------------
// A race in a handler needs a thread to stop between two of its instructions while another runs
// the same code. On a machine with few cores, busy with other work, threads rarely run at the
// same moment and the scheduler seldom stops one inside a handler's few instructions, so a
// missing lock would be met by luck. Each contention thread therefore gets a timer of its own
// whose signal makes it yield wherever it is, inside the handler too, every 100 to 300
// microseconds: the others then run the code it stopped in.

int yield_signal() { return SIGRTMIN + 5; }

extern "C" void yield_where_it_is(int) {
  const int saved = errno;
  ::sched_yield();
  errno = saved;
}

void install_yield_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = &yield_where_it_is;
    action.sa_flags = SA_RESTART;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(yield_signal(), &action, nullptr);
  });
}

// A Python thread state for the thread's whole life (when CPython is loaded), as a Python thread
// calling NumPy has: each call under the GIL then only takes the GIL.
class PythonThread {
 public:
  explicit PythonThread(Nep49Subject& subject) : subject_(subject) { subject_.attach_thread(); }
  ~PythonThread() { subject_.detach_thread(); }
  PythonThread(const PythonThread&) = delete;
  PythonThread& operator=(const PythonThread&) = delete;

 private:
  Nep49Subject& subject_;
};

class Preemption {
 public:
  explicit Preemption(long period_us) {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = yield_signal();
    event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
    if (::timer_create(CLOCK_MONOTONIC, &event, &timer_) != 0) return;
    armed_ = true;
    itimerspec every{};
    every.it_interval.tv_nsec = period_us * 1000;
    every.it_value.tv_nsec = period_us * 1000;
    ::timer_settime(timer_, 0, &every, nullptr);
  }
  ~Preemption() {
    if (armed_) ::timer_delete(timer_);
  }
  Preemption(const Preemption&) = delete;
  Preemption& operator=(const Preemption&) = delete;

 private:
  timer_t timer_{};
  bool armed_ = false;
};

struct Random {
  std::uint32_t state;
  std::uint32_t next() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  }
  std::uint32_t below(std::uint32_t n) { return next() % n; }
};

std::size_t contention_size(ContentionSizes sizes, Random& random) {
  switch (sizes) {
    case ContentionSizes::classes:
      return 17 + random.below(48);
    case ContentionSizes::small:
      return 24 + random.below(489);
    case ContentionSizes::mixed:
      break;
  }
  const std::uint32_t r = random.below(50);
  if (r < 35) return 24 + random.below(233);
  if (r < 48) return 257 + random.below(3840);
  return 4097 + random.below(61440);
}

struct Held {
  void* p = nullptr;
  std::size_t size = 0;
  unsigned token = 0;
};

std::string strip_clause(std::string text) {
  if (text.starts_with("[")) {
    if (const std::size_t end = text.find("] "); end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

class Workload {
 public:
  Workload(Session& session, const ContentionPlan& plan)
      : run_(session.run()),
        handler_(session.handler(plan.handler)),
        plan_(plan),
        slots_(static_cast<std::size_t>(plan.threads) * kBlocksPerThread + 1),
        waiting_(plan.threads) {
    for (const Block& block : session.blocks()) {
      if (block.pointer != nullptr) outside_.push_back(&block);
    }
    progress_ = session.trace().on_progress;
  }

  ContentionReport run() {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(plan_.threads));
    for (int t = 0; t < plan_.threads; ++t) threads.emplace_back([this, t] { body(t); });
    for (std::thread& thread : threads) thread.join();
    if (failure_.empty() && exchange_) {
      const Held last = *exchange_;
      if (const std::size_t bad = first_difference_direct(last.p, last.size, last.token);
          bad != last.size) {
        report(str("the block [", last.p, ", +", last.size,
                   ") passed between threads changed at byte ", bad, " while no thread held it"));
      } else {
        slots_.back().store(0);
        call_free(last);
      }
    }
    ContentionReport report;
    report.threads = plan_.threads;
    report.realloc_threads = realloc_threads(plan_.threads);
    report.rounds = plan_.rounds;
    report.calls = calls_.load();
    report.failure = failure_;
    return report;
  }

 private:
  // --- the handler's calls, as NumPy makes them ------------------------------------------------
  void* call_allocate(std::size_t size, bool zeroed) {
    std::lock_guard gil(gil_);
    calls_.fetch_add(1, std::memory_order_relaxed);
    return zeroed ? run_.calloc(handler_, size, 1) : run_.malloc(handler_, size);
  }
  void* call_realloc(void* p, std::size_t size, bool with_gil) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (!with_gil) return run_.realloc(handler_, p, size);
    std::lock_guard gil(gil_);
    void* result = nullptr;
    run_.subject().with_gil([&] { result = run_.realloc(handler_, p, size); });
    return result;
  }
  void call_free(const Held& block) {
    std::lock_guard gil(gil_);
    calls_.fetch_add(1, std::memory_order_relaxed);
    run_.free(handler_, block.p, block.size);
  }

  // --- checks ----------------------------------------------------------------------------------
  void report(std::string what) {
    std::lock_guard lock(failure_lock_);
    if (failure_.empty()) failure_ = std::move(what);
    stop_.store(true);
  }

  // Another live block sharing bytes with [p, p + size): a thread's, the one being passed
  // between threads, or one the sequence holds; "" when none.
  std::string clash(const void* p, std::size_t size) const {
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t end = begin + size;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const std::uint64_t word = slots_[i].load(std::memory_order_acquire);
      if (word == 0) continue;
      const auto other = static_cast<std::uintptr_t>(word >> kSizeBits);
      const std::size_t other_size = word & ((std::uint64_t{1} << kSizeBits) - 1);
      if (other < end && begin < other + other_size) {
        const std::string whose = i + 1 == slots_.size()
                                      ? std::string("the block being passed between threads")
                                      : str("thread ", i / kBlocksPerThread, "'s live block");
        return str(whose, " [", reinterpret_cast<void*>(other), ", +", other_size, ")");
      }
    }
    for (const Block* block : outside_) {
      const auto other = reinterpret_cast<std::uintptr_t>(block->pointer);
      if (other < end && begin < other + block->size) {
        return str("the sequence's live ", describe(*block));
      }
    }
    return "";
  }

  bool intact(int t, const Held& block, const char* before) {
    const std::size_t bad = first_difference_direct(block.p, block.size, block.token);
    if (bad == block.size) return true;
    report(str("thread ", t, "'s block [", block.p, ", +", block.size, ") changed at byte ", bad,
               " while the thread held it, found before ", before,
               ": another thread was given the same memory, or the handler wrote into a live "
               "block; expected every live block to keep its bytes"));
    return false;
  }

  // --- one thread --------------------------------------------------------------------------------
  void publish(int t, std::size_t k, const Held& block) {
    slots_[static_cast<std::size_t>(t) * kBlocksPerThread + k].store(pack(block.p, block.size),
                                                                     std::memory_order_release);
  }
  void unpublish(int t, std::size_t k) {
    slots_[static_cast<std::size_t>(t) * kBlocksPerThread + k].store(0, std::memory_order_release);
  }
  // Removes mine[k], keeping the slots in step with the vector.
  void remove(int t, std::vector<Held>& mine, std::size_t k) {
    mine[k] = mine.back();
    mine.pop_back();
    if (k < mine.size()) publish(t, k, mine[k]);
    unpublish(t, mine.size());
  }

  bool allocate(int t, std::vector<Held>& mine, Random& random) {
    const std::size_t size = contention_size(plan_.sizes, random);
    const bool zeroed = random.below(4) == 0;
    void* p = call_allocate(size, zeroed);
    if (p == nullptr) {
      report(str("thread ", t, "'s ", zeroed ? "calloc(" : "malloc(", size, zeroed ? ", 1)" : ")",
                 " returned NULL while other threads were inside the handler; expected a block "
                 "(memory to spare)"));
      return false;
    }
    if (std::string other = clash(p, size); !other.empty()) {
      report(str("thread ", t, "'s ", zeroed ? "calloc(" : "malloc(", size, zeroed ? ", 1)" : ")",
                 " = [", p, ", +", size, ") overlaps ", other,
                 ", live at the same time: two threads were given the same memory"));
      return false;
    }
    const Held block{p, size, next_token_.fetch_add(1)};
    fill_direct(p, size, block.token);
    mine.push_back(block);
    publish(t, mine.size() - 1, block);
    return true;
  }

  bool reallocate(int t, std::vector<Held>& mine, Random& random, bool with_gil) {
    const std::size_t k = random.below(static_cast<std::uint32_t>(mine.size()));
    Held& block = mine[k];
    if (!intact(t, block, "a realloc")) return false;
    const std::size_t size = contention_size(plan_.sizes, random);
    unpublish(t, k);
    void* q = call_realloc(block.p, size, with_gil);
    const char* how = with_gil ? "holding the GIL" : "without the GIL";
    if (q == nullptr) {
      report(str("thread ", t, "'s realloc(", block.p, ", ", size, ") ", how,
                 " returned NULL while other threads were inside the handler; expected a block "
                 "(memory to spare)"));
      return false;
    }
    if (std::string other = clash(q, size); !other.empty()) {
      report(str("thread ", t, "'s realloc(", block.p, ", ", size, ") ", how, " = [", q, ", +",
                 size, ") overlaps ", other,
                 ", live at the same time: two threads were given the same memory"));
      return false;
    }
    const std::size_t kept = std::min(block.size, size);
    if (const std::size_t bad = first_difference_direct(q, kept, block.token); bad != kept) {
      report(str("thread ", t, "'s realloc from ", block.size, " to ", size, " bytes ", how,
                 " changed byte ", bad, "; expected the first ", kept,
                 " bytes kept while other threads were inside the handler"));
      return false;
    }
    block.p = q;
    block.size = size;
    fill_direct(q, size, block.token);
    publish(t, k, block);
    return true;
  }

  bool release(int t, std::vector<Held>& mine, Random& random) {
    const std::size_t k = random.below(static_cast<std::uint32_t>(mine.size()));
    const Held block = mine[k];
    if (!intact(t, block, "its free")) return false;
    remove(t, mine, k);
    call_free(block);
    return true;
  }

  // Gives one of this thread's blocks to the exchange and takes what another thread left there.
  bool exchange(int t, std::vector<Held>& mine, Random& random) {
    return exchange_block(t, mine, random.below(static_cast<std::uint32_t>(mine.size())));
  }
  bool exchange_block(int t, std::vector<Held>& mine, std::size_t k) {
    const Held given = mine[k];
    if (!intact(t, given, "passing it to another thread")) return false;
    std::optional<Held> taken;
    {
      std::lock_guard lock(exchange_lock_);
      taken = exchange_;
      exchange_ = given;
      unpublish(t, k);
      slots_.back().store(pack(given.p, given.size), std::memory_order_release);
    }
    if (!taken) {
      remove(t, mine, k);
      return true;
    }
    mine[k] = *taken;
    if (const std::size_t bad = first_difference_direct(taken->p, taken->size, taken->token);
        bad != taken->size) {
      report(str("thread ", t, " took the block [", taken->p, ", +", taken->size,
                 ") another thread passed it, and byte ", bad,
                 " had changed on the way: the handler gave the memory of a live block to "
                 "someone else"));
      return false;
    }
    publish(t, k, mine[k]);
    return true;
  }

  // Readers realloc without the GIL four times in ten; the others resize under it once in ten.
  // Two in ten pass a block to another thread (an array dropped or resized elsewhere).
  bool operation(int t, std::vector<Held>& mine, Random& random) {
    const bool reader = t < realloc_threads(plan_.threads);
    // Handing off: every new block goes to another thread at once (a producer's arrays resized
    // and freed by consumers).
    auto made = [&] {
      if (!allocate(t, mine, random)) return false;
      return !plan_.handoff || exchange_block(t, mine, mine.size() - 1);
    };
    if (mine.empty()) return made();
    const std::uint32_t r = random.below(10);
    if (r < (reader ? 4u : 1u)) return reallocate(t, mine, random, !reader);
    if (r < (reader ? 6u : 5u) && mine.size() < kBlocksPerThread) return made();
    if (r >= (reader ? 6u : 5u) && r < (reader ? 8u : 7u)) return exchange(t, mine, random);
    return release(t, mine, random);
  }

  void body(int t) {
    Random random{plan_.seed ^ (static_cast<std::uint32_t>(t) + 1u) * 0x9E3779B9u};
    if (random.state == 0) random.state = 1;
    std::vector<Held> mine;
    mine.reserve(kBlocksPerThread);
    const PythonThread python(run_.subject());
    if (waiting_.fetch_sub(1) == 1) {
      deadline_ = std::chrono::steady_clock::now() + kLongest;
      started_.store(true);
    }
    while (!started_.load()) std::this_thread::yield();
    const Preemption preemption(100 + static_cast<long>((plan_.seed + 7919u * t) % 201u));
    int done = 0;
    bool counted = false;
    try {
      while (!stop_.load(std::memory_order_relaxed)) {
        if (!counted && done >= plan_.rounds) {
          counted = true;
          finished_.fetch_add(1);
        }
        if (counted &&
            (finished_.load() == plan_.threads || done >= kSustainFactor * plan_.rounds)) {
          break;
        }
        // A slow handler (a driver call per block, one lock) is given a quarter of a second.
        if (done % 16 == 0 && std::chrono::steady_clock::now() > deadline_) break;
        if (!operation(t, mine, random)) return;
        if (++done % 64 == 0 && progress_) progress_();
      }
      if (stop_.load()) return;  // another thread failed: leave the handler alone
      while (!mine.empty()) {
        if (!intact(t, mine.back(), "its free")) return;
        const Held block = mine.back();
        unpublish(t, mine.size() - 1);
        mine.pop_back();
        call_free(block);
        if (mine.size() % 16 == 0 && progress_) progress_();  // the last frees are progress too
      }
    } catch (const std::exception& error) {
      report(str("thread ", t, ": ", strip_clause(error.what())));
    }
  }

  Nep49Run& run_;
  const nep49::Handler& handler_;
  const ContentionPlan plan_;
  std::mutex gil_;  // stands in for the GIL (CPython's is taken too when CPython is loaded)
  std::vector<std::atomic<std::uint64_t>> slots_;  // kBlocksPerThread per thread, then the exchange
  std::vector<const Block*> outside_;              // the sequence's live blocks
  std::function<void()> progress_;                 // thread-safe (Trace::on_progress)
  std::mutex exchange_lock_;
  std::optional<Held> exchange_;  // guarded by exchange_lock_
  std::atomic<int> waiting_;
  std::atomic<bool> started_{false};
  std::chrono::steady_clock::time_point deadline_;  // written before started_ is set
  std::atomic<int> finished_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> calls_{0};
  std::atomic<unsigned> next_token_{1u << 16};
  std::mutex failure_lock_;
  std::string failure_;  // guarded by failure_lock_ (read after the threads are joined)
};

}  // namespace

int realloc_threads(int threads) noexcept { return threads - std::max(1, threads / 4); }

ContentionReport contend(Session& session, const ContentionPlan& plan) {
  install_yield_handler();
  Workload workload(session, plan);
  return workload.run();
}

const char* contention_cpp_helper() noexcept {
  return R"(// The certifier's contention workload: threads [0, readers) realloc without the GIL
// (readers = threads - max(1, threads / 4)), the others resize under it (a mutex here); all
// malloc, calloc and free under it, from one barrier; every thread
// holds up to 4 blocks, passes some to other threads and checks their bytes before each call.
// sizes: 0 = 17..64 bytes, 1 = 24..512, 2 = mostly small, some pages, a few up to 64 KiB.
// handoff: every new block is passed to another thread at once.
[[maybe_unused]] std::string contend(emm::nep49::Allocator* h, int threads, int rounds,
                                     std::uint32_t seed, int sizes, bool handoff) {
  std::mutex gil, lock;
  std::string failure;
  std::optional<std::tuple<void*, std::size_t, unsigned>> passed;
  std::atomic<int> waiting{threads}, finished{0};
  std::atomic<unsigned> tokens{1u << 16};
  auto fail = [&](std::string what) { std::lock_guard g(lock); if (failure.empty()) failure = what; };
  auto work = [&](int t) {
    std::uint32_t x = seed ^ (t + 1u) * 0x9E3779B9u;
    if (x == 0) x = 1;
    auto next = [&] { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; };
    auto size_of = [&]() -> std::size_t {
      if (sizes == 0) return 17 + next() % 48;
      if (sizes == 1) return 24 + next() % 489;
      std::uint32_t r = next() % 50;
      return r < 35 ? 24 + next() % 233 : r < 48 ? 257 + next() % 3840 : 4097 + next() % 61440;
    };
    const bool reader = t < threads - std::max(1, threads / 4);
    std::vector<std::tuple<void*, std::size_t, unsigned>> mine;
    waiting--;
    while (waiting > 0) std::this_thread::yield();
    bool counted = false;
    auto pass = [&](std::size_t k) {
      std::lock_guard g(lock);
      auto taken = passed;
      passed = mine[k];
      if (taken) mine[k] = *taken; else { mine[k] = mine.back(); mine.pop_back(); }
    };
    for (int done = 0;; ++done) {
      { std::lock_guard g(lock); if (!failure.empty()) return; }
      if (!counted && done >= rounds) { counted = true; finished++; }
      if (counted && (finished == threads || done >= 4 * rounds)) break;
      std::uint32_t r = mine.empty() ? 0 : next() % 10;
      if (mine.empty() || (r >= (reader ? 4u : 1u) && r < (reader ? 6u : 5u) && mine.size() < 4)) {
        std::size_t n = size_of();
        bool zeroed = next() % 4 == 0;
        void* p;
        { std::lock_guard g(gil); p = zeroed ? h->calloc(h->ctx, n, 1) : h->malloc(h->ctx, n); }
        if (p == nullptr) return fail("malloc/calloc returned NULL");
        unsigned token = tokens++;
        fill(p, 0, n, token);
        mine.emplace_back(p, n, token);
        if (handoff) pass(mine.size() - 1);
        continue;
      }
      std::size_t k = next() % mine.size();
      auto [p, n, token] = mine[k];
      if (first_difference(p, 0, n, token) != n) return fail("a live block changed");
      if (r < (reader ? 4u : 1u)) {
        std::size_t m = size_of();
        void* q;
        if (reader) q = h->realloc(h->ctx, p, m);
        else { std::lock_guard g(gil); q = h->realloc(h->ctx, p, m); }
        if (q == nullptr) return fail("realloc returned NULL");
        if (first_difference(q, 0, std::min(n, m), token) != std::min(n, m)) return fail("realloc lost bytes");
        fill(q, 0, m, token);
        mine[k] = {q, m, token};
      } else if (r >= (reader ? 6u : 5u) && r < (reader ? 8u : 7u)) {
        pass(k);
      } else {
        mine[k] = mine.back();
        mine.pop_back();
        std::lock_guard g(gil);
        h->free(h->ctx, p, n);
      }
    }
    for (auto [p, n, token] : mine) { std::lock_guard g(gil); h->free(h->ctx, p, n); }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& thread : pool) thread.join();
  if (passed && failure.empty()) h->free(h->ctx, std::get<0>(*passed), std::get<1>(*passed));
  return failure;
}
)";
}

const char* contention_python_helper() noexcept {
  return R"(def contend(h, threads, rounds, seed, sizes, handoff):
    """The certifier's contention workload (realloc threads call through ctypes.CFUNCTYPE, which
    releases the GIL; the others hold it): returns the first failure, or ''."""
    import threading
    state = {"failure": "", "passed": None, "finished": 0, "token": 1 << 16}
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def work(t):
        x = [(seed ^ ((t + 1) * 0x9E3779B9)) & 0xFFFFFFFF or 1]

        def rng():
            v = x[0]
            v ^= (v << 13) & 0xFFFFFFFF
            v ^= v >> 17
            v ^= (v << 5) & 0xFFFFFFFF
            x[0] = v
            return v

        def size_of():
            if sizes == 0:
                return 17 + rng() % 48
            if sizes == 1:
                return 24 + rng() % 489
            r = rng() % 50
            return 24 + rng() % 233 if r < 35 else 257 + rng() % 3840 if r < 48 else 4097 + rng() % 61440

        reader = t < threads - max(1, threads // 4)
        mine = []

        def pass_block(k):
            with lock:
                taken, state["passed"] = state["passed"], mine[k]
            if taken:
                mine[k] = taken
            else:
                mine[k] = mine[-1]
                mine.pop()

        barrier.wait()
        counted, done = False, 0
        while not state["failure"]:
            if not counted and done >= rounds:
                counted = True
                with lock:
                    state["finished"] += 1
            if counted and (state["finished"] == threads or done >= 4 * rounds):
                break
            done += 1
            r = rng() % 10 if mine else 0
            if not mine or ((4 if reader else 1) <= r < (6 if reader else 5) and len(mine) < 4):
                n = size_of()
                p = h.calloc(h.ctx, n, 1) if rng() % 4 == 0 else h.malloc(h.ctx, n)
                if not p:
                    state["failure"] = "malloc/calloc returned NULL"
                    return
                with lock:
                    token = state["token"]
                    state["token"] += 1
                fill(p, 0, n, token)
                mine.append((p, n, token))
                if handoff:
                    pass_block(len(mine) - 1)
                continue
            k = rng() % len(mine)
            p, n, token = mine[k]
            if first_difference(p, 0, n, token) != n:
                state["failure"] = "a live block changed"
                return
            if r < (4 if reader else 1):
                m = size_of()
                q = h.realloc(h.ctx, p, m)
                if not q:
                    state["failure"] = "realloc returned NULL"
                    return
                if first_difference(q, 0, min(n, m), token) != min(n, m):
                    state["failure"] = "realloc lost bytes"
                    return
                fill(q, 0, m, token)
                mine[k] = (q, m, token)
            elif (6 if reader else 5) <= r < (8 if reader else 7):
                pass_block(k)
            else:
                mine[k] = mine[-1]
                mine.pop()
                h.free(h.ctx, p, n)
        for p, n, token in mine:
            h.free(h.ctx, p, n)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    if state["passed"] and not state["failure"]:
        h.free(h.ctx, state["passed"][0], state["passed"][1])
    return state["failure"]
)";
}

int to_int(ContentionSizes sizes) noexcept { return static_cast<int>(sizes); }

const char* to_string(ContentionSizes sizes) noexcept {
  switch (sizes) {
    case ContentionSizes::classes:
      return "17 to 64 bytes";
    case ContentionSizes::small:
      return "24 to 512 bytes";
    case ContentionSizes::mixed:
      return "mostly small, some pages, a few up to 64 KiB";
  }
  return "?";
}

}  // namespace emm::conformance::nep49_engine
